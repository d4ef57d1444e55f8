"""A sweep point's stored document (worker/engine/sweep: points.py, cost.py, runtime.py, export.py,
latency.py; assembled by worker/jobs/sweep.py) and the frontier's parts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from backend.api.result_schemas.common import (
    CalibrationSamplesOut,
    CompressionConfigOut,
    ResultModel,
    StoredShape,
)


class PointFidelityOut(ResultModel):
    """The point's fidelity on its primary output (worker/engine/sweep/golden.py ``fidelity_summary``)."""

    primary_output: str = ""
    output_kind: str = ""
    n_samples: int = 0
    kl_mean: float | None = Field(default=None, description="KL(P‖Q) mean in nats; lower is better.")
    kl_mean_bits: float | None = None
    kl_max: float | None = None
    kl_reverse_mean: float | None = None
    js_mean: float | None = None
    top1_agreement: float | None = None
    sqnr_db: float | None = Field(default=None, description="Null when infinite (see sqnr_db_infinite).")
    sqnr_db_infinite: bool = False
    cosine_mean: float | None = None
    mse: float | None = None
    max_abs_err: float | None = None
    label_flips: int | None = None
    accuracy_golden: float | None = None
    accuracy_compressed: float | None = None
    accuracy_drop_pp: float | None = None
    ece_golden: float | None = None
    ece_compressed: float | None = None
    f1_macro_vs_golden: float | None = Field(
        default=None,
        description="Classifiers: macro F1 with the golden model's predictions as truth (label-free).",
    )
    f1_macro_drop_pp: float | None = Field(
        default=None,
        description="Classifiers with labels: golden minus compressed macro F1, percentage points.",
    )
    borderline_agreement: float | None = Field(
        default=None, description="Classifiers: top-1 agreement on the golden model's lowest-margin decile."
    )
    task_metrics: dict[str, float | None] | None = Field(
        default=None,
        description="The task block's top-level numbers (e.g. miou_drop, wer_delta, psnr_drop_db), each also "
        "the point's objective task.<name>.",
    )
    n_flagged: int | None = None
    warnings: list[str] = Field(default_factory=list)


class TensorCostOut(ResultModel):
    name: str
    role: str = Field(default="", description="weight or bias.")
    elements: int = 0
    bits: int | None = None
    stored_elements: int = 0
    kept: int = 0
    nonzero: int = 0
    bytes: int = 0
    quant_param_bytes: int = 0
    sparse_bytes: int = 0


class LayerCostOut(ResultModel):
    name: str
    type: str = ""
    config: str | None = Field(default=None, description="Configuration id applied to the layer.")
    weight_bits: int | None = None
    activation_bits: int | None = None
    params: int = 0
    params_kept: int = 0
    size_bytes: float | None = None
    macs: int | None = None
    macs_effective: int | None = None
    bops: int | None = None
    bops_effective: int | None = None
    tensors: list[TensorCostOut] = Field(default_factory=list)


class PrunedLayerOut(ResultModel):
    layer: str = ""
    channels: int = 0
    removed: int = Field(default=0, description="Output channels removed from the exported file.")
    group: list[str] = Field(default_factory=list, description="Layers pruned together (a residual group).")


class DenseLayerOut(ResultModel):
    layer: str = ""
    zero_channels: int = 0
    reason: str = Field(default="", description="Why its zeroed channels stay in the exported file.")


