"""The fidelity summary (GET /jobs/{id}/fidelity → summary), per output and per metric family, as the
worker writes it (worker/engine/fidelity/compare.py ``summary_dict``; the metrics in worker/engine/metrics)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from backend.api.result_schemas.common import ResultModel
from backend.api.result_schemas.task_blocks import TensorTaskOut


class ProbabilityFlags(ResultModel):
    """Whether each model's output was taken as probabilities (else logits); null when not decided."""

    golden: bool | None = None
    compressed: bool | None = None


class LabelFlipOut(ResultModel):
    index: int = Field(description="Sample index.")
    golden: int = Field(description="The golden model's top-1 class.")
    compressed: int = Field(description="The compressed model's top-1 class.")


class LabelFlipsOut(ResultModel):
    count: int = 0
    stored: int = 0
    capped: bool = Field(default=False, description="More flips than were stored (items is a prefix).")
    items: list[LabelFlipOut] = Field(default_factory=list)


class CalibrationBinOut(ResultModel):
    lower: float
    upper: float
    count: int = 0
    confidence: float | None = Field(default=None, description="Mean confidence in the bin; null when empty.")
    accuracy: float | None = Field(default=None, description="Accuracy in the bin; null when empty.")


class CalibrationOut(ResultModel):
    """Reliability of one model's confidences (15 equal-width bins)."""

    ece: float | None = None
    mce: float | None = None
    n: int = 0
    bins: list[CalibrationBinOut] = Field(default_factory=list)


class CalibrationPairOut(ResultModel):
    golden: CalibrationOut | None = None
    compressed: CalibrationOut | None = None
    ece_shift: float | None = Field(default=None, description="ECE(compressed) − ECE(golden).")


class LabelMetricsOut(ResultModel):
    """Accuracy against the dataset's labels (classification outputs of a labelled dataset)."""

    n: int = 0
    golden_top1_accuracy: float | None = None
    compressed_top1_accuracy: float | None = None
    top1_accuracy_drop_pp: float | None = Field(
        default=None, description="Percentage points; lower is better."
    )
    golden_topk_accuracy: float | None = None
    compressed_topk_accuracy: float | None = None
    topk_accuracy_drop_pp: float | None = None
    calibration: CalibrationPairOut | None = None


class TaskSummaryOut(ResultModel):
    """A classifier's task scores in brief (the full scores are in GET /jobs/{id}/fidelity/classes)."""

    f1_macro_vs_golden: float | None = Field(
        default=None,
        description="Label-free: macro F1 of the compressed model with the golden model's predictions as truth; "
        "higher is better.",
    )
    borderline_agreement: float | None = Field(
        default=None,
        description="Top-1 agreement on the golden model's lowest-margin decile; higher is better.",
    )
    golden_f1_macro: float | None = Field(
        default=None, description="Against the labels; null without labels."
    )
    compressed_f1_macro: float | None = None
    f1_macro_drop_pp: float | None = Field(
        default=None,
        description="Golden minus compressed macro F1 against the labels, percentage points; lower is better.",
    )


class _OutputMetrics(ResultModel):
    """What every output gets: shapes, finiteness and the numerical error metrics."""

    compressed_output: str = Field(default="", description="The compressed model's matched output.")
    per_sample_shape: list[int] = Field(default_factory=list)
    n_samples: int = 0
    n_finite: int = Field(default=0, description="Samples finite in both models (the metrics' samples).")
    n_nonfinite_golden: int = 0
    n_nonfinite_compressed: int = 0
    mse: float | None = None
    mae: float | None = None
    max_abs_err: float | None = None
    sqnr_db: float | None = Field(
        default=None,
        description="Dataset SQNR in dB; null when infinite (see sqnr_db_infinite) or undefined.",
    )
    sqnr_db_infinite: bool = Field(default=False, description="True when every error is exactly 0 (+∞ dB).")
    cosine_mean: float | None = None
    cosine_min: float | None = None


class ClassificationMetricsOut(_OutputMetrics):
    """A classifier's output (logits or probabilities): the divergences in nats and bits, agreement,
    confidence, label flips, and accuracy with calibration when the dataset has labels."""

    kind: Literal["classification"] = "classification"
    outputs_are_probabilities: ProbabilityFlags | None = None
    num_classes: int | None = None
    kl_mean_nats: float | None = Field(default=None, description="KL(P‖Q), golden P; lower is better.")
    kl_mean_bits: float | None = None
    kl_reverse_mean_nats: float | None = None
    kl_reverse_mean_bits: float | None = None
    js_mean_nats: float | None = None
    js_mean_bits: float | None = None
    cross_entropy_mean_nats: float | None = None
    cross_entropy_mean_bits: float | None = None
    entropy_golden_mean_nats: float | None = None
    entropy_golden_mean_bits: float | None = None
    entropy_compressed_mean_nats: float | None = None
    entropy_compressed_mean_bits: float | None = None
    kl_max_nats: float | None = None
    tv_mean: float | None = None
    top_k: int | None = None
    top1_match: float | None = Field(default=None, description="Share of samples with the same top-1 class.")
    topk_agreement: float | None = None
    topk_overlap: float | None = None
    confidence_mean_golden: float | None = None
    confidence_mean_compressed: float | None = None
    confidence_shift: float | None = None
    label_flips: LabelFlipsOut | None = None
    labels: LabelMetricsOut | None = Field(default=None, description="Null without labels.")
    task: TaskSummaryOut | None = Field(
        default=None, description="Task scores; null for jobs run before them."
    )


