"""Adversarial slices (seed 003): FGSM and PGD crafted against the golden model, when it is PyTorch
(.pt2 / TorchScript), then both models run on the same adversarial inputs.

Untargeted, L∞: the loss is the cross-entropy of the golden model's primary output against the golden
model's own prediction on the clean input (so no labels are needed, and the attack measures how easily
the golden decision moves; the compressed model is only evaluated). The loss is summed over the batch,
so each sample's gradient is its own (models in eval mode) and the batch size does not scale it.

ε is a share of the float input's value range (ArrayStats.high − low), so "0.03" means the same for
[0, 1] pixels and normalised ones; every adversarial input is clipped to [low, high].
- FGSM: x + ε · sign(∇x loss), clipped.
- PGD: PGD_STEPS steps of size 2.5 ε / PGD_STEPS (Madry et al.'s rule) from the clean input (no random
  start: no draws, so reruns are identical), each followed by projection onto the ε-ball and clipping.

Every float input is perturbed (usually the one image); integer inputs (ids, masks) pass unchanged.
An ONNX golden model has no gradients here. The user may pair it with a PyTorch **twin** (the same
network as .pt2 / TorchScript): the attacks are crafted against the twin, then the ONNX golden and the
compressed model run on those inputs. `twin_mismatch` first checks the twin reproduces the golden model
on the first samples (same top-1, primary outputs within TWIN_TOLERANCE of their range), else the
slices are skipped with the difference: gradients of another network would not attack this one.
Without a twin the slices are skipped with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from worker.engine.fidelity.binding import bind_inputs
from worker.engine.loaders.feeds import check_feeds
from worker.engine.loaders.torch_runner import TorchRunner
from worker.engine.metrics.distributions import looks_like_probabilities
from worker.engine.types import Runner

PGD_STEPS = 10
PGD_STEP_SCALE = 2.5
TWIN_SAMPLES = 16
TWIN_TOLERANCE = 1e-3
"""A twin's primary output may differ from the golden one by this share of the golden output's range
(float32 kernels of two runtimes differ by ~1e-6 of it; a retrained or other-epoch copy by far more)."""


def attack_skip_reason(golden: Runner, primary_kind: str, has_float: bool) -> str | None:
    """Why FGSM/PGD cannot run on this pair (None when they can). golden: the model the attacks take
    gradients from (the golden model, or its PyTorch twin)."""
    if not isinstance(golden, TorchRunner):
        return (
            "needs a PyTorch golden model (.pt2 / TorchScript) to take input gradients; the golden model "
            "is ONNX: pair a PyTorch twin of it (robustness.twin_model_id) to run these slices"
        )
    if primary_kind != "classification":
        return "needs a classification output (the attack raises the golden model's cross-entropy)"
    if not has_float:
        return "the dataset has no float input to perturb"
    return None


def _log_probs(output: Any, probabilities: bool) -> Any:
    import torch

    scores = output.reshape(output.shape[0], -1).to(torch.float64)
    if probabilities:
        return torch.log(scores.clamp_min(1e-12))
    return torch.log_softmax(scores, dim=1)


class GoldenAttack:
    """FGSM / PGD on one batch against a TorchRunner's primary output (by index in runner.outputs).
    bounds: the value range of each float dataset array (by dataset name) to perturb."""

    def __init__(self, runner: TorchRunner, output_index: int, bounds: Mapping[str, tuple[float, float]]):
        self.runner = runner
        self.output_index = output_index
        self.bounds = dict(bounds)

    def _forward(self, tensors: list[Any]) -> Any:
        _, values = self.runner._flatten(self.runner.module(*tensors))  # the runner's own output order
        return values[self.output_index]

    def _tensors(self, feeds: Mapping[str, np.ndarray]) -> tuple[list[str], list[Any]]:
        """The model's inputs as tensors, and the dataset name of each (bind_inputs' rule: by name, or
        the only array for a one-input model)."""
        import torch

        bound = bind_inputs(feeds, self.runner.inputs)
        arrays = check_feeds(bound, self.runner.inputs, cast=self.runner._dtypes_known)
        only = [k for k in feeds if k in bound] or list(feeds)
        keys = [spec.name if spec.name in feeds else only[0] for spec in self.runner.inputs]
        return keys, [torch.from_numpy(np.array(a, copy=True)) for a in arrays]

    def gradient(self, names: list[str], tensors: list[Any], target: Any, probabilities: bool) -> list[Any]:
        """d loss / d input for every perturbed (float, bounded) input, in `names` order (None elsewhere)."""
        import torch

        leaves = [t.detach().requires_grad_(n in self.bounds) for n, t in zip(names, tensors, strict=True)]
        with torch.enable_grad():
            logp = _log_probs(self._forward(leaves), probabilities)
            loss = torch.nn.functional.nll_loss(logp, target, reduction="sum")
            wanted = [t for t in leaves if t.requires_grad]
            grads = iter(torch.autograd.grad(loss, wanted))
        return [next(grads) if t.requires_grad else None for t in leaves]

    def craft(self, feeds: Mapping[str, np.ndarray], attack: str, share: float) -> dict[str, np.ndarray]:
        """The batch `feeds` made adversarial by `attack` ("fgsm" or "pgd") at ε = share · data range."""
        import torch

        names, clean = self._tensors(feeds)
        with torch.no_grad():
            golden_out = self._forward(clean)
        probabilities = looks_like_probabilities(golden_out.detach().reshape(len(golden_out), -1).numpy())
        target = golden_out.reshape(len(golden_out), -1).argmax(1)
        eps = {n: share * (hi - lo) for n, (lo, hi) in self.bounds.items()}
        x = [t.clone() for t in clean]
        steps, size = (1, 1.0) if attack == "fgsm" else (PGD_STEPS, PGD_STEP_SCALE / PGD_STEPS)
        for _ in range(steps):
            grads = self.gradient(names, x, target, probabilities)
            for i, (name, grad) in enumerate(zip(names, grads, strict=True)):
                if grad is None:
                    continue
                lo, hi = self.bounds[name]
                step = x[i] + (size * eps[name]) * grad.sign()
                ball = torch.minimum(torch.maximum(step, clean[i] - eps[name]), clean[i] + eps[name])
                x[i] = ball.clamp(lo, hi).detach()
        out = dict(feeds)
        out.update(
            {n: t.numpy().astype(feeds[n].dtype) for n, t in zip(names, x, strict=True) if n in self.bounds}
        )
        return out


def adversarial_chunk(
    attack: GoldenAttack, chunk: Mapping[str, np.ndarray], name: str, share: float, batch_size: int
) -> dict[str, np.ndarray]:
    """A chunk of rows made adversarial batch by batch (the attack's memory is one batch's gradients)."""
    n = len(next(iter(chunk.values())))
    parts = [
        attack.craft({k: np.asarray(v[s : s + batch_size]) for k, v in chunk.items()}, name, share)
        for s in range(0, n, batch_size)
    ]
    return {k: np.concatenate([p[k] for p in parts]) for k in chunk}


def twin_mismatch(
    golden: Runner, twin: Runner, feeds: Mapping[str, np.ndarray], output_index: int
) -> tuple[str | None, dict[str, Any]]:
    """(why the twin cannot stand in for the golden model, or None; the figures checked) on the first
    TWIN_SAMPLES samples: the same top-1 class everywhere and max |twin − golden| ≤ TWIN_TOLERANCE ×
    the golden output's range. Outputs are matched by position (names differ between exporters)."""
    n = min(TWIN_SAMPLES, len(next(iter(feeds.values()))))
    sample = {k: np.asarray(v[:n]) for k, v in feeds.items()}
    g = np.asarray(list(golden.run(bind_inputs(sample, golden.inputs)).values())[output_index], np.float64)
    outputs = list(twin.run(bind_inputs(sample, twin.inputs)).values())
    if output_index >= len(outputs) or np.shape(outputs[output_index]) != g.shape:
        shape = None if output_index >= len(outputs) else list(np.shape(outputs[output_index]))
        reason = f"the twin's output {output_index} has shape {shape}, the golden model's {list(g.shape)}"
        return reason, {"samples": n}
    t = np.asarray(outputs[output_index], np.float64)
    span = float(np.ptp(g)) or 1.0
    diff = float(np.max(np.abs(t - g))) / span
    agreement = float(np.mean(g.reshape(n, -1).argmax(1) == t.reshape(n, -1).argmax(1)))
    figures = {"samples": n, "max_abs_diff_share": diff, "top1_agreement": agreement}
    if agreement < 1.0 or not diff <= TWIN_TOLERANCE:
        reason = (
            f"the PyTorch twin does not reproduce the golden model on the first {n} samples (top-1 "
            f"agreement {agreement:.1%}, max difference {diff:.2e} of the output range, allowed "
            f"{TWIN_TOLERANCE:g}): attacks crafted on it would not attack the golden model"
        )
        return reason, figures
    return None, figures
