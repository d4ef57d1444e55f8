"""Backend-independent description of compressible layers and the application of configs to them.

A backend (torch or ONNX) describes each compressible layer as a `LayerSpec`: the weight and bias
tensors it owns (by backend key), how their output channels are laid out, and its output activations.
`compress_tensors` turns a plan (layer name → config) into new values for the tensors it changes, and
`output_transforms` into the functions applied to each layer's outputs. Backends only read and write
tensors and hook outputs; every number is decided here and in `ops`.

Shared tensors (the same Parameter / initializer used by several layers, e.g. tied embeddings) have
one key. A plan compresses such a tensor once, with the config of the first layer (in depth order)
that the plan compresses; the layers it also changes are named in `CompressionOutcome.notes` and
`affected_layers`, so a sensitivity scan never reports a silent double compression or a zero effect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from worker.engine.compression import ops
from worker.engine.compression.configs import (
    DATA_NORMS,
    ActivationQuant,
    ChannelPrune,
    Config,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NMSparsity,
    NoiseInjection,
    Quantize,
    Stage,
    WeightQuant,
    stages_of,
)
from worker.engine.compression.nm_sparsity import nm_prune
from worker.engine.errors import EngineError


@dataclass(frozen=True)
class WeightSpec:
    """A weight tensor of a layer. `quant_axis`: per-channel quantization axis; `prune_axis` and
    `gates`: where its output channels are (see ops.channel_rows)."""

    key: str
    name: str
    shape: tuple[int, ...]
    quant_axis: int = 0
    prune_axis: int = 0
    gates: int = 1


@dataclass(frozen=True)
class BiasSpec:
    """A bias whose entries follow the output channels of its channel group (gates blocks of units)."""

    key: str
    name: str
    shape: tuple[int, ...]
    gates: int = 1


@dataclass(frozen=True)
class ChannelGroup:
    """Tensors whose output channels are the same channels: pruned and scored jointly."""

    weights: tuple[str, ...]
    biases: tuple[str, ...] = ()


@dataclass
class LayerSpec:
    """A compressible layer as a backend sees it. The last channel group is the layer's output channels."""

    name: str
    type: str
    weights: list[WeightSpec]
    biases: list[BiasSpec] = field(default_factory=list)
    channel_groups: list[ChannelGroup] = field(default_factory=list)
    output_channel_axis: int = -1
    """Axis of the output channels in the layer's output activations (1 for convolutions, else -1)."""
    macs: int | None = None
    depth_index: int = 0
    depth_fraction: float = 0.0
    shared_with: list[str] = field(default_factory=list)
    shared_notes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    owned_params: int = 0
    owned_weight_params: int = 0

    @property
    def keys(self) -> list[str]:
        return [w.key for w in self.weights] + [b.key for b in self.biases]

    def weight(self, key: str) -> WeightSpec:
        return next(w for w in self.weights if w.key == key)

    def bias(self, key: str) -> BiasSpec:
        return next(b for b in self.biases if b.key == key)

    def primary_channels(self) -> ChannelGroup:
        if not self.channel_groups:
            raise EngineError(f"layer {self.name!r} ({self.type}) has no output channels to score")
        return self.channel_groups[-1]

    def n_channels(self, group: ChannelGroup | None = None) -> int:
        group = group or self.primary_channels()
        spec = self.weight(group.weights[0])
        return ops.channel_count(spec.shape, spec.prune_axis, spec.gates)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "params": self.owned_params,
            "weight_params": self.owned_weight_params,
            "macs": self.macs,
            "depth_index": self.depth_index,
            "depth_fraction": self.depth_fraction,
            "tensors": [w.name for w in self.weights] + [b.name for b in self.biases],
            "shared_with": list(self.shared_with),
            "notes": self.shared_notes + self.notes,
        }


def finish_layers(layers: list[LayerSpec]) -> list[LayerSpec]:
    """Set depth indices / fractions (list order = depth order), owned parameter counts (a shared
    tensor counts for the first layer only) and the shared-weight notes."""
    owner: dict[str, str] = {}
    users: dict[str, list[str]] = {}
    for layer in layers:
        for key in layer.keys:
            owner.setdefault(key, layer.name)
            if layer.name not in users.setdefault(key, []):
                users[key].append(layer.name)
    last = max(len(layers) - 1, 1)
    for index, layer in enumerate(layers):
        layer.depth_index = index
        layer.depth_fraction = index / last if len(layers) > 1 else 0.0
        sizes = {w.key: _numel(w.shape) for w in layer.weights} | {
            b.key: _numel(b.shape) for b in layer.biases
        }
        layer.owned_params = sum(n for key, n in sizes.items() if owner[key] == layer.name)
        layer.owned_weight_params = sum(_numel(w.shape) for w in layer.weights if owner[w.key] == layer.name)
        shared = sorted({other for key in layer.keys for other in users[key] if other != layer.name})
        layer.shared_with = shared
        layer.shared_notes = []
        for key in layer.keys:
            others = [u for u in users[key] if u != layer.name]
            if others:
                layer.shared_notes.append(
                    f"tensor {_name(layer, key)!r} is shared with {others}: compressing this layer changes it for "
                    f"them too (one tensor, compressed once; parameters counted for {owner[key]!r})"
                )
    return layers


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


