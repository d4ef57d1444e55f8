"""What a whole-model compression configuration costs: size, parameters, MACs and BOPs.

Definitions (size = Σ tensors elements × bits / 8 plus quantization parameters;
BOPs = MACs × weight bits × activation bits), made precise here:

* Tensors are the weights and biases of the compressible layers (`LayerSpec`), each counted once even
  when layers share it, plus the model's other parameters ("other": norms, positional tables...),
  which no config touches and which stay at 32 bits. Torch: every nn.Parameter outside the layers
  (buffers such as batch-norm running statistics are not counted). ONNX: the float initializers the
  inspection counts as parameters (`inspection._onnx_params`) minus the layers' tensors — an exported
  graph usually has its batch norms folded into the convolutions, so the same network can count a few
  parameters fewer as ONNX than as torch.
* Bits of a weight: the last weight bit width the layer's config sets (WeightQuant / Quantize.weights;
  NoiseInjection counts as the b-bit quantization it simulates; FloatCast 16), else 32. Biases stay
  float32 (a real int8 runtime stores them as int32: the same 4 bytes), 16 under FloatCast.
* A tensor occupies ceil(elements × bits / 8) bytes (packed storage for widths below 8).
* Quantization parameters: one float32 scale (4 bytes) per tensor, or per output channel (the layer's
  quantization axis) when per_channel, or per group of `group_size` weights of each output channel;
  asymmetric quantization adds one zero point per scale, stored in
  the quantized type (ceil(bits / 8) bytes); a symmetric zero point is 0 and is not stored. Activation
  quantization adds one scale and one zero point per quantized layer output.
* Pruning (MagnitudePrune, ChannelPrune, NMSparsity): `size_bytes` is the DENSE size (what an ONNX file stores and a
  dense runtime executes: the zeros are still there). `size_bytes_sparse` is what a bitmask sparse format
  would need per pruned tensor — ceil(elements / 8) mask bytes + the kept values — or the dense size when
  that is smaller. `params_kept` counts a pruned tensor's nonzero entries. Channel pruning is counted
  the same way here (zeroed rows); a sweep point then replaces params_kept, macs_effective and (float32
  plans) size_bytes by the counts of its physically pruned export, which also loses the next layers'
  input channels (`structured_export.real_cost`).
* Low rank (LowRank): a weight reshaped to m × n with rank r is stored as its two factors, r·(m + n)
  elements, when that is fewer than m·n (else dense). `params_kept` counts the factors; `macs_effective`
  scales the layer's MACs by the same ratio (a factorized layer runs as two smaller ones). The ONNX
  export keeps the dense product (the same outputs), so its file does not shrink.
* MACs are the dense per-sample multiply-accumulates of the golden layers (`CompressibleModel.prepare`
  counts them at the sample's shape; `inspection`'s rules). BOPs = Σ_layers MACs × weight bits ×
  activation bits; `bops_effective` uses `macs_effective`. A layer's activation bits are the bit width
  its config gives its outputs (ActivationQuant / Quantize.activations; FloatCast 16), else 32 — for a
  uniform config, the precision of the activations flowing between layers (the model's raw input is
  counted at that width too, as a real int8 runtime quantizes it).
* compression_ratio = size_bytes_fp32 / size_bytes, size_bytes_fp32 = 4 × params_total.

The records (TensorCost, LayerCost, ModelCost) and their totals live in `cost_records`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from worker.engine.compression.configs import (
    ActivationQuant,
    ChannelPrune,
    Config,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NMSparsity,
    NoiseInjection,
    Quantize,
    WeightQuant,
    stages_of,
)
from worker.engine.compression.layers import LayerSpec, compress_tensors
from worker.engine.compression.model import CompressibleModel
from worker.engine.sweep.cost_records import FLOAT_BITS, SCALE_BYTES, LayerCost, ModelCost, TensorCost


@dataclass(frozen=True)
class Storage:
    """How a layer's config stores its tensors and activations (see the module docstring)."""

    weight_bits: int = FLOAT_BITS
    bias_bits: int = FLOAT_BITS
    activation_bits: int = FLOAT_BITS
    weight_quant: WeightQuant | None = None
    activation_quant: ActivationQuant | None = None
    pruned: bool = False
    low_rank: LowRank | None = None


