"""The task blocks of a fidelity summary (`summary.outputs[primary].task` of a tensor output), one model per
task adapter in worker/engine/tasks, told apart by the block's `name`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from backend.api.result_schemas.common import ResultModel
from backend.api.result_schemas.generation_blocks import GenerationOut


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
    pr50: list[float | None] | None = Field(
        default=None,
        description="Interpolated precision at COCO's 101 recall points (0, 0.01, ..., 1) at IoU .5, the curve "
        "AP@.5 averages; null entries are undefined; null when the class has no truth box.",
    )


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
    n_next_tokens: int = Field(
        default=0, description="Positions whose next token is scored (kept; a reference's): the NLL's count."
    )
    nll_reference_only: bool = Field(
        default=False,
        description="NLL and perplexity score the reference tokens only (the dataset's reference_mask: a text "
        "dataset with references), not the prompts'.",
    )
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
    generation: GenerationOut | None = Field(
        default=None, description="Generated text compared; null unless the job set generate_tokens."
    )
    gen_exact_match_rate: float | None = Field(
        default=None, description="generation.exact_match_rate, here for budgets, sweeps and kneeboard check."
    )
    gen_bleu_vs_golden: float | None = None
    gen_chrf_vs_golden: float | None = None
    gen_rouge_l_vs_golden: float | None = None
    gen_bleu_drop: float | None = None
    gen_semantic_similarity: float | None = Field(
        default=None, description="generation.semantic_similarity (null without an embedding model)."
    )
    gen_semantic_drop: float | None = None


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