# -------------------------------------------------------------------------------------- applying


@dataclass
class CompressionOutcome:
    """What a plan changed: new tensor values by key, names of the tensors changed per layer, the layers
    a shared tensor also changed, and notes (e.g. ranks kept, tensors skipped as already compressed)."""

    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    changed: dict[str, list[str]] = field(default_factory=dict)
    affected_layers: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def compress_tensors(
    layers: Sequence[LayerSpec],
    plan: Mapping[str, Config],
    read: Callable[[str], torch.Tensor],
    cache: dict[Any, Any] | None = None,
    scores: Mapping[tuple[str, str], Sequence[float]] | None = None,
) -> CompressionOutcome:
    """Apply every layer's config (stages in order) to its tensors. `read(key)` gives a tensor's current
    (golden) value. Layers are processed in the order of `layers` (depth order). A layer's result
    depends only on its golden tensors and config, so `cache` (a dict the caller keeps, e.g. over
    the cells of an "all_but" scan) memoises it per (layer, config, tensors). `scores`: (layer, method) →
    importance of its output channels, for ChannelPrune by "taylor" / "reconstruction" (`resolve` computes
    them on the calibration data); such a config without its scores is an EngineError."""
    outcome = CompressionOutcome()
    claimed: dict[str, str] = {}
    users: dict[str, list[str]] = {}
    for layer in layers:
        for key in layer.keys:
            users.setdefault(key, []).append(layer.name)
    for layer in layers:
        config = plan.get(layer.name)
        if config is None:
            continue
        mine = [key for key in layer.keys if claimed.setdefault(key, layer.name) == layer.name]
        skipped = [key for key in layer.keys if key not in mine]
        if skipped:
            outcome.notes.append(
                f"{layer.name}: shared tensor(s) {[_name(layer, k) for k in skipped]} already compressed "
                f"with layer {sorted({claimed[k] for k in skipped})}'s config; not compressed again"
            )
        memo = (layer.name, config.id, tuple(mine))
        if cache is not None and memo in cache:
            tensors, notes = cache[memo]
        else:
            golden = {key: read(key) for key in mine}
            current = dict(golden)
            notes = []
            for stage in stages_of(config):
                current = _apply_stage(layer, stage, current, notes, scores or {})
            tensors = {key: value for key, value in current.items() if not torch.equal(value, golden[key])}
            if cache is not None:
                cache[memo] = (tensors, notes)
        outcome.tensors.update(tensors)
        outcome.notes.extend(notes)
        outcome.changed[layer.name] = [_name(layer, key) for key in mine if key in tensors]
        others = sorted({u for key in mine for u in users[key] if u != layer.name and key in outcome.tensors})
        if others:
            outcome.affected_layers[layer.name] = others
            outcome.notes.append(f"{layer.name}: its shared tensor(s) also changed layer(s) {others}")
    return outcome


def _name(layer: LayerSpec, key: str) -> str:
    for w in layer.weights:
        if w.key == key:
            return w.name
    for b in layer.biases:
        if b.key == key:
            return b.name
    return key


def _apply_stage(
    layer: LayerSpec,
    stage: Stage,
    current: dict[str, torch.Tensor],
    notes: list[str],
    scores: Mapping[tuple[str, str], Sequence[float]],
) -> dict[str, torch.Tensor]:
    out = dict(current)
    weights = [w for w in layer.weights if w.key in out]
    if isinstance(stage, Quantize):
        if stage.weights is None:
            return out
        stage = stage.weights
    if isinstance(stage, WeightQuant) and stage.group_size is not None:
        for w in weights:
            out[w.key] = ops.fake_quant_weight_groups(
                out[w.key], stage.bits, stage.symmetric, stage.group_size, w.quant_axis
            )
    elif isinstance(stage, WeightQuant):
        for w in weights:
            out[w.key] = ops.fake_quant_weight(
                out[w.key], stage.bits, stage.symmetric, stage.per_channel, w.quant_axis
            )
    elif isinstance(stage, FloatCast):
        for key in out:
            out[key] = ops.float_cast(out[key], stage.dtype)
    elif isinstance(stage, MagnitudePrune):
        for w in weights:
            out[w.key] = ops.magnitude_prune(out[w.key], stage.sparsity)
    elif isinstance(stage, NMSparsity):
        for w in weights:
            out[w.key] = nm_prune(out[w.key], stage.n, stage.m, w.prune_axis)
    elif isinstance(stage, LowRank):
        ranks = []
        for w in weights:
            out[w.key], rank = ops.low_rank(out[w.key], stage.rank_ratio, w.quant_axis)
            ranks.append(f"{w.name}: rank {rank}")
        notes.append(f"{layer.name} {stage.id}: " + ", ".join(ranks))
    elif isinstance(stage, NoiseInjection):
        for w in weights:
            out[w.key] = ops.inject_noise(out[w.key], stage.bits, stage.seed, w.name)
    elif isinstance(stage, ChannelPrune):
        for group in layer.channel_groups:
            prune_group(layer, group, out, stage, _data_scores(layer, group, stage, scores, notes))
    # ActivationQuant changes no tensor: see output_transforms
    return out


