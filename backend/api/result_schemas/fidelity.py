"""The fidelity summary (GET /jobs/{id}/fidelity → summary), per output and per metric family, as the
worker writes it (worker/engine/fidelity/compare.py ``summary_dict``; the metrics in worker/engine/metrics)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from backend.api.result_schemas.common import ResultModel


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


class ImageScoresOut(ResultModel):
    psnr_db_mean: float | None = Field(
        default=None, description="Mean over samples, +∞ (identical) left out."
    )
    psnr_db_min: float | None = None
    n_identical: int = Field(default=0, description="Samples whose pictures are identical (PSNR +∞).")
    ssim_mean: float | None = None
    ssim_min: float | None = None


class ImageTargetsOut(ResultModel):
    golden: ImageScoresOut
    compressed: ImageScoresOut
    psnr_drop_db: float | None = Field(
        default=None, description="Golden minus compressed mean PSNR; lower is better."
    )
    ssim_drop: float | None = Field(
        default=None, description="Golden minus compressed mean SSIM; lower is better."
    )


class ImageTaskOut(ResultModel):
    """Task 'image': PSNR and SSIM (torchmetrics) of the compressed pictures against the golden model's, and of
    both against the dataset's 'targets' when it has them."""

    name: Literal["image"] = "image"
    data_range: float = 1.0
    psnr_db_vs_golden: float | None = None
    ssim_vs_golden: float | None = None
    against_golden: ImageScoresOut = Field(default_factory=ImageScoresOut)
    against_targets: ImageTargetsOut | None = Field(
        default=None, description="Null without a 'targets' array."
    )
    psnr_drop_db: float | None = None
    ssim_drop: float | None = None


class SegmentationScoresOut(ResultModel):
    """One model's label maps against one truth; fractions in [0, 1], null when undefined."""

    miou: float | None = Field(
        default=None, description="Mean IoU over the classes in the truth or the prediction."
    )
    pixel_accuracy: float | None = None
    per_class_iou: list[float | None] = Field(
        default_factory=list,
        description="IoU per class index; null for a class in neither the truth nor the prediction.",
    )
    boundary_f1: float | None = Field(
        default=None, description="Mean over images of the boundary F1 at the job's pixel tolerance."
    )


class SegmentationMasksOut(ResultModel):
    golden: SegmentationScoresOut
    compressed: SegmentationScoresOut
    miou_drop: float | None = Field(
        default=None,
        description="Golden minus compressed mIoU, a fraction (0.01 = one point); lower is better.",
    )
    pixel_accuracy_drop: float | None = None
    boundary_f1_drop: float | None = None
    n_ignored_pixels: int = Field(default=0, description="Mask pixels equal to ignore_index, left out.")


class SegmentationTaskOut(ResultModel):
    """Task 'segmentation' (worker/engine/tasks/segmentation.py): the compressed label maps against the golden
    model's (label-free), and both models against the dataset's 'masks' when it has them."""

    name: Literal["segmentation"] = "segmentation"
    output: str = Field(default="", description="The output read as the segmentation.")
    output_form: Literal["logits", "labels"] = Field(
        default="logits",
        description="logits (N, C, H, W), decoded by argmax over C, or label maps (N, H, W).",
    )
    num_classes: int = 0
    ignore_index: int = 255
    boundary_tolerance: int = Field(default=2, description="Pixels a boundary may be off and still match.")
    miou_vs_golden: float | None = Field(
        default=None,
        description="Label-free mIoU of the compressed label maps, golden as truth; higher is better.",
    )
    pixel_agreement: float | None = Field(
        default=None, description="Share of pixels where both models predict the same class."
    )
    boundary_f1_vs_golden: float | None = None
    against_golden: SegmentationScoresOut = Field(default_factory=SegmentationScoresOut)
    against_masks: SegmentationMasksOut | None = Field(
        default=None, description="Null without a 'masks' array."
    )
    miou_drop: float | None = Field(
        default=None,
        description="Golden minus compressed mIoU against the masks, a fraction (0.01 = one point); lower is "
        "better; null without masks.",
    )
    pixel_accuracy_drop: float | None = None
    boundary_f1_drop: float | None = None


