"""SmoothQuant-style scale migration (Xiao et al. 2023, "SmoothQuant", §4) for Linear and Conv layers.

For a layer y = W x, any per-input-channel s > 0 gives y = (W·diag(s)) (diag(s)⁻¹ x). With
s_j = max|X_j|^α / max|W_{:,j}|^(1−α) (X the layer's inputs on the calibration split, α the migration
strength) an input channel whose activations are outliers is divided down and the weight column that
multiplies it scaled up: the activation range a per-tensor quantizer must cover shrinks, the weights take
part of the difficulty.

Where x is produced by an op whose output channels can absorb 1/s exactly, it is folded there:
a LayerNorm or affine BatchNorm (weight and bias), a Linear or Conv (its output rows and bias), optionally
through a ReLU (relu(z/s) = relu(z)/s for s > 0). This needs every user of x to be one of the smoothed
layers (e.g. q, k, v after one LayerNorm share one s, computed from all their weights). Otherwise the layer
gets its own scale node: it becomes a Smoothed* subclass of its type (same name, same parameters) whose
forward multiplies its input by the stored 1/s, a Mul before the layer in the exported ONNX file.

The float function stays the same up to rounding (tested within 1e-5 relative). Like equalization, it
rescales weights, so it runs before AdaRound, QAT and bias correction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from worker.engine.compression.model import Feeds
from worker.engine.recovery.common import RecoveryError, run_all

_RELU = {torch.relu, F.relu, torch.ops.aten.relu.default}
_NORMS = (nn.LayerNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


@dataclass(frozen=True)
class SmoothQuantParams:
    alpha: float = 0.5
    """Migration strength: 0 leaves activations as they are, 1 moves all of their range into the weights."""

    def __post_init__(self) -> None:
        if not 0 <= self.alpha <= 1:
            raise RecoveryError(f"SmoothQuant parameters out of range: ['alpha'] ({self})")


@dataclass
class SmoothedGroup:
    layers: list[str]
    """The layers sharing one input (and so one s)."""
    folded_into: str | None
    """The module that absorbed 1/s, or None: the layer got a scale node."""
    fold: str
    """"layernorm", "batchnorm", "linear", "conv" or "scale node"."""
    through_relu: bool
    outlier_ratio: float
    """Largest channel's max|X_j| over the median channel's, before smoothing."""
    scales: list[float]


@dataclass
class SmoothQuantResult:
    alpha: float
    groups: list[SmoothedGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Smoothed:
    """Mixin of the scale-node layers: the input times the stored 1/s (broadcast along the channel axis)."""

    smooth_inverse: torch.Tensor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x * self.smooth_inverse)  # type: ignore[misc]


class SmoothedLinear(_Smoothed, nn.Linear):
    pass


class SmoothedConv1d(_Smoothed, nn.Conv1d):
    pass


class SmoothedConv2d(_Smoothed, nn.Conv2d):
    pass


class SmoothedConv3d(_Smoothed, nn.Conv3d):
    pass


_SMOOTHED: dict[type[nn.Module], type[nn.Module]] = {
    nn.Linear: SmoothedLinear,
    nn.Conv1d: SmoothedConv1d,
    nn.Conv2d: SmoothedConv2d,
    nn.Conv3d: SmoothedConv3d,
}


def _smoothable(module: nn.Module) -> bool:
    if isinstance(module, nn.Linear):
        return True
    return isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d) and module.groups == 1


def _weight(module: nn.Module) -> torch.Tensor:
    weight = module.weight
    assert isinstance(weight, torch.Tensor)
    return weight


def _bias(module: nn.Module) -> torch.Tensor | None:
    bias = getattr(module, "bias", None)
    return bias if isinstance(bias, torch.Tensor) else None


def _in_channels(module: nn.Module) -> int:
    return int(_weight(module).shape[1])


def _out_channels(module: nn.Module) -> int | None:
    if isinstance(module, nn.LayerNorm):
        shape = module.normalized_shape
        return int(shape[0]) if len(shape) == 1 and module.elementwise_affine else None
    if isinstance(module, nn.BatchNorm1d | nn.BatchNorm2d | nn.BatchNorm3d):
        return int(module.num_features) if module.affine else None
    return int(_weight(module).shape[0]) if _smoothable(module) else None


def _graph(module: nn.Module, notes: list[str]) -> torch.fx.Graph | None:
    import torch.fx

    own = getattr(module, "graph", None)  # a torch.export.unflatten module carries its graph
    try:
        return own if isinstance(own, torch.fx.Graph) else torch.fx.symbolic_trace(module).graph
    except Exception as exc:  # fx raises many kinds of errors on untraceable code
        notes.append(f"smoothquant skipped: torch.fx cannot trace the model ({type(exc).__name__})")
        return None


@dataclass
class _Plan:
    layers: list[str]
    fold_into: str | None
    through_relu: bool


def _plans(module: nn.Module, wanted: Sequence[str], notes: list[str]) -> list[_Plan]:
    """The groups of layers to smooth: those of `wanted` grouped by their input node, with the op that
    absorbs 1/s where folding is exact."""
    import torch.fx

    graph = _graph(module, notes)
    if graph is None:
        return []
    modules = dict(module.named_modules())

    def layer(node: torch.fx.Node) -> nn.Module | None:
        if node.op != "call_module":
            return None
        found = modules[str(node.target)]
        return found if _smoothable(found) else None

    def is_relu(node: torch.fx.Node) -> bool:
        if node.op == "call_module":
            return isinstance(modules[str(node.target)], nn.ReLU)
        if node.op == "call_function":
            return node.target in _RELU
        return node.op == "call_method" and node.target in ("relu", "relu_")

    by_input: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for node in graph.nodes:
        if layer(node) is not None and node.args and isinstance(node.args[0], torch.fx.Node):
            by_input.setdefault(node.args[0], []).append(node)

    def fold_target(source: torch.fx.Node, consumers: list[torch.fx.Node]) -> tuple[str, bool] | None:
        # every use of the input must be as the first argument of one of these layers
        if set(source.users) != set(consumers) or any(
            source in (*c.args[1:], *c.kwargs.values()) for c in consumers
        ):
            return None
        node, through = source, False
        if is_relu(node):
            inner = node.args[0] if node.args else None
            if not isinstance(inner, torch.fx.Node) or len(inner.users) != 1:
                return None
            node, through = inner, True
        if node.op != "call_module":
            return None
        channels = _out_channels(modules[str(node.target)])
        width = {_in_channels(modules[str(c.target)]) for c in consumers}
        return (str(node.target), through) if channels is not None and width == {channels} else None

    plans: list[_Plan] = []
    want = set(wanted)
    for source, consumers in by_input.items():
        names = [str(c.target) for c in consumers]
        if not want.intersection(names):
            continue
        target = fold_target(source, consumers)
        if target is not None:
            plans.append(_Plan(names, target[0], target[1]))
        else:
            plans.extend(_Plan([name], None, False) for name in names if name in want)
    return plans


def _channel_view(tensor: torch.Tensor, module: nn.Module) -> torch.Tensor:
    """A per-input-channel vector shaped to broadcast against the layer's input."""
    return (
        tensor if isinstance(module, nn.Linear) else tensor.reshape(-1, *([1] * (_weight(module).dim() - 2)))
    )


