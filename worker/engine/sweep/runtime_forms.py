"""Which sweep points a real runtime can execute, and in what form.

The simulation (`worker.engine.compression`) computes every config in float32: fake-quantized,
pruned or factorized weights, fake-quantized or fp16-rounded layer outputs. A point is *executable*
when onnxruntime (CPUExecutionProvider) can run a deployable file of it; `export.export_point` writes
one file per export kind:

==================  ==========================================================  =====================
kind                what the file is                                            = simulated numbers?
==================  ==========================================================  =====================
fp32                the golden model (no compression)                           yes (KL exactly 0)
simulated-float     the simulation as a float32 graph: compressed weights        yes (same graph ops)
                    written in float, fake-quant/cast nodes after layer outputs
real-int8-weights   weights stored as int8/uint8 + DequantizeLinear (per tensor  yes, bit for bit
                    or per channel); computation in float32
real-int8-dynamic   onnxruntime.quantization.quantize_dynamic: int8 weights,      no: activations are
                    ConvInteger/MatMulInteger, activations quantized per batch    quantized too
real-int8-qdq       onnxruntime.quantization.quantize_static (QDQ), activations  no: ORT's own scales,
                    calibrated on the calibration feeds                          Q/DQ on op inputs
fp16                onnxruntime.transformers.float16 converter (fp16 weights     no: every op in fp16
                    and compute, float32 inputs/outputs)
real-matmulnbits    onnxruntime's MatMulNBitsQuantizer (round to nearest):       no: ORT's symmetric
                    MatMul/Gemm weights packed 4 or 8 bits in blocks along K,    grid is [-8, 7]; Conv
                    run by the MatMulNBits kernels; other layers stay float32    etc. stay float
==================  ==========================================================  =====================

Per config (uniform over the model unless noted):

* no config: fp32.
* WeightQuant / Quantize(weights only), bits ≤ 8: real-int8-weights (exact; widths below 8 sit in int8
  containers, so the file holds 8 bits per weight while `size_bytes` assumes packing; for a torch golden
  model a weight the ONNX exporter folds a batch norm into stays float32, listed in the manifest's
  quantization.left_float); 8 bits also
  real-int8-dynamic. Any mix of such per-layer configs (a MixedPrecisionPlan) → real-int8-weights.
  Weights wider than 8 bits: simulated only (no integer kernels; fp16 storage is a FloatCast).
* WeightQuant with group_size (group-wise scales), 4 or 8 bits, uniform: real-matmulnbits
  (`export_nbits`; the file's size on disk is the real packed size and its latency is ORT's 4-bit kernels'),
  else simulated-float. A graph with no MatMul/Gemm weight (a CNN of Conv layers only) falls back to the
  simulated-float export with the reason in the point's notes. Per-layer plans mixing group layers with
  8-bit layers stay as before (real-int8-weights, group layers left float; not yet passed to the quantizer).
* Quantize(weights 8-bit, activations 8-bit): real-int8-qdq (uniform only).
  Activations alone, or below 8 bits: simulated only (ORT's CPU kernels are 8-bit; quantize_static
  always quantizes weights too).
* FloatCast fp16: fp16 (uniform only). bf16: simulated only (no bf16 Conv/Gemm kernels on CPU).
* MagnitudePrune, LowRank: simulated-float *is* a deployable dense float32 model; it runs
  exactly as simulated, with the zeros / the dense low-rank product (no size or speed gain without a
  sparse or factorized runtime). ChannelPrune: the export removes the zeroed channels from the graph
  (`export_pruned`), so the file is smaller and runs fewer MACs (same outputs to float rounding). Prune or low-rank stages before a quantization are kept in every kind.
* NMSparsity (2:4): simulated-float, a dense float32 file; marked "needs sparse kernels" (no runtime here
  runs N:M kernels, so no speed or size gain is claimed).
* NoiseInjection: an analysis probe, not a model anyone deploys: not executable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

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
    Schedule,
    Stage,
    WeightQuant,
    stages_of,
)

ExportKind = Literal[
    "fp32",
    "simulated-float",
    "real-int8-weights",
    "real-int8-dynamic",
    "real-int8-qdq",
    "fp16",
    "real-matmulnbits",
]
EXPORT_KINDS: tuple[ExportKind, ...] = (
    "fp32",
    "simulated-float",
    "real-int8-weights",
    "real-int8-dynamic",
    "real-int8-qdq",
    "fp16",
    "real-matmulnbits",
)
EXACT_KINDS: frozenset[str] = frozenset({"fp32", "simulated-float", "real-int8-weights"})
"""Kinds whose file computes exactly what the simulation computes."""

RUNTIME = "onnxruntime CPUExecutionProvider"
NEEDS_SPARSE_KERNELS = "needs sparse kernels"

UNIFORM_ONLY: frozenset[str] = frozenset({"real-int8-dynamic", "real-int8-qdq", "fp16", "real-matmulnbits"})
"""Kinds made by whole-model converters: only when every compressible layer has the same config."""

FLOAT_NATIVE = (MagnitudePrune, ChannelPrune, NMSparsity, LowRank)
"""Stages whose result is an ordinary float32 model."""


@dataclass(frozen=True)
class RuntimeSupport:
    executable: bool
    real_kinds: tuple[ExportKind, ...]
    """Deployable export kinds, preferred first (empty when simulated only)."""
    notes: list[str] = field(default_factory=list)

    @property
    def preferred(self) -> ExportKind | None:
        return self.real_kinds[0] if self.real_kinds else None

    @property
    def matches_simulation(self) -> bool | None:
        return None if self.preferred is None else self.preferred in EXACT_KINDS

    @property
    def needs_sparse_kernels(self) -> bool:
        return any(
            note.startswith(NEEDS_SPARSE_KERNELS) or f": {NEEDS_SPARSE_KERNELS}" in note
            for note in self.notes
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "executable": self.executable,
            "needs_sparse_kernels": self.needs_sparse_kernels,
            "runtime": RUNTIME,
            "real_export": self.preferred,
            "real_kinds": list(self.real_kinds),
            "matches_simulation": self.matches_simulation,
            "runtime_note": "; ".join(self.notes),
        }


def _weight_quant(stage: Stage) -> WeightQuant | None:
    if isinstance(stage, Quantize):
        return stage.weights
    return stage if isinstance(stage, WeightQuant) else None


def _act_quant(stage: Stage) -> ActivationQuant | None:
    if isinstance(stage, Quantize):
        return stage.activations
    return stage if isinstance(stage, ActivationQuant) else None


def last_weight_quant(config: Config) -> tuple[int, WeightQuant] | None:
    """(stage index, WeightQuant) of the last weight quantization, when nothing after it changes
    weights (so the stored integers are the final weights); None otherwise."""
    stages = stages_of(config)
    found: tuple[int, WeightQuant] | None = None
    for index, stage in enumerate(stages):
        wq = _weight_quant(stage)
        if wq is not None:
            found = (index, wq)
        elif found is not None and not isinstance(stage, ActivationQuant | Quantize):
            return None  # a later stage rewrites the quantized weights
    return found


def float_part(config: Config) -> Config | None:
    """The stages of `config` that give an ordinary float32 model (prune, low rank), or None."""
    kept = tuple(stage for stage in stages_of(config) if isinstance(stage, FLOAT_NATIVE))
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Schedule(kept)


def config_kinds(config: Config) -> tuple[tuple[ExportKind, ...], list[str]]:
    """Deployable kinds of one config (as if applied to every layer), preferred first, and why not."""
    stages = stages_of(config)
    if any(isinstance(s, NoiseInjection) for s in stages):
        return (), ["noise injection is an analysis probe (quantization-like noise), not a deployable model"]
    casts = [s for s in stages if isinstance(s, FloatCast)]
    weights = [wq for s in stages if (wq := _weight_quant(s)) is not None]
    acts = [aq for s in stages if (aq := _act_quant(s)) is not None]
    if casts:
        if weights or acts:
            return (), ["a float cast combined with integer quantization has no runtime form"]
        if any(c.dtype == "bf16" for c in casts):
            return (), ["bf16: onnxruntime's CPU provider has no bf16 Conv/Gemm kernels; simulated only"]
        return ("fp16",), [
            "fp16: real fp16 compute (every op, not only layer outputs) differs from the simulation"
        ]
    if acts:
        if not weights:
            return (), [
                "activation-only quantization: quantize_static always quantizes weights; simulated only"
            ]
        wq, aq = weights[-1], acts[-1]
        if wq.bits != 8 or aq.bits != 8 or len(acts) > 1 or last_weight_quant(config) is None:
            return (), [f"{config.id}: onnxruntime's integer kernels need 8-bit weights and activations"]
        return ("real-int8-qdq",), [
            "int8 QDQ via onnxruntime.quantization.quantize_static: ORT chooses its own scales and quantizes "
            "op inputs, so its numbers differ from the simulation"
        ]
    if weights:
        found = last_weight_quant(config)
        if found is None:
            return (), [
                "weights are changed again after quantization; the integers are not the final weights"
            ]
        wq = found[1]
        if wq.group_size is not None:
            return _group_kinds(wq)
        if wq.bits > 8:
            return (), [f"{wq.bits}-bit weights: no integer kernels above 8 bits; simulated only"]
        notes = ["int8 weights + DequantizeLinear reproduce the simulation exactly"]
        if wq.bits < 8:
            notes.append(f"{wq.bits}-bit values stored in 8-bit containers (the file is not packed)")
            return ("real-int8-weights",), notes
        notes.append(
            "quantize_dynamic (int8 kernels, activations quantized per batch) is the faster alternative"
        )
        return ("real-int8-weights", "real-int8-dynamic"), notes
    if any(isinstance(s, NMSparsity) for s in stages):
        return ("simulated-float",), [
            f"{NEEDS_SPARSE_KERNELS}: N:M sparsity runs fast only on sparse tensor-core kernels (NVIDIA Ampere "
            "and later, cuSPARSELt / TensorRT); onnxruntime's CPU provider runs the dense float32 file, so no "
            "speed or size gain is claimed"
        ]
    if any(isinstance(s, ChannelPrune) for s in stages):
        return ("simulated-float",), [
            "a float32 model with the zeroed channels removed from the graph (export_pruned): onnxruntime runs "
            "it as simulated, with fewer parameters and MACs; layers the pass cannot follow stay dense "
            "(manifest structured_pruning)"
        ]
    return ("simulated-float",), [
        "a dense float32 model with zeroed / low-rank weights: onnxruntime runs it exactly as simulated "
        "(dense kernels: no speed-up, and the file keeps the dense size)"
    ]


def _group_kinds(wq: WeightQuant) -> tuple[tuple[ExportKind, ...], list[str]]:
    """Group-wise weights: MatMulNBits (4 or 8 bits) for the MatMul/Gemm layers, else the float file."""
    if wq.bits not in (4, 8):
        return ("simulated-float",), [
            f"{wq.bits}-bit groups: the MatMulNBits export is made for 4 and 8 bits; the simulated float32 "
            "file runs exactly as simulated (no packing, no low-bit kernel)"
        ]
    half = 1 << (wq.bits - 1)
    return ("real-matmulnbits", "simulated-float"), [
        f"MatMul/Gemm weights packed to {wq.bits} bits in blocks of {wq.group_size} by onnxruntime's "
        "MatMulNBitsQuantizer (round to nearest) and run by its MatMulNBits kernels; other layers (Conv...) stay "
        "float32 (manifest quantization.left_float)"
        + (
            f"; ORT's symmetric grid is [-{half}, {half - 1}] (scale = signed max / -{half}), the simulation's "
            f"[-{half - 1}, {half - 1}], so the numbers are close, not equal"
            if wq.symmetric
            else "; asymmetric blocks use the simulation's grid, so the file gives the simulated numbers (measured "
            "on the test's MLP block: the same KL to 16 digits)"
        )
    ]


def demote(support: RuntimeSupport, kind: str, why: str) -> RuntimeSupport:
    """The support without `kind` (its export found nothing to convert in this graph), with the reason."""
    kinds = tuple(k for k in support.real_kinds if k != kind)
    return RuntimeSupport(bool(kinds), kinds, [*support.notes, why])


def runtime_support(plan: Mapping[str, Config], layer_names: list[str]) -> RuntimeSupport:
    """What a real runtime can do with the model compressed by `plan` (layer → config)."""
    if not plan:
        return RuntimeSupport(True, ("fp32",), ["the golden model: fp32 in onnxruntime"])
    per_layer = {name: config_kinds(config) for name, config in plan.items()}
    if len({config.id for config in plan.values()}) == 1 and set(plan) == set(layer_names):
        kinds, why = next(iter(per_layer.values()))
        return RuntimeSupport(bool(kinds), kinds, list(why))
    # a per-layer plan: only conversions done layer by layer apply (layers outside the plan stay float)
    notes: list[str] = []
    layer_wise: list[set[str]] = []
    for name, (kinds, why) in per_layer.items():
        usable = {str(kind) for kind in kinds} - UNIFORM_ONLY
        layer_wise.append(usable)
        if not usable:
            notes.extend(f"{name}: {text}" for text in why)
    if any(not usable for usable in layer_wise):
        notes.append("per-layer plan: the dynamic / QDQ / fp16 converters need one config on every layer")
        return RuntimeSupport(False, (), notes)
    if any("real-int8-weights" in usable for usable in layer_wise):
        return RuntimeSupport(
            True,
            ("real-int8-weights",),
            ["per-layer int8 weights + DequantizeLinear reproduce the simulation"],
        )
    return RuntimeSupport(True, ("simulated-float",), ["a dense float32 model: runs exactly as simulated"])