class StructuredPruningOut(ResultModel):
    """Channels physically removed from a channel-pruned point's export, counted on the file."""

    applied: bool = False
    params_dense: int | None = None
    params: int | None = None
    macs_dense: int | None = None
    macs: int | None = None
    bytes_dense: int | None = None
    bytes: int | None = None
    pruned: list[PrunedLayerOut] = Field(default_factory=list)
    left_dense: list[DenseLayerOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PointCostOut(ResultModel):
    """Size and compute of the compressed model (simulated storage: bits × kept elements + quantizer
    parameters; dense fp32 outside the compressible layers)."""

    size_bytes: float | None = None
    size_bytes_fp32: float | None = None
    size_bytes_sparse: float | None = None
    compression_ratio: float | None = None
    quant_param_bytes: float | None = None
    params_total: int | None = None
    params_kept: int | None = None
    params_nonzero: int | None = None
    other_params: int | None = None
    macs: int | None = None
    macs_effective: int | None = None
    bops: int | None = None
    bops_effective: int | None = None
    bops_fp32: int | None = None
    params_kept_simulated: int | None = Field(
        default=None,
        description="Channel pruning: the simulation's count, before the export removed channels.",
    )
    structured_pruning: StructuredPruningOut | None = Field(
        default=None,
        description="Channel pruning: what the export removed (params_kept, MACs and size are the file's).",
    )
    notes: list[str] = Field(default_factory=list)
    layers: list[LayerCostOut] | None = Field(default=None, description="Per layer; null when not stored.")


class RuntimeSupportOut(ResultModel):
    """Whether a real runtime runs the point, and in which form."""

    executable: bool | None = None
    needs_sparse_kernels: bool | None = Field(
        default=None, description="N:M sparsity: fast only on sparse kernels; no speed or size is claimed."
    )
    runtime: str | None = None
    real_export: str | None = Field(default=None, description="The runtime form, e.g. real-int8-qdq.")
    real_kinds: list[str] = Field(default_factory=list)
    matches_simulation: bool | None = None
    runtime_note: str | None = None


class QuantizationOut(StoredShape):
    """How the export was quantized: the fields depend on the method."""

    method: str | None = None
    weights: list[str] | None = None
    left_float: list[str] | None = None
    keep_io_types: bool | None = None
    weight_type: str | None = None
    activation_type: str | None = None
    per_channel: bool | None = None
    activations: str | None = None
    calibrate_method: str | None = None
    calibration_samples: int | None = None
    algorithm: str | None = Field(
        default=None, description="real-matmulnbits: the quantizer's algorithm config."
    )
    bits: int | None = Field(default=None, description="real-matmulnbits: 4 or 8.")
    block_size: int | None = Field(default=None, description="real-matmulnbits: weights per block along K.")
    symmetric: bool | None = None
    accuracy_level: int | None = Field(
        default=None,
        description="real-matmulnbits: the MatMulNBits accuracy_level (null: the kernel default).",
    )
    gemm_rewritten: list[str] | None = Field(
        default=None,
        description="real-matmulnbits: Gemm nodes rewritten as MatMul (+ Add) for the quantizer.",
    )
    embeddings: list[str] | None = Field(
        default=None,
        description="real-matmulnbits: embedding Gathers packed as GatherBlockQuantized (opt-in).",
    )


class ExportMetricsOut(ResultModel):
    simulated: PointFidelityOut | None = Field(default=None, description="The point's simulated fidelity.")
    measured: PointFidelityOut | None = Field(default=None, description="The exported file in onnxruntime.")


class ExportManifestOut(ResultModel):
    """An exported ONNX file of a point (also manifest.json in the download)."""

    format: str = ""
    file: str = ""
    kind: str = Field(
        default="", description="simulated-float, real-int8-weights, real-int8-qdq, fp16, real-matmulnbits..."
    )
    point_id: str = ""
    config: CompressionConfigOut | None = None
    plan: dict[str, CompressionConfigOut] | None = None
    source_sha256: str | None = None
    source_sha256_of: str | None = None
    file_sha256: str | None = None
    file_size_bytes: int | None = None
    size_bytes: float | None = None
    size_bytes_fp32: float | None = None
    matches_simulation: bool | None = None
    quantization: QuantizationOut | None = None
    structured_pruning: StructuredPruningOut | None = Field(
        default=None,
        description="Channel pruning: the channels removed from this file, and the layers left dense.",
    )
    metrics: ExportMetricsOut | None = None
    onnxruntime_version: str | None = None
    opset: int | None = None
    notes: list[str] = Field(default_factory=list)
    source_model_sha256: str | None = Field(
        default=None, description="The uploaded model's sha256 (the stored manifest of the chosen export)."
    )
    calibration: CalibrationSamplesOut | None = Field(
        default=None, description="The samples that calibrated it (the stored manifest); null: none needed."
    )


class LatencyEnvironmentOut(ResultModel):
    runtime: str | None = None
    onnxruntime_version: str | None = None
    provider: str | None = None
    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    graph_optimization: str | None = None
    machine: str | None = None
    processor: str | None = None
    cpu_count: int | None = None
    load_average_1m: float | None = None


class LatencySettingsOut(ResultModel):
    batch_sizes: list[int] = Field(default_factory=list)
    warmup: int | None = None
    repeats: int | None = None
    interleaved: bool | None = None
    inputs: str | None = None


class LatencyBatchOut(ResultModel):
    batch_size: int
    p50_ms: float | None = None
    p90_ms: float | None = None
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    per_sample_p50_ms: float | None = None
    warmup: int | None = None
    repeats: int | None = None


class PointLatencyOut(ResultModel):
    """The chosen export timed in onnxruntime (bench-style: warm-up, then repeats)."""

    environment: LatencyEnvironmentOut | None = None
    settings: LatencySettingsOut | None = None
    file: str | None = None
    file_size_bytes: int | None = None
    session_load_ms: float | None = None
    batches: list[LatencyBatchOut] = Field(default_factory=list)


class PointMemoryOut(ResultModel):
    """The chosen export's run-time memory: the peak RSS of a child process running it in onnxruntime."""

    method: str | None = None
    file: str | None = None
    batch_size: int | None = None
    runs: int | None = None
    threads: int | None = None
    peak_rss_mib: float | None = Field(default=None, description="The child's peak resident memory (VmHWM).")
    baseline_rss_mib: float | None = Field(
        default=None, description="Its resident memory before the session: the interpreter and onnxruntime."
    )
    session_mib: float | None = Field(
        default=None, description="peak − baseline: what loading and running the model needs."
    )
    after_load_rss_mib: float | None = None
    peak_reset: bool | None = Field(
        default=None, description="Whether the peak was reset after the imports (else it covers them too)."
    )
    load_ms: float | None = None
    run_ms: float | None = None
    wall_s: float | None = Field(
        default=None, description="The whole measurement, interpreter start included."
    )


class AttributionFidelityOut(ResultModel):
    kl_mean: float | None = None
    mse: float | None = None
    top1_agreement: float | None = None
    accuracy_compressed: float | None = None


class AttributionEvaluationOut(ResultModel):
    techniques: list[int] = Field(description="Indexes into `techniques` applied together (in their order).")
    fidelity: AttributionFidelityOut


class AttributionTechniqueOut(ResultModel):
    label: str = Field(description='A readable name, e.g. "prune 50 %" or "8-bit activations (minmax)".')
    config: CompressionConfigOut


class PointAttributionOut(ResultModel):
    """How much of a combined configuration's divergence each technique causes
    (worker/engine/sweep/attribution.py). Lists are indexed like `techniques`; null values are
    divergences that were not finite."""

    metric: str = Field(description="The split figure of `fidelity`: kl_mean (classification) or mse.")
    techniques: list[AttributionTechniqueOut] = Field(description="In the order they are applied.")
    total: float | None = Field(description="The whole configuration's value.")
    alone: list[float | None] = Field(description="Technique i applied alone.")
    cumulative: list[float | None] = Field(description="Techniques 0..i applied in order; the last is total.")
    leave_one_out: list[float | None] = Field(description="Every technique but i.")
    interaction: float | None = Field(
        description="total − Σ alone: > 0 the techniques compound, < 0 they overlap."
    )
    evaluations: list[AttributionEvaluationOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class SlowerThanBiggerOut(ResultModel):
    """A point whose measured p50 exceeds that of a point with a larger exported file, beyond noise
    (worker/engine/sweep/latency_flags.py): more than 5 % and above the bigger point's p90."""

    than: str = Field(description="The bigger point's label.")
    ratio: float = Field(description="This point's p50 over the bigger point's, at batch_size.")
    batch_size: int
    p50_ms: float
    than_p50_ms: float
    file_size_bytes: int
    than_file_size_bytes: int


class SweepPointDocOut(ResultModel):
    """Everything measured for one point."""

    id: str = Field(default="", description="The configuration's id.")
    config: CompressionConfigOut | None = None
    plan: dict[str, CompressionConfigOut] | None = Field(
        default=None, description="Mixed precision: layer → configuration."
    )
    fidelity: PointFidelityOut | None = Field(
        default=None,
        description="The figures the frontier objectives use: the deployed file's measured ones when "
        "fidelity_source is measured, else the simulation's.",
    )
    fidelity_simulated: PointFidelityOut | None = Field(
        default=None,
        description="The simulation's figures when `fidelity` is measured on the deployed file (the gap "
        "between the two); null when `fidelity` is itself the simulation.",
    )
    fidelity_source: Literal["measured", "simulated"] | None = Field(
        default=None,
        description="measured: `fidelity` is the chosen export (the file timed) run in onnxruntime; simulated: "
        "no runnable export was measured. Null on points stored before the field existed.",
    )
    fidelity_export_kind: str | None = Field(
        default=None, description="The kind of the file `fidelity` was measured on (e.g. real-matmulnbits)."
    )
    fidelity_note: str | None = Field(default=None, description="Where `fidelity` comes from, in words.")
    cost: PointCostOut | None = None
    runtime: RuntimeSupportOut | None = None
    exports: list[ExportManifestOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    latency: PointLatencyOut | None = None
    memory: PointMemoryOut | None = Field(
        default=None, description="Run-time memory of the chosen export; null when it was not measured."
    )
    slower_than_bigger: SlowerThanBiggerOut | None = Field(
        default=None,
        description="Set when a point with a larger exported file runs faster beyond noise (e.g. 4-bit weights "
        "on kernels slower than the int8 or fp32 ones); null otherwise or when not timed.",
    )
    attribution: PointAttributionOut | None = Field(
        default=None,
        description="Cause attribution; null for a single technique or when the sweep had it off.",
    )
    calibration: CalibrationSamplesOut | None = Field(
        default=None,
        description="Which samples calibrated the point's activation ranges (disjoint from the evaluated "
        "ones); null when the point quantizes no activation.",
    )


class FrontierObjectiveOut(ResultModel):
    name: str
    direction: str = Field(description="min or max.")


class FrontierConstraintOut(ResultModel):
    objective: str
    at_least: float | None = None
    at_most: float | None = None