def input_ranges(
    module: nn.Module, layers: Sequence[str], feeds: Feeds, batch_size: int
) -> dict[str, torch.Tensor]:
    """max|X_j| per input channel of each layer over `feeds` (float64; channel axis 1 for a Conv, the last
    axis for a Linear)."""
    ranges: dict[str, torch.Tensor] = {}

    def hook(name: str, sub: nn.Module) -> Callable[[nn.Module, tuple[torch.Tensor, ...]], None]:
        def record(_m: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
            x = args[0].detach().to(torch.float64).abs()
            moved = x if isinstance(sub, nn.Linear) else x.movedim(1, -1)
            part = moved.reshape(-1, moved.shape[-1]).amax(dim=0)
            ranges[name] = part if name not in ranges else torch.maximum(ranges[name], part)

        return record

    subs = {name: module.get_submodule(name) for name in layers}
    handles = [sub.register_forward_pre_hook(hook(name, sub)) for name, sub in subs.items()]
    try:
        run_all(module, feeds, batch_size)
    finally:
        for handle in handles:
            handle.remove()
    return ranges


def _weight_ranges(layer: nn.Module) -> torch.Tensor:
    w = _weight(layer).detach().to(torch.float64).movedim(1, 0)
    return w.reshape(w.shape[0], -1).abs().amax(dim=1)


def _fold(owner: nn.Module, s: torch.Tensor) -> None:
    weight, bias = _weight(owner), _bias(owner)
    with torch.no_grad():
        view = (-1,) + (1,) * (weight.dim() - 1)
        weight.copy_((weight.to(torch.float64) / s.reshape(view)).to(weight.dtype))
        if bias is not None:
            bias.copy_((bias.to(torch.float64) / s).to(bias.dtype))


def _scale_node(layer: nn.Module, s: torch.Tensor) -> None:
    """Make `layer` its Smoothed* subclass in place (same parameters and name), its input times 1/s."""
    inverse = _channel_view(1 / s, layer).to(_weight(layer).dtype)
    if isinstance(layer, _Smoothed):  # smoothed before: the scales compose
        layer.smooth_inverse = layer.smooth_inverse * inverse
        return
    layer.__class__ = _SMOOTHED[type(layer)]
    layer.register_buffer("smooth_inverse", inverse)


def smooth(
    module: nn.Module, layers: Sequence[str], feeds: Feeds, params: SmoothQuantParams, *, batch_size: int = 64
) -> SmoothQuantResult:
    """Smooth, in place, the Linear/Conv layers among `layers` (see the module docstring)."""
    result = SmoothQuantResult(alpha=params.alpha)
    plans = _plans(module, layers, result.notes)
    if not plans:
        if not result.notes:
            result.notes.append("no Linear or Conv layer of the configuration to smooth")
        return result
    ranges = input_ranges(module, sorted({name for plan in plans for name in plan.layers}), feeds, batch_size)
    for plan in plans:
        subs = [module.get_submodule(name) for name in plan.layers]
        if any(name not in ranges for name in plan.layers):
            result.notes.append(f"{', '.join(plan.layers)}: not called on the calibration data, left as is")
            continue
        a = torch.stack([ranges[name] for name in plan.layers]).amax(dim=0)
        w = torch.stack([_weight_ranges(sub) for sub in subs]).amax(dim=0)
        ok = (a > 0) & (w > 0)
        raw = a.clamp_min(1e-30) ** params.alpha / w.clamp_min(1e-30) ** (1 - params.alpha)
        s = torch.where(ok, raw, torch.ones_like(a))
        with torch.no_grad():
            for weight in map(_weight, subs):
                view = (1, -1) + (1,) * (weight.dim() - 2)
                weight.copy_((weight.to(torch.float64) * s.reshape(view)).to(weight.dtype))
        if plan.fold_into is not None:
            owner = module.get_submodule(plan.fold_into)
            _fold(owner, s)
            kind = (
                "layernorm"
                if isinstance(owner, nn.LayerNorm)
                else "batchnorm"
                if isinstance(owner, _NORMS)
                else "linear"
                if isinstance(owner, nn.Linear)
                else "conv"
            )
        else:
            _scale_node(subs[0], s)
            kind = "scale node"
        median = float(a.median())
        result.groups.append(
            SmoothedGroup(
                layers=plan.layers,
                folded_into=plan.fold_into,
                fold=kind,
                through_relu=plan.through_relu,
                outlier_ratio=float(a.max()) / median if median > 0 else float("inf"),
                scales=[float(v) for v in s],
            )
        )
    return result