class RegressionMetricsOut(_OutputMetrics):
    kind: Literal["regression"] = "regression"
    r2: float | None = Field(default=None, description="R² of the compressed outputs, golden as the target.")


class EmbeddingMetricsOut(_OutputMetrics):
    kind: Literal["embedding"] = "embedding"
    nearest_neighbour_agreement: float | None = Field(
        default=None, description="Share of samples whose nearest other sample is the same in both spaces."
    )
    nearest_neighbour_metric: str | None = None


class TensorMetricsOut(_OutputMetrics):
    """Any other output shape: the numerical metrics, and the task's scores when the job asked for a task that
    reads such outputs (image, segmentation, ctc, detection, language_model)."""

    kind: Literal["tensor"] = "tensor"
    task: TensorTaskOut | None = Field(
        default=None,
        description="With task 'image': PSNR and SSIM; 'segmentation': IoU and boundary F1; 'ctc': WER and CER; "
        "'detection': COCO mAP; 'language_model': next-token KL, agreement and perplexity; 'signal': SNR and "
        "SI-SDR.",
    )


def _metric_family(doc: Any) -> str:
    """The family of a stored output's metrics: its kind, or (a document without one) what its fields say."""
    if not isinstance(doc, dict):
        return str(getattr(doc, "kind", "tensor"))
    kind = doc.get("kind")
    if kind in ("classification", "regression", "embedding", "tensor"):
        return str(kind)
    if "kl_mean_nats" in doc:
        return "classification"
    if "r2" in doc:
        return "regression"
    return "embedding" if "nearest_neighbour_agreement" in doc else "tensor"


OutputMetricsOut = Annotated[
    Annotated[ClassificationMetricsOut, Tag("classification")]
    | Annotated[RegressionMetricsOut, Tag("regression")]
    | Annotated[EmbeddingMetricsOut, Tag("embedding")]
    | Annotated[TensorMetricsOut, Tag("tensor")],
    Discriminator(_metric_family),
]


class ConcentrationOut(ResultModel):
    """Share of the total divergence carried by the worst 1% and 10% of samples."""

    measure: str = Field(default="kl", description="kl (classification) or mse.")
    n: int = 0
    rule: str = ""
    worst_1pct_share: float | None = None
    worst_10pct_share: float | None = None
    verdict: str = Field(default="uniform", description="uniform or concentrated.")


class PerSampleSummaryOut(ResultModel):
    output: str = Field(default="", description="The output the per-sample table was written for.")
    n_flagged: int | None = None
    threshold_kl: float | None = None
    flag_rule: str | None = None
    concentration: ConcentrationOut | None = None


TaskOptionValue = str | int | float | bool | list[str] | list[float] | None
"""A task option is flat: a name, a number, a switch, or a list of names (a vocabulary) or numbers."""


class FidelityParamsOut(ResultModel):
    """The engine parameters the comparison ran with."""

    batch_size: int | None = None
    top_k: int | None = None
    threshold_kl: float | None = None
    task: str | None = None
    outputs_are_probabilities: bool | None = None
    flip_confidence: float | None = Field(
        default=None, description="Probability both models reach for a top-1 flip to count as confident."
    )
    pooling: str | None = Field(default=None, description="How sequence outputs are pooled: mean or first.")
    image_data_range: float | None = Field(
        default=None, description="Task 'image': the pictures' value range."
    )
    task_options: dict[str, TaskOptionValue] | None = Field(
        default=None, description="The options the job gave its task (which outputs it reads, thresholds)."
    )


class JobResourcesOut(ResultModel):
    """What the job cost its worker's pool process."""

    peak_rss_mib: float | None = Field(
        default=None, description="Peak resident memory of the job (MiB); null where the system cannot tell."
    )
    compare_s: float | None = Field(default=None, description="Seconds of the output comparison.")
    job_s: float | None = Field(
        default=None, description="Seconds of the whole job, before its results were written."
    )
    batch_size: int | None = Field(
        default=None,
        description="Samples per pass of the comparison (fewer than asked for large activations).",
    )