def group_members(
    layer: LayerSpec, group: ChannelGroup, values: Mapping[str, torch.Tensor]
) -> list[tuple[torch.Tensor, int, int]]:
    return [
        (values[key], layer.weight(key).prune_axis, layer.weight(key).gates)
        for key in group.weights
        if key in values
    ]


def zero_group_channels(
    layer: LayerSpec, group: ChannelGroup, values: dict[str, torch.Tensor], channels: Sequence[int]
) -> None:
    """Zero the given channels in every weight and bias of the group that `values` holds, in place of `values`."""
    for key in group.weights:
        if key in values:
            spec = layer.weight(key)
            values[key] = ops.zero_channels(values[key], spec.prune_axis, spec.gates, channels)
    for key in group.biases:
        if key in values:
            values[key] = ops.zero_channels(values[key], 0, layer.bias(key).gates, channels)


def _data_scores(
    layer: LayerSpec,
    group: ChannelGroup,
    stage: ChannelPrune,
    scores: Mapping[tuple[str, str], Sequence[float]],
    notes: list[str],
) -> torch.Tensor | None:
    """The data-driven importance of a group's channels (primary group only), None for a norm."""
    if stage.norm not in DATA_NORMS:
        return None
    found = scores.get((layer.name, stage.norm))
    if found is None:
        raise EngineError(
            f"{stage.id} on layer {layer.name!r} ranks channels by {stage.norm} importance, which needs "
            "calibration data (compress through resolve() with a Calibration)"
        )
    if group is not layer.primary_channels():
        notes.append(
            f"{layer.name}: {stage.norm} importance scores its output channels only; other groups by L1"
        )
        return None
    return torch.tensor([float(s) for s in found], dtype=torch.float64)


def prune_group(
    layer: LayerSpec,
    group: ChannelGroup,
    values: dict[str, torch.Tensor],
    stage: ChannelPrune,
    scores: torch.Tensor | None = None,
) -> None:
    members = group_members(layer, group, values)
    if not members:
        return
    if scores is None:
        scores = ops.channel_scores(members, stage.norm if stage.norm in ("l1", "l2") else "l1")
    zero_group_channels(layer, group, values, ops.lowest_channels(scores, stage.sparsity))


StatsLookup = Callable[[str, str], ops.ActivationStats]
"""(layer name, output key) → golden activation statistics of that output."""


def output_transforms(
    layer: LayerSpec, config: Config, output_keys: Sequence[str], stats: StatsLookup | None
) -> dict[str, list[tuple[str, Any]]]:
    """Per output key, the chain of transforms the config applies to that output, as either
    ("quant", ActivationQParams) or ("cast", "fp16" | "bf16"). Empty when the config leaves outputs alone."""
    chains: dict[str, list[Any]] = {key: [] for key in output_keys}
    for stage in stages_of(config):
        act = (
            stage.activations
            if isinstance(stage, Quantize)
            else stage
            if isinstance(stage, ActivationQuant)
            else None
        )
        if act is not None:
            if stats is None:
                raise EngineError(
                    f"{act.id} on layer {layer.name!r} needs activation statistics from calibration data"
                )
            for key in output_keys:
                chains[key].append(("quant", ops.activation_qparams(stats(layer.name, key), act)))
        elif isinstance(stage, FloatCast):
            for key in output_keys:
                chains[key].append(("cast", stage.dtype))
    return {key: chain for key, chain in chains.items() if chain}


def apply_chain(x: torch.Tensor, chain: Sequence[Any]) -> torch.Tensor:
    """Run a chain from `output_transforms` on a torch tensor (non-float tensors pass unchanged)."""
    if not x.is_floating_point():
        return x
    for kind, value in chain:
        x = value.apply(x) if kind == "quant" else ops.float_cast(x, value).to(x.dtype)
    return x
