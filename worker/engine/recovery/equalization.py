"""Cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization", §4.1) of Conv→(ReLU)→Conv and
Linear→(ReLU)→Linear pairs, Conv→ReLU→flatten→Linear included.

ReLU is positively homogeneous (relu(x/s) = relu(x)/s for s > 0), so dividing output channel i of the
first layer (weights and bias) by s_i and multiplying the matching input channel of the second by s_i
leaves the float function unchanged. s_i = sqrt(r1_i / r2_i), r1 / r2 the channel's weight ranges in the
two layers, makes both ranges sqrt(r1·r2): per-tensor quantization then no longer wastes its grid on one
wide channel. Pairs are found in a torch.fx trace of the module; a model fx cannot trace (or a grouped /
depthwise convolution) is left as it is, with a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from worker.engine.recovery.common import Layer

_RELU_FUNCTIONS = {torch.relu, torch.nn.functional.relu}
_FLATTEN = {torch.flatten, torch.ops.aten.flatten.using_ints, "flatten", "view", "reshape"}


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    flattened: bool


@dataclass
class EqualizationResult:
    pairs: list[Pair] = field(default_factory=list)
    scales: dict[str, list[float]] = field(default_factory=dict)
    """"first→second" → the final per-channel scale s (product over iterations)."""
    iterations: int = 0
    notes: list[str] = field(default_factory=list)


def _equalizable(module: nn.Module) -> bool:
    if isinstance(module, nn.Linear):
        return True
    return isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d) and module.groups == 1


def find_pairs(module: nn.Module, notes: list[str]) -> list[Pair]:
    """Equalizable pairs (first layer's only user is a ReLU, optionally a flatten, then the second layer)."""
    import torch.fx

    own = getattr(module, "graph", None)  # a torch.export.unflatten module carries its graph
    try:
        graph = own if isinstance(own, torch.fx.Graph) else torch.fx.symbolic_trace(module).graph
    except Exception as exc:  # fx raises many kinds of errors on untraceable code
        notes.append(f"equalization skipped: torch.fx cannot trace the model ({type(exc).__name__})")
        return []
    modules = dict(module.named_modules())

    def is_layer(node: torch.fx.Node) -> bool:
        return node.op == "call_module" and _equalizable(modules[str(node.target)])

    def is_relu(node: torch.fx.Node) -> bool:
        if node.op == "call_module":
            return isinstance(modules[str(node.target)], nn.ReLU)
        if node.op == "call_function":
            return node.target in _RELU_FUNCTIONS or node.target == torch.ops.aten.relu.default
        return node.op == "call_method" and node.target in ("relu", "relu_")

    def is_flatten(node: torch.fx.Node) -> bool:
        if node.op == "call_module":
            return isinstance(modules[str(node.target)], nn.Flatten)
        return node.op in ("call_function", "call_method") and node.target in _FLATTEN

    def only_user(node: torch.fx.Node) -> torch.fx.Node | None:
        users = list(node.users)
        return users[0] if len(users) == 1 else None

    pairs: list[Pair] = []
    for node in graph.nodes:
        if not is_layer(node):
            continue
        nxt = only_user(node)
        if nxt is None or not is_relu(nxt):
            continue
        nxt = only_user(nxt)
        flattened = False
        if nxt is not None and is_flatten(nxt):
            flattened, nxt = True, only_user(nxt)
        if nxt is None or not is_layer(nxt):
            continue
        first, second = modules[str(node.target)], modules[str(nxt.target)]
        channels = first.weight.shape[0]
        width = second.weight.shape[1]
        if width % channels or (not flattened and width != channels):
            notes.append(f"{node.target}→{nxt.target}: channel counts do not match ({channels} vs {width})")
            continue
        pairs.append(Pair(str(node.target), str(nxt.target), flattened))
    return pairs


def _columns(second: torch.Tensor, channels: int) -> torch.Tensor:
    """The second layer's weight as (channels, everything that multiplies channel i), float64."""
    moved = second.detach().to(torch.float64).movedim(1, 0)  # (in, out, k...)
    per = moved.shape[0] // channels
    return moved.reshape(channels, per, *moved.shape[1:]).reshape(channels, -1)


def _layer(module: nn.Module, name: str) -> Layer:
    found = module.get_submodule(name)
    assert isinstance(found, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d)
    return found


def equalize_pair(module: nn.Module, pair: Pair) -> torch.Tensor:
    """Equalize one pair in place; returns the scales s (float64)."""
    first, second = _layer(module, pair.first), _layer(module, pair.second)
    channels = first.weight.shape[0]
    r1 = first.weight.detach().to(torch.float64).reshape(channels, -1).abs().amax(dim=1)
    r2 = _columns(second.weight, channels).abs().amax(dim=1)
    ok = (r1 > 0) & (r2 > 0)
    s = torch.where(ok, torch.sqrt(torch.where(ok, r1 / r2, 1.0)), torch.ones_like(r1))
    per = second.weight.shape[1] // channels
    col = s.repeat_interleave(per)  # input column j of the second layer belongs to channel j // per
    with torch.no_grad():
        view = (-1,) + (1,) * (first.weight.dim() - 1)
        first.weight.copy_((first.weight.to(torch.float64) / s.reshape(view)).to(first.weight.dtype))
        if first.bias is not None:
            first.bias.copy_((first.bias.to(torch.float64) / s).to(first.bias.dtype))
        cview = (1, -1) + (1,) * (second.weight.dim() - 2)
        second.weight.copy_((second.weight.to(torch.float64) * col.reshape(cview)).to(second.weight.dtype))
    return s


def equalize(module: nn.Module, *, max_iterations: int = 20, tolerance: float = 1e-6) -> EqualizationResult:
    """Equalize every pair found, sweeping the pairs until no scale moves more than `tolerance` from 1
    (one sweep suffices for independent pairs; chains of three or more layers need a few)."""
    result = EqualizationResult()
    result.pairs = find_pairs(module, result.notes)
    totals = {
        f"{p.first}→{p.second}": torch.ones(_layer(module, p.first).weight.shape[0], dtype=torch.float64)
        for p in result.pairs
    }
    for iteration in range(max_iterations):
        worst = 0.0
        for pair in result.pairs:
            s = equalize_pair(module, pair)
            totals[f"{pair.first}→{pair.second}"] *= s
            worst = max(worst, float((s - 1).abs().max()))
        result.iterations = iteration + 1
        if worst <= tolerance:
            break
    result.scales = {key: [float(v) for v in value] for key, value in totals.items()}
    if not result.pairs and not result.notes:
        result.notes.append("no Conv/Linear → ReLU → Conv/Linear pair to equalize")
    return result