class FidelitySummaryOut(ResultModel):
    """The whole comparison: per output name its metrics, and the per-sample table's summary."""

    n_samples: int = 0
    n_finite: int = Field(default=0, description="Samples finite in every output.")
    primary_output: str = ""
    output_matching: str = Field(default="name", description="name, or position when the names differ.")
    outputs: dict[str, OutputMetricsOut] = Field(default_factory=dict)
    per_sample_summary: PerSampleSummaryOut | None = None
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    params: FidelityParamsOut | None = None
    resources: JobResourcesOut | None = Field(
        default=None, description="Null for jobs run before it was measured."
    )


class ActivationHistogramOut(ResultModel):
    """Equal-width bins over [lower, upper] (the golden range of the profile's first batch), shared by
    both models; the last bin includes `upper`. Values outside are counted in *_below / *_above."""

    lower: float = 0.0
    upper: float = 0.0
    golden: list[int] = Field(default_factory=list)
    compressed: list[int] = Field(default_factory=list)
    golden_below: int = 0
    golden_above: int = 0
    compressed_below: int = 0
    compressed_above: int = 0
    n_counted: int = Field(
        default=0,
        description="Values counted per model: of each batch every ceil(values / 4096)-th, so all of them in "
        "small layers.",
    )


class ActivationShiftOut(ResultModel):
    """How a layer's activations shift from the golden to the compressed model, over the profiled samples.
    Rates are shares in [0, 1]; null when they do not apply."""

    n_values: int = Field(default=0, description="Activation values per model (samples × elements).")
    golden_min: float | None = None
    golden_max: float | None = None
    compressed_min: float | None = None
    compressed_max: float | None = None
    histogram: ActivationHistogramOut | None = Field(
        default=None, description="Null when the first batch's range was not finite."
    )
    quantizer_min: float | None = Field(
        default=None,
        description="Lowest value the compressed layer's QuantizeLinear represents ((qmin − zero point) × "
        "scale); null without a QDQ quantizer at the layer.",
    )
    quantizer_max: float | None = None
    clip_rate: float | None = Field(
        default=None,
        description="Share of the compressed model's values entering the quantizer that saturate (more than half "
        "a step outside its range), leaving out the side the layer's own Relu/Clip clamps. Null without a "
        "quantizer.",
    )
    golden_outside_rate: float | None = Field(
        default=None,
        description="Share of the golden model's values at the layer outside the quantizer's range.",
    )
    dead_unit_rate: float | None = Field(
        default=None,
        description="ReLU-family layers: among golden values > 0, the share exactly 0 in the compressed model.",
    )
    golden_positive: int | None = Field(default=None, description="Golden values > 0 (ReLU-family layers).")
    dead_channels: int | None = Field(
        default=None,
        description="ReLU-family layers with a channel axis (axis 1): channels positive somewhere in the golden "
        "model and 0 everywhere in the compressed one, over the profiled samples.",
    )
    active_channels: int | None = Field(
        default=None, description="Channels positive somewhere in the golden model."
    )
    error_amplification: float | None = Field(
        default=None,
        description="Accumulated error power / local error power: 1 when the layer's own error is all there "
        "is, large when error from earlier layers dominates. Null without a local value.",
    )
    calibration_outside_rate: float | None = Field(
        default=None,
        description="Share of the evaluation set's golden values outside [calibration_min, calibration_max], "
        "the golden layer's range on the job's calibration set ((calibration_below + calibration_above) / "
        "n_values; NaN is never outside). Null when the job has no calibration set or it could not be run "
        "(the profile's notes say why).",
    )
    calibration_min: float | None = Field(
        default=None, description="Lowest golden value of the layer on the calibration set."
    )
    calibration_max: float | None = Field(
        default=None, description="Highest golden value of the layer on the calibration set."
    )
    calibration_below: int | None = Field(
        default=None, description="Evaluation golden values below calibration_min."
    )
    calibration_above: int | None = Field(
        default=None, description="Evaluation golden values above calibration_max."
    )


class LikelyCauseOut(ResultModel):
    """One likely cause of the divergence, with the numbers behind it."""

    kind: Literal["clipping", "dead_units", "error_growth", "local_error", "calibration_range"] = (
        "local_error"
    )
    layer: str = Field(default="", description="The golden layer's name (the profile row).")
    label: str = Field(default="", description="How the message names the layer (its canonical id).")
    to_layer: str | None = Field(default=None, description="error_growth: the layer the error grows to.")
    value: float | None = Field(default=None, description="The measure compared with the threshold.")
    threshold: float = 0.0
    score: float | None = Field(default=None, description="value / threshold: the ranking key (≥ 1).")
    message: str = ""
    numbers: dict[str, float] = Field(default_factory=dict, description="The figures the message quotes.")
