"""A fidelity job's per-layer profile: each matched layer's accumulated and local error, the kernel gap."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from backend.api.result_schemas.fidelity import ActivationShiftOut, LikelyCauseOut


class LayerStatsOut(BaseModel):
    cosine_mean: float | None = Field(
        description="Mean per-sample cosine of the layer's outputs; higher is better. None when the tensor "
        "is not batch-first or holds NaN/Inf."
    )
    cosine_min: float | None
    sqnr_db: float | None = Field(
        description="10·log10(Σ golden² / Σ (golden − compressed)²) over the dataset; higher is better. "
        "None when infinite (see sqnr_db_infinite) or undefined."
    )
    sqnr_db_infinite: bool = Field(description="True when the outputs are identical (SQNR = +∞).")


class LayerFidelityOut(BaseModel):
    name: str = Field(description="The golden model's tensor (ONNX) or module path (torch.export).")
    compressed_name: str
    op_type: str
    depth: int = Field(description="Position in the golden model's topological order of matched layers.")
    depth_fraction: float = Field(description="depth / (layers − 1): 0 at the input, 1 at the output.")
    accumulated: LayerStatsOut = Field(
        description="The compressed network up to this layer vs the golden one: the error carried so far."
    )
    local: LayerStatsOut | None = Field(
        description="This compressed layer alone, fed the golden layer's inputs: the error it adds."
    )
    local_note: str | None = None
    qdq_err: LayerStatsOut | None = Field(
        default=None,
        description="The compressed model's own quantizer at this tensor (QDQ ONNX only): the tensor entering "
        "its QuantizeLinear vs the output of the DequantizeLinear that follows, in the compressed model's own "
        "run (onnxruntime's qdq_loss_debug calls it qdq_err). None when the tensor is not re-quantized.",
    )
    qdq_input: str | None = Field(
        default=None, description="The compressed model's tensor entering that QuantizeLinear."
    )
    canonical_id: str | None = Field(
        default=None,
        description="The layer's one identity (torch module path when the model records it, else the node "
        "name), as on the model page and in sensitivity scans; null in profiles stored before it existed.",
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other names of the layer (tensor, ONNX node)."
    )
    match_method: str | None = Field(
        default=None,
        description="How the compressed layer was found: name_map, name, structure (graph alignment) or weights "
        "(weight similarity alone).",
    )
    match_confidence: float | None = Field(
        default=None, description="1 for names; the structural match score in [0, 1] otherwise."
    )
    shift: ActivationShiftOut | None = Field(
        default=None,
        description="Activation range, histograms, clipping, dead units; null in older profiles.",
    )


class KernelGapOut(BaseModel):
    """One model output: the profile's simulated quantization against the deployed runtime's int8 kernels."""

    output: str = Field(description="The golden model's output (also the profiled layer of that name).")
    compressed_output: str
    simulated_sqnr_db: float | None = Field(
        description="The profile's accumulated SQNR of the output layer: simulated quantization "
        "(quantize-dequantize in float, onnxruntime graph optimizations off). None when infinite or undefined."
    )
    simulated_sqnr_db_infinite: bool
    runtime_sqnr_db: float | None = Field(
        description="Output SQNR of the deployed runtime (onnxruntime's default optimizations: fused int8 "
        "kernels) over the same samples as the profile. None when infinite or undefined."
    )
    runtime_sqnr_db_infinite: bool
    gap_db: float | None = Field(
        description="simulated_sqnr_db − runtime_sqnr_db: positive when the runtime's kernels lose more than "
        "simulated quantization predicts. 0 when both are infinite; None when only one is, or undefined."
    )
    significant: bool = Field(
        description="gap_db > threshold_db and the runtime SQNR is below 60 dB (above it, gaps are float "
        "rounding). The profile's notes then say what it means and what to do (e.g. int8 kernels that "
        "saturate on x86-64 CPUs without VNNI: quantize with reduce_range=True or use U8U8)."
    )
    threshold_db: float
    note: str | None = Field(
        default=None,
        description="When significant: what the gap means and what to do (also among the profile's notes).",
    )


class LayerProfileOut(BaseModel):
    """Where in the network the compressed model starts to diverge."""

    job_id: uuid.UUID
    error: str | None = Field(
        default=None, description="Why no profile could be made (the output-level report still stands)."
    )
    n_samples: int = 0
    profile_batch_size: int = Field(
        default=0,
        description="The most samples the profile runs at once, chosen from the worker's memory budget "
        "(KNEEBOARD_PROFILE_MEMORY_BUDGET_MB) after a one-sample probe, independent of the job's batch_size "
        "(it may exceed the samples there are). 0 for profiles stored before it was recorded.",
    )
    not_applicable: str | None = Field(
        default=None,
        description="Why a per-layer comparison does not apply to these two models (no inner layer of the "
        "golden model has a counterpart: different architectures, e.g. a distilled student of another "
        "design); the layers then hold at most the model outputs. None when it applies, and in profiles "
        "stored before it existed.",
    )
    calibration_samples: int | None = Field(
        default=None,
        description="Calibration samples the layers' calibration ranges were taken over (the first ones of the "
        "job's calibration set); null without a calibration set, or when it could not be run (see notes).",
    )
    layers: list[LayerFidelityOut] = Field(default_factory=list)
    unmatched_golden: list[str] = Field(default_factory=list)
    unmatched_compressed: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    likely_causes: list[LikelyCauseOut] = Field(
        default_factory=list,
        description="Likely causes of the divergence, most severe first (score = value / threshold); empty "
        "when no layer crosses a threshold, and in profiles stored before they existed.",
    )
    kernel_gap: list[KernelGapOut] | None = Field(
        default=None,
        description="ONNX pairs: at each model output that is a profiled layer, the profile's simulated SQNR "
        "against the SQNR the deployed runtime measured on the same samples. The profile runs "
        "quantization simulated in float; a significant gap means the runtime's int8 kernels lose more "
        "than the per-layer numbers show. None when not computed (other formats, or jobs run before it "
        "existed).",
    )