def storage_of(config: Config | None) -> Storage:
    """The storage a config implies; None (no config) is float32 everywhere."""
    if config is None:
        return Storage()
    w_bits = b_bits = a_bits = FLOAT_BITS
    wq: WeightQuant | None = None
    aq: ActivationQuant | None = None
    pruned = False
    low_rank: LowRank | None = None
    for stage in stages_of(config):
        weights = stage.weights if isinstance(stage, Quantize) else stage
        acts = stage.activations if isinstance(stage, Quantize) else stage
        if isinstance(weights, WeightQuant):
            w_bits, wq = weights.bits, weights
        if isinstance(acts, ActivationQuant):
            a_bits, aq = acts.bits, acts
        if isinstance(stage, NoiseInjection):
            w_bits, wq = stage.bits, WeightQuant(stage.bits, symmetric=True, per_channel=False)
        elif isinstance(stage, FloatCast):
            w_bits, b_bits, a_bits = min(w_bits, 16), min(b_bits, 16), min(a_bits, 16)
        elif isinstance(stage, MagnitudePrune | ChannelPrune | NMSparsity):
            pruned = True
        elif isinstance(stage, LowRank):
            low_rank = stage
    return Storage(w_bits, b_bits, a_bits, wq, aq, pruned, low_rank)


def _packed(elements: int, bits: int) -> int:
    return math.ceil(elements * bits / 8)


def factor_rank(shape: tuple[int, ...], axis: int, rank_ratio: float) -> tuple[int, int, int]:
    """(m, n, r) of `ops.low_rank`: the weight moved to out × rest and the rank it keeps."""
    m = int(shape[axis % len(shape)]) if shape else 1
    n = math.prod(shape) // m if m else 0
    full = min(m, n)
    return m, n, min(full, max(1, round(rank_ratio * full)))


def other_params(model: CompressibleModel) -> tuple[int, list[str]]:
    """Parameters outside the compressible layers (counted at 32 bits), and notes."""
    keys = {key for layer in model.layers() for key in layer.keys}
    module = getattr(model, "module", None)
    if model.backend == "torch" and isinstance(module, torch.nn.Module):
        count = sum(p.numel() for name, p in module.named_parameters() if name not in keys)
        return int(count), []
    proto = getattr(model, "model", None)
    if model.backend == "onnx" and proto is not None:
        from worker.engine.inspection import _onnx_params

        _, total, _ = _onnx_params(proto.graph)
        in_layers = _unique_elements(model)
        extra = total - in_layers
        notes = []
        if extra < 0:
            notes.append(
                f"the graph's initializers hold {total} parameters but its layers use {in_layers}: "
                "weights computed from other constants; other_params set to 0"
            )
        return max(extra, 0), notes
    return 0, [f"parameters outside the compressible layers are not counted for a {model.backend} model"]


def _specs(layer: LayerSpec) -> list[Any]:
    return [*layer.weights, *layer.biases]


def _unique_elements(model: CompressibleModel) -> int:
    seen: dict[str, int] = {}
    for layer in model.layers():
        for spec in _specs(layer):
            seen.setdefault(spec.key, math.prod(spec.shape))
    return sum(seen.values())