class CtcScoresOut(ResultModel):
    """One model's transcripts against one set of references (jiwer; rates are fractions, 0.01 = one point)."""

    wer: float | None = Field(default=None, description="Corpus WER: (S + D + I) / reference words.")
    cer: float | None = Field(default=None, description="Corpus CER over characters, spaces included.")
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    hits: int = 0
    n_reference_words: int = 0
    char_substitutions: int = 0
    char_deletions: int = 0
    char_insertions: int = 0
    n_reference_chars: int = 0
    exact_match: float | None = Field(
        default=None, description="Share of utterances transcribed identically."
    )
    n_utterances: int = 0


class CtcTranscriptsOut(ResultModel):
    golden: CtcScoresOut
    compressed: CtcScoresOut
    wer_delta: float | None = Field(
        default=None, description="Compressed minus golden WER, a fraction; lower is better."
    )
    cer_delta: float | None = None


class CtcTaskOut(ResultModel):
    """Task 'ctc' (worker/engine/tasks/ctc.py): greedy-decoded transcripts of the compressed model against the
    golden model's (label-free), and both models against the dataset's 'transcripts' when it has them."""

    name: Literal["ctc"] = "ctc"
    output: str = Field(default="", description="The output read as frame logits (T, V).")
    vocabulary_size: int = 0
    blank: int = 0
    word_delimiter: str = Field(default=" ", description="The token string decoded as a space between words.")
    wer_vs_golden: float | None = Field(
        default=None, description="Label-free WER of the compressed transcripts, golden as the references."
    )
    cer_vs_golden: float | None = None
    exact_match_vs_golden: float | None = Field(
        default=None, description="Share of utterances both models transcribe identically."
    )
    against_golden: CtcScoresOut = Field(default_factory=CtcScoresOut)
    against_transcripts: CtcTranscriptsOut | None = Field(
        default=None, description="Null without a 'transcripts' array."
    )
    wer_delta: float | None = Field(
        default=None,
        description="Compressed minus golden WER against the transcripts, a fraction; lower is better; null "
        "without transcripts.",
    )
    cer_delta: float | None = None


class DetectionClassOut(ResultModel):
    class_index: int
    n_truth: int = Field(default=0, description="Truth boxes of this class.")
    ap: float | None = Field(default=None, description="AP@[.5:.95]; null when the class has no truth box.")
    ap50: float | None = None


class DetectionScoresOut(ResultModel):
    """COCO box metrics (faster-coco-eval, equal to pycocotools) of one model's detections against a truth;
    null where COCO leaves a metric undefined (no truth box of that size or at all)."""

    map: float | None = Field(default=None, description="mAP@[.5:.95], 0 to 1.")
    map50: float | None = None
    map75: float | None = None
    map_small: float | None = Field(default=None, description="Boxes under 32² pixels.")
    map_medium: float | None = None
    map_large: float | None = Field(default=None, description="Boxes of 96² pixels or more.")
    ar100: float | None = Field(default=None, description="Recall@[.5:.95] with 100 detections per image.")
    per_class: list[DetectionClassOut] = Field(default_factory=list)
    n_truth: int = 0
    n_detections: int = 0


class DetectionLabelsOut(ResultModel):
    golden: DetectionScoresOut
    compressed: DetectionScoresOut


class DetectionCountsOut(ResultModel):
    golden: int = 0
    compressed: int = 0


class DetectionTaskOut(ResultModel):
    """Task 'detection': both models' outputs decoded into boxes (post-NMS outputs, or a YOLO head through
    class-wise NMS) and scored by COCO mAP against the dataset's gt_boxes / gt_labels and label-free against
    the golden model's detections (worker/engine/tasks/detection.py)."""

    name: Literal["detection"] = "detection"
    format: Literal["post_nms", "yolo"] = "post_nms"
    box_format: Literal["xyxy", "xywh"] = "xyxy"
    score_threshold: float = 0.0
    iou_threshold: float = 0.45
    head_output: str | None = None
    boxes_output: str | None = None
    scores_output: str | None = None
    labels_output: str | None = None
    count_output: str | None = None
    image_size: list[float] | None = Field(default=None, description="[height, width]; null: not clipped.")
    n_images: int = 0
    detections: DetectionCountsOut = Field(default_factory=DetectionCountsOut)
    invalid_boxes: DetectionCountsOut = Field(
        default_factory=DetectionCountsOut,
        description="Rows dropped as NaN/Inf or without area inside the image.",
    )
    images_capped: DetectionCountsOut = Field(
        default_factory=DetectionCountsOut, description="Images with more candidates than NMS takes."
    )
    map_vs_golden: float | None = Field(
        default=None, description="mAP@[.5:.95] of the compressed detections, the golden ones as truth."
    )
    map50_vs_golden: float | None = None
    golden_map: float | None = None
    golden_map50: float | None = None
    compressed_map: float | None = None
    compressed_map50: float | None = None
    map_drop: float | None = Field(
        default=None, description="Golden minus compressed mAP@[.5:.95] in points (×100); lower is better."
    )
    map50_drop: float | None = Field(
        default=None, description="Golden minus compressed mAP@.5 in points (×100); lower is better."
    )
    against_golden: DetectionScoresOut = Field(default_factory=DetectionScoresOut)
    against_labels: DetectionLabelsOut | None = Field(
        default=None, description="Null without gt_boxes / gt_labels."
    )


