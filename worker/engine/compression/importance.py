"""Importance of the output channels of one layer: which channels structured pruning should keep.

Methods (higher score = more important):

* "l1", "l2": norm of the channel's weights (every weight of the channel group, all gates of a
  recurrent unit) — the criterion `ChannelPrune` uses.
* "reconstruction": the output distortion when the channel alone is zeroed (weights and bias): KL(P‖Q)
  mean in nats of the model's primary output for classifiers, else its MSE. Exact, one run per channel.
* "taylor" (torch models only): the second-order Taylor estimate of that same KL, without running each
  variant. The first-order term of KL(P‖Q) around the golden model vanishes (KL is minimal, 0, at Q = P,
  so its gradient there is 0: |a·∂KL/∂a| would be 0 for every channel). The expansion starts at the
  quadratic term, whose Hessian at Q = P is the Fisher information F = E_{y∼P}[∇log q_y ∇log q_yᵀ].
  Zeroing channel c moves its activation by δ = −a_c, so (keeping the channel's own diagonal block)

      ΔKL_c ≈ ½ · mean_x Σ_y P(y|x) · (Σ_positions a_c · ∂log q_y/∂a_c)²

  — squared first-order Taylor terms of the log-likelihood, weighted by the golden distribution (the
  "Fisher pruning" criterion of Theis et al., 2018, with the golden model's own P as the target, so no
  labels are needed). The sum over y is exact for up to `max_exact_classes` classes (one backward pass
  per class and batch), and a seeded Monte-Carlo estimate with `samples` draws y ∼ P beyond that.
  Activations are the layer's float outputs whose channel axis has the layer's channel count (for an
  LSTM: the sequence output, h_n and c_n); the batch axis is the first other axis of batch size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch.utils import _pytree

from worker.engine.compression import ops
from worker.engine.compression.divergence import Golden, golden_outputs, measure
from worker.engine.compression.layers import LayerSpec, group_members, zero_group_channels
from worker.engine.compression.model import CompressibleModel, Feeds, batches, first_sample
from worker.engine.errors import EngineError

ImportanceMethod = Literal["l1", "l2", "taylor", "reconstruction"]
METHODS = ("l1", "l2", "taylor", "reconstruction")


@dataclass(frozen=True)
class ChannelImportance:
    layer: str
    method: str
    unit: str
    scores: list[float]
    details: list[dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)

    def order(self) -> list[int]:
        """Channel indices, most important first (ties: lower index first)."""
        return sorted(range(len(self.scores)), key=lambda j: (-self.scores[j], j))

    def to_dict(self) -> dict[str, Any]:
        channels = []
        for rank, j in enumerate(self.order()):
            entry: dict[str, Any] = {"channel": j, "rank": rank, "score": _finite(self.scores[j])}
            if self.details is not None:
                entry |= self.details[j]
            channels.append(entry)
        return {
            "layer": self.layer,
            "method": self.method,
            "unit": self.unit,
            "n_channels": len(self.scores),
            "channels": channels,
            "notes": list(self.notes),
        }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def channel_importance(
    model: CompressibleModel,
    layer: str,
    method: ImportanceMethod,
    calibration_feeds: Feeds | None = None,
    *,
    batch_size: int = 64,
    max_exact_classes: int = 64,
    samples: int = 16,
    seed: int = 0,
) -> ChannelImportance:
    """Score every output channel of `layer` (see the module docstring for the methods)."""
    if method not in METHODS:
        raise EngineError(f"method must be one of {list(METHODS)}, got {method!r}")
    if method in ("taylor", "reconstruction"):
        if calibration_feeds is None:
            raise EngineError(f"{method} importance needs calibration data")
        model.prepare(first_sample(calibration_feeds))
    spec = model.layer(layer)
    group = spec.primary_channels()
    if method in ("l1", "l2"):
        values = {key: model.read(key) for key in group.weights}
        scores = ops.channel_scores(group_members(spec, group, values), method)
        return ChannelImportance(
            layer, method, f"{method} norm of the channel's weights", [float(s) for s in scores]
        )
    assert calibration_feeds is not None
    golden = golden_outputs(model, calibration_feeds, batch_size)
    if method == "reconstruction":
        return _reconstruction(model, spec, calibration_feeds, golden)
    return _taylor(model, spec, calibration_feeds, golden, max_exact_classes, samples, seed)


def _reconstruction(
    model: CompressibleModel, spec: LayerSpec, feeds: Feeds, golden: Golden
) -> ChannelImportance:
    group = spec.primary_channels()
    keys = list(group.weights) + list(group.biases)
    scores, details = [], []
    for channel in range(spec.n_channels(group)):
        values = {key: model.read(key) for key in keys}
        zero_group_channels(spec, group, values, [channel])
        with model.session(values, {}) as runner:
            div = measure(runner, feeds, golden)
        score = div.kl_mean if golden.classification else div.mse
        scores.append(math.inf if score is None else float(score))
        details.append({"kl_mean": div.kl_mean, "sqnr_db": div.sqnr_db, "top1_agreement": div.top1_agreement})
    unit = (
        "KL(P‖Q) mean, nats, with the channel zeroed"
        if golden.classification
        else "MSE with the channel zeroed"
    )
    return ChannelImportance(spec.name, "reconstruction", unit, scores, details)


def _taylor(
    model: CompressibleModel,
    spec: LayerSpec,
    feeds: Feeds,
    golden: Golden,
    max_exact_classes: int,
    samples: int,
    seed: int,
) -> ChannelImportance:
    from worker.engine.compression.torch_backend import TorchCompressible

    if not isinstance(model, TorchCompressible) or not model.hooks_supported:
        raise EngineError(
            "taylor importance needs gradients: it works on torch modules and torch.export programs, "
            "not on ONNX or TorchScript models; use 'reconstruction' for those"
        )
    if not golden.classification:
        raise EngineError("taylor importance estimates a KL divergence and needs a classification output")
    n_channels = spec.n_channels()
    axis = spec.output_channel_axis
    output_index = [s.name for s in model.outputs].index(golden.output)
    captured: list[torch.Tensor] = []

    def hook(_m: Any, _a: Any, output: Any) -> Any:
        flat, tree = _pytree.tree_flatten(output)
        fresh = []
        for value in flat:
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                value = value.detach().requires_grad_(True)
                captured.append(value)
            fresh.append(value)
        return _pytree.tree_unflatten(fresh, tree)

    handle = model.submodule(spec.name).register_forward_hook(hook)
    generator = torch.Generator().manual_seed(seed)
    total = torch.zeros(n_channels, dtype=torch.float64)
    count = 0
    notes: list[str] = []
    try:
        for batch in batches(feeds, golden.batch_size):
            captured.clear()
            with torch.enable_grad():
                result = model.module(*model.tensors(batch))
                logits = _pytree.tree_leaves(result)[output_index]
                n = logits.shape[0]
                log_q = torch.log_softmax(logits.reshape(n, -1).to(torch.float64), dim=-1)
                p = log_q.detach().exp()
                found = [
                    (a, _batch_axis(a, n, axis))
                    for a in captured
                    if a.dim() > 0 and a.shape[axis] % n_channels == 0
                ]
                leaves = [(a, b) for a, b in found if b is not None]
                if not leaves:
                    raise EngineError(
                        f"no output of layer {spec.name!r} has {n_channels} channels on axis {axis}"
                    )
                classes = log_q.shape[1]
                if classes <= max_exact_classes:
                    targets = [(torch.full((n,), y, dtype=torch.long), p[:, y]) for y in range(classes)]
                else:
                    draws = torch.multinomial(p, samples, replacement=True, generator=generator)
                    targets = [
                        (draws[:, s], torch.full((n,), 1.0 / samples, dtype=torch.float64))
                        for s in range(samples)
                    ]
                for y, weight in targets:
                    objective = log_q.gather(1, y[:, None]).sum()
                    grads = torch.autograd.grad(
                        objective, [a for a, _ in leaves], retain_graph=True, allow_unused=True
                    )
                    s = torch.zeros(n, n_channels, dtype=torch.float64)
                    for (a, b), g in zip(leaves, grads, strict=True):
                        if g is not None:
                            product = _forward_channels((a * g).detach(), axis, n_channels)
                            s += _per_sample_channel_sum(product.to(torch.float64), b, axis)
                    total += (weight[:, None] * s * s).sum(dim=0)
            count += n
    finally:
        handle.remove()
    if log_q.shape[1] > max_exact_classes:
        notes.append(f"Σ over classes estimated with {samples} draws y ∼ P per sample (seed {seed})")
    scores = [float(v) for v in 0.5 * total / max(count, 1)]
    unit = "estimated KL(P‖Q) increase (nats) when the channel is zeroed, Fisher / 2nd-order Taylor"
    return ChannelImportance(spec.name, "taylor", unit, scores, None, notes)


def _forward_channels(a: torch.Tensor, axis: int, n_channels: int) -> torch.Tensor:
    """The first `n_channels` along the channel axis: a bidirectional RNN's output holds the forward
    direction's units first (the reverse direction's are a different channel group)."""
    return a if a.shape[axis] == n_channels else a.narrow(axis % a.dim(), 0, n_channels)


def _batch_axis(a: torch.Tensor, n: int, channel_axis: int) -> int | None:
    channel = channel_axis % a.dim()
    return next((d for d in range(a.dim()) if d != channel and a.shape[d] == n), None)


def _per_sample_channel_sum(x: torch.Tensor, batch_axis: int, channel_axis: int) -> torch.Tensor:
    channel = channel_axis % x.dim()
    moved = torch.movedim(x, (batch_axis, channel), (0, 1))
    return moved.reshape(moved.shape[0], moved.shape[1], -1).sum(dim=2)