def model_cost(
    model: CompressibleModel,
    plan: Mapping[str, Config],
    tensors: Mapping[str, torch.Tensor] | None = None,
    *,
    layer_outputs: Mapping[str, int] | None = None,
) -> ModelCost:
    """The cost of `model` compressed by `plan` (layer name → config; absent layers stay float32).

    `tensors`: the compressed tensor values by key (`CompressionOutcome.tensors`), used to count nonzero
    entries; computed here when not given. `layer_outputs`: number of float outputs per layer (for the
    activation quantization parameters); `model.output_keys` when not given.
    """
    layers = model.layers()
    model.check_layers(list(plan))
    if tensors is None:
        tensors = compress_tensors(layers, plan, model.read).tensors
    owner: dict[str, str] = {}
    for layer in layers:  # a shared tensor is compressed by the first layer (depth order) the plan covers
        if layer.name in plan:
            for key in layer.keys:
                owner.setdefault(key, layer.name)
    for layer in layers:
        for key in layer.keys:
            owner.setdefault(key, layer.name)
    extra, notes = other_params(model)
    costs: list[LayerCost] = []
    for layer in layers:
        config = plan.get(layer.name)
        storage = storage_of(config)
        lc = LayerCost(
            name=layer.name,
            type=layer.type,
            config=None if config is None else config.id,
            weight_bits=storage.weight_bits,
            activation_bits=storage.activation_bits,
            macs=layer.macs,
            macs_effective=layer.macs,
        )
        dense = stored = 0
        for spec in layer.weights:
            if owner[spec.key] != layer.name:
                continue
            cost = _weight_cost(layer, spec, storage, tensors.get(spec.key), model)
            dense += cost.elements
            stored += cost.stored_elements
            lc.tensors.append(cost)
        for bias in layer.biases:
            if owner[bias.key] == layer.name:
                lc.tensors.append(_bias_cost(layer, bias, storage, tensors.get(bias.key), model))
        if storage.low_rank is not None and layer.macs is not None and dense:
            lc.macs_effective = round(layer.macs * stored / dense)
        if storage.activation_quant is not None:
            outputs = (
                layer_outputs.get(layer.name, 0)
                if layer_outputs is not None
                else len(model.output_keys(layer.name))
            )
            lc.activation_param_bytes = outputs * (SCALE_BYTES + _packed(1, storage.activation_bits))
        if layer.macs is None:
            notes.append(f"{layer.name}: MACs unknown, so the model's MACs and BOPs are None")
        costs.append(lc)
    if any(storage_of(c).pruned for c in plan.values()):
        notes.append(
            "pruned tensors: size_bytes is the dense size (zeros stored, as in the ONNX file); "
            "size_bytes_sparse assumes a bitmask sparse format; MACs are dense"
        )
    if any(storage_of(c).low_rank is not None for c in plan.values()):
        notes.append(
            "low-rank weights: sizes count the two factors r·(m+n); the ONNX export stores the dense product"
        )
    if extra:
        notes.append(f"{extra} parameters outside the compressible layers counted at 32 bits")
    return ModelCost(layers=costs, other_params=extra, notes=notes)


def _count_nonzero(value: torch.Tensor | None, key: str, model: CompressibleModel) -> int:
    tensor = value if value is not None else model.read(key)
    return int(torch.count_nonzero(tensor))


def _weight_cost(
    layer: LayerSpec, spec: Any, storage: Storage, value: torch.Tensor | None, model: CompressibleModel
) -> TensorCost:
    elements = math.prod(spec.shape)
    bits = storage.weight_bits
    stored = elements
    if storage.low_rank is not None:
        m, n, r = factor_rank(spec.shape, spec.quant_axis, storage.low_rank.rank_ratio)
        stored = min(elements, r * (m + n))
    nonzero = _count_nonzero(value, spec.key, model)
    kept = nonzero if storage.pruned and storage.low_rank is None else stored
    qparams = 0
    wq = storage.weight_quant
    if wq is not None:
        scales = int(spec.shape[spec.quant_axis % len(spec.shape)]) if wq.per_channel and spec.shape else 1
        if wq.group_size is not None and spec.shape:  # one scale per group of each output channel
            channels = int(spec.shape[spec.quant_axis % len(spec.shape)])
            scales = channels * -(-(elements // max(channels, 1)) // wq.group_size)
        zero_bytes = 0 if wq.symmetric else _packed(1, wq.bits)
        qparams = scales * (SCALE_BYTES + zero_bytes)
    dense_bytes = _packed(stored, bits)
    sparse = dense_bytes
    if storage.pruned and storage.low_rank is None:
        sparse = min(dense_bytes, math.ceil(elements / 8) + _packed(nonzero, bits))
    return TensorCost(
        name=spec.name,
        layer=layer.name,
        role="weight",
        elements=elements,
        bits=bits,
        stored_elements=stored,
        kept=kept,
        nonzero=nonzero,
        bytes=dense_bytes,
        quant_param_bytes=qparams,
        sparse_bytes=sparse,
    )


def _bias_cost(
    layer: LayerSpec, spec: Any, storage: Storage, value: torch.Tensor | None, model: CompressibleModel
) -> TensorCost:
    elements = math.prod(spec.shape)
    nonzero = _count_nonzero(value, spec.key, model)
    size = _packed(elements, storage.bias_bits)
    return TensorCost(
        name=spec.name,
        layer=layer.name,
        role="bias",
        elements=elements,
        bits=storage.bias_bits,
        stored_elements=elements,
        kept=nonzero if storage.pruned else elements,
        nonzero=nonzero,
        bytes=size,
        quant_param_bytes=0,
        sparse_bytes=size,
    )