class LanguageModelTaskOut(ResultModel):
    """Task 'language_model' (worker/engine/tasks/language_model.py): a causal LM's next-token distributions,
    teacher-forced on the dataset's token ids, compared over the whole vocabulary at every kept position."""

    name: Literal["language_model"] = "language_model"
    n_tokens: int = Field(default=0, description="Positions compared (kept by the attention mask).")
    n_next_tokens: int = Field(default=0, description="Positions whose next token is kept: the NLL's count.")
    top_k: int = 5
    kl_mean: float | None = Field(default=None, description="Mean KL(golden ‖ compressed) per token, nats.")
    kl_reverse_mean: float | None = None
    js_mean: float | None = None
    top1_agreement: float | None = Field(
        default=None, description="Share of positions where both models' most likely next token is the same."
    )
    topk_overlap: float | None = Field(default=None, description="Mean overlap of the two top-k sets.")
    nll_golden: float | None = Field(default=None, description="Mean NLL of the text's next tokens, nats.")
    nll_compressed: float | None = None
    nll_delta: float | None = Field(default=None, description="Compressed minus golden NLL; lower is better.")
    ppl_golden: float | None = Field(default=None, description="exp(mean NLL) of the golden model.")
    ppl_compressed: float | None = None
    ppl_delta: float | None = Field(
        default=None, description="Compressed minus golden perplexity; lower is better."
    )
    kl_by_position: list[float | None] = Field(
        default_factory=list, description="Mean KL at each position index; null where no token was kept."
    )


class SignalScoresOut(ResultModel):
    snr_db: float | None = Field(default=None, description="Mean SNR against the clean signals, dB.")
    si_sdr_db: float | None = Field(default=None, description="Mean SI-SDR against the clean signals, dB.")


class SignalCleanOut(ResultModel):
    golden: SignalScoresOut
    compressed: SignalScoresOut


class SignalTaskOut(ResultModel):
    """Task 'signal' (worker/engine/tasks/signal.py): SNR and SI-SDR (torchmetrics) of the compressed signals
    against the golden model's, and of both against the dataset's 'clean' signals when it has them."""

    name: Literal["signal"] = "signal"
    output: str = Field(default="", description="The output read as signals (T,) or (C, T) per sample.")
    snr_db_vs_golden: float | None = Field(
        default=None, description="Mean SNR of the compressed signals, the golden ones as the reference, dB."
    )
    si_sdr_db_vs_golden: float | None = None
    n_identical: int = Field(default=0, description="Samples whose two outputs are identical (infinite SNR).")
    against_clean: SignalCleanOut | None = Field(default=None, description="Null without a 'clean' array.")
    snr_drop_db: float | None = Field(
        default=None,
        description="Golden minus compressed SNR against the clean signals, dB; lower is better.",
    )
    si_sdr_drop_db: float | None = Field(
        default=None,
        description="Golden minus compressed SI-SDR against the clean signals, dB; lower is better.",
    )


def _task_name(doc: Any) -> str:
    """The task of a stored task block (the image task's first blocks carried no name)."""
    if isinstance(doc, dict):
        return str(doc.get("name", "image"))
    return str(getattr(doc, "name", "image"))


TensorTaskOut = Annotated[
    Annotated[ImageTaskOut, Tag("image")]
    | Annotated[SegmentationTaskOut, Tag("segmentation")]
    | Annotated[CtcTaskOut, Tag("ctc")]
    | Annotated[DetectionTaskOut, Tag("detection")]
    | Annotated[LanguageModelTaskOut, Tag("language_model")]
    | Annotated[SignalTaskOut, Tag("signal")],
    Discriminator(_task_name),
]


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
