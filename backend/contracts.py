"""What the API and the workers agree on: job kinds, their Celery task names and their parameters.

The API enqueues by task *name* (never importing worker code); workers register tasks under these names.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from backend.compression_contracts import (
    CompressionConfigIn,
    NoiseIn,
    WeightQuantIn,
)
from backend.recovery_contracts import RecoveryJobParams
from backend.robustness_contracts import RobustnessOptions
from backend.sweep_contracts import DEVICE_NAME_PATTERN as DEVICE_NAME_PATTERN
from backend.sweep_contracts import MixedPrecisionSource as MixedPrecisionSource
from backend.sweep_contracts import SweepJobParams as SweepJobParams
from backend.sweep_contracts import device_queue as device_queue
from backend.sweep_contracts import task_directions
from task_specs.metrics import TASK_PREFIX, TaskName, TaskOptions, metric_names


class JobKind(StrEnum):
    inspect = "inspect"
    fidelity = "fidelity"
    sensitivity = "sensitivity"
    sweep = "sweep"
    recovery = "recovery"


TASK_NAMES: dict[JobKind, str] = {
    JobKind.inspect: "kneeboard.inspect_model",
    JobKind.fidelity: "kneeboard.fidelity",
    JobKind.sensitivity: "kneeboard.sensitivity",
    JobKind.sweep: "kneeboard.sweep",
    JobKind.recovery: "kneeboard.recovery",
}

# Tasks of jobs that fan out over the worker pool (backend/chunk_lifecycle.py): args (job id, chunk index)
# and (job id). The worker finds the job's kind, and so its handler, in the job row.
CHUNK_TASK = "kneeboard.chunk"
MERGE_TASK = "kneeboard.merge"

# Kinds that users create through POST /jobs; "inspect" jobs are created by model uploads.
USER_JOB_KINDS = (JobKind.fidelity, JobKind.sensitivity, JobKind.sweep)


class InspectParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    model_id: uuid.UUID


class FidelityJobParams(BaseModel):
    """Compare a compressed model with its golden model on a dataset."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    golden_model_id: uuid.UUID
    compressed_model_id: uuid.UUID
    dataset_id: uuid.UUID
    batch_size: int = Field(default=64, ge=1, le=65536, description="Samples per forward pass.")
    top_k: int = Field(default=5, ge=1, le=1000, description="k of top-k agreement and overlap.")
    threshold_kl: float = Field(
        default=0.1, ge=0, description="A sample whose KL(P‖Q) in nats exceeds this is flagged as degraded."
    )
    task: TaskName = Field(
        default="auto",
        description="How outputs are compared; auto infers it from the output shape. 'image': outputs that are "
        "pictures (N, C, H, W) or (N, H, W), scored by PSNR and SSIM against the golden model's and against the "
        "dataset's 'targets' array when it has one. 'segmentation': logits (N, C, H, W) or label maps (N, H, W), "
        "scored by mIoU, pixel accuracy and boundary F1 against the golden model's and against the dataset's "
        "'masks' array (N, H, W) when it has one (task_options: output, ignore_index, boundary_tolerance). 'ctc': "
        "frame logits (N, T, V) decoded greedily with task_options 'vocabulary' (V token strings; also output, "
        "blank, word_delimiter), scored by WER and CER against the golden model's transcripts and against the "
        "dataset's 'transcripts' array (N,) of strings (dtype '<U..') when it has one. 'detection': post-NMS "
        "boxes/scores/labels or a YOLO head (task_options format, *_output, box_format, score_threshold, "
        "iou_threshold, image_size), scored by COCO mAP against the dataset's gt_boxes / gt_labels and against the "
        "golden model's detections. 'language_model': a causal LM's logits (N, T, V), teacher-forced on the "
        "dataset's token ids (task_options output, input_ids, top_k): next-token KL, agreement and perplexity. "
        "'signal': waveforms (N, T) or (N, C, T), scored by SNR and SI-SDR against the golden model's and against "
        "the dataset's 'clean' array when it has one.",
    )
    image_data_range: float = Field(
        default=1.0,
        gt=0,
        le=1e6,
        description="Task 'image': the pictures' value range (1 for [0, 1], 255 for 8-bit).",
    )
    task_options: TaskOptions = Field(
        default_factory=dict,
        max_length=64,
        description="Options of the task (which outputs it reads, its thresholds...), flat: names, numbers, "
        "switches, lists of names (a vocabulary) or numbers. Each task documents its keys and refuses unknown "
        "ones when the job starts.",
    )
    outputs_are_probabilities: bool | None = Field(
        default=None,
        description="True when the models output probabilities, False for logits; null detects it "
        "(rows ≥ 0 summing to 1). Probabilities are clamped at 1e-12 and renormalised before logs.",
    )
    threads: int | None = Field(default=None, ge=1, le=256, description="Intra-op threads of the runtimes.")
    flip_confidence: float = Field(
        default=0.9,
        ge=0,
        le=1,
        description="Per-class damage: a top-1 flip is confident when both models give their class at least "
        "this probability (the golden one the label's, when the dataset has labels).",
    )
    pooling: Literal["mean", "first"] = Field(
        default="mean",
        description="Sequence outputs (N, T, D): sentence embeddings are the mean over the attention mask's "
        "tokens, or the first token.",
    )
    layer_profile: bool = Field(
        default=True,
        description="Also profile every matched layer (cosine and SQNR, accumulated and local) over the "
        "first layer_profile_samples samples.",
    )
    layer_profile_samples: int = Field(
        default=1024,
        ge=1,
        le=1_000_000,
        description="Samples the layer profile runs over (it captures every layer, so it costs more per "
        "sample than the output comparison).",
    )
    layer_name_map: dict[str, str] = Field(
        default_factory=dict,
        description="Golden layer name → compressed layer name, for layers whose names differ (e.g. an "
        "ONNX model against a torch.export one); takes precedence over matching by name.",
    )
    robustness: RobustnessOptions | None = Field(
        default=None,
        description="Also compare both models on seeded, corrupted copies of the dataset (noise, brightness, "
        "contrast, blur, occlusion at 3 severities): GET /jobs/{id}/robustness; null skips it.",
    )
    calibration_dataset_id: uuid.UUID | None = Field(
        default=None,
        description="The set the compressed model was calibrated on (a dataset of the same project, inputs "
        "shaped like the dataset's). The layer profile first runs the golden model over its first "
        "calibration_samples samples, records each layer's range there, and reports per layer the share of "
        "the evaluation set's golden activations outside it (shift.calibration_outside_rate). Needs "
        "layer_profile; null skips it.",
    )
    calibration_samples: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Calibration samples the ranges are taken over (the first ones of the calibration set).",
    )

    @model_validator(mode="after")
    def _calibration_needs_the_profile(self) -> FidelityJobParams:
        if self.calibration_dataset_id is not None and not self.layer_profile:
            raise ValueError(
                "calibration_dataset_id is used by the layer profile: it needs layer_profile=true"
            )
        return self


ImportanceMethod = Literal["l1", "l2", "taylor", "reconstruction"]


def _default_sensitivity_configs() -> list[CompressionConfigIn]:
    return [WeightQuantIn(bits=8), WeightQuantIn(bits=6), WeightQuantIn(bits=4), NoiseIn(bits=4)]


class ScreeningParams(BaseModel):
    """Screen every layer from an estimate, measure exactly only the top_k layers and a random control sample."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    top_k: int = Field(
        default=20, ge=0, le=5000, description="Layers measured exactly: the top_k by estimate."
    )
    control: int = Field(
        default=10,
        ge=0,
        le=5000,
        description="Other layers measured exactly, drawn at random (seeded): how far to trust the estimate.",
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="Seed of the control sample.")


class SensitivityJobParams(BaseModel):
    """Compress each layer alone with each configuration and measure how far the output moves: which layers
    are robust and which are critical. Fans out over the worker pool by chunks of layers."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model_id: uuid.UUID = Field(description="The golden model.")
    dataset_id: uuid.UUID = Field(
        description="The samples the scan measures (its first max_samples). When a configuration quantizes "
        "activations and no calibration_dataset_id is named, its first calibration_samples samples (default "
        "min(128, N // 4)) are held out to calibrate them and the next max_samples are measured."
    )
    calibration_dataset_id: uuid.UUID | None = Field(
        default=None,
        description="A dataset of the same project whose first calibration_samples samples (default "
        "min(256, its length)) calibrate activation ranges; null holds out the dataset's first samples. Only "
        "for scans whose configurations quantize activations.",
    )
    calibration_samples: int | None = Field(
        default=None, ge=1, le=100_000, description="Samples that calibrate activation ranges (see above)."
    )
    configs: list[CompressionConfigIn] = Field(
        default_factory=_default_sensitivity_configs,
        min_length=1,
        max_length=32,
        description="Compression configurations, the columns of the sensitivity matrix.",
    )
    layers: list[str] | None = Field(
        default=None, max_length=5000, description="Layers to scan; null scans every compressible layer."
    )
    all_but: bool = Field(
        default=False,
        description="Also the complementary view: every layer compressed except one left in float.",
    )
    whole_model: bool = Field(
        default=True, description="Also measure each configuration applied to every layer at once."
    )
    max_samples: int = Field(default=256, ge=1, le=100_000, description="Samples measured (at most).")
    batch_size: int | None = Field(
        default=None,
        ge=1,
        le=65536,
        description="Samples per forward pass; null: the worker chooses, at most 64 and fewer when one "
        "sample's activations are large (8 for EfficientNet-Lite0 at 224 px: faster, in cache).",
    )
    chunks: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Chunks of layers the scan is split into, each taken by any worker; null: one per "
        "4 layers, at most 16.",
    )
    mixed_precision_bits: list[float] = Field(
        default_factory=lambda: [6.0, 5.0],
        max_length=8,
        description="Average weight bit-widths at which to plan mixed precision over the bit-width "
        "configurations (budget = Σ weights × bits / 8), each plan then measured with all layers compressed.",
    )
    importance_methods: list[ImportanceMethod] = Field(
        default_factory=lambda: list[ImportanceMethod](["l1", "l2"]),
        description="Channel importance computed for every scanned layer ("
        "taylor and reconstruction run the calibration set per layer).",
    )
    threads: int | None = Field(default=None, ge=1, le=256, description="Intra-op threads of the runtimes.")
    task: TaskName = Field(
        default="auto",
        description="The task every cell is also scored on, as a fidelity job's `task`: a named task (or a "
        "rank_by) runs the whole compressed model for every cell and records its task block's numbers "
        "(task_metrics); 'auto' with no rank_by measures KL / SQNR of the primary output only.",
    )
    task_options: TaskOptions = Field(
        default_factory=dict, max_length=64, description="The task's options, as a fidelity job's."
    )
    image_data_range: float = Field(
        default=1.0, gt=0, le=1e6, description="Task 'image': the pictures' value range (1 or 255)."
    )
    rank_by: str | None = Field(
        default=None,
        max_length=100,
        description="Rank layers by this task metric (e.g. map50_drop, miou_drop, wer_delta, psnr_drop_db; "
        "with or without the task. prefix) instead of KL / SQNR: a _drop or _delta ranks the largest first, "
        "a higher-is-better metric (miou_vs_golden) the smallest first. Must be a metric of the task "
        "(x-task-metrics: each task's metrics and the direction that is better).",
        json_schema_extra=lambda schema: schema.update({"x-task-metrics": task_directions()}),
    )
    screening: ScreeningParams | None = Field(
        default=None,
        description="Screen instead of measuring every cell (ONNX models, for hundreds of layers): every "
        "layer is estimated from one probe pass per configuration and only the top_k layers and a control "
        "sample are measured exactly; the result marks each cell exact or estimated. null: every cell exact.",
    )

    @model_validator(mode="after")
    def _check(self) -> SensitivityJobParams:
        if any(not 1 <= b <= 16 for b in self.mixed_precision_bits):
            raise ValueError("mixed_precision_bits must lie between 1 and 16")
        if self.screening is not None and (self.all_but or self.task_cells or self.layers is not None):
            raise ValueError(
                "screening ranks every layer on KL / SQNR: leave all_but, layers, task and rank_by out"
            )
        if self.task == "language_model" and self.task_options.get("generate_tokens"):
            raise ValueError("a sensitivity scan does not generate text: leave generate_tokens out")
        if self.rank_by is not None:
            name = self.rank_by.removeprefix(TASK_PREFIX)
            known = metric_names(self.task)
            if TASK_PREFIX + name not in known:
                raise ValueError(
                    f"rank_by {self.rank_by!r} is not a metric of task {self.task!r}; its task metrics: "
                    f"{', '.join(k.removeprefix(TASK_PREFIX) for k in known) or 'none (name a task)'}"
                )
            self.rank_by = name
        return self

    @property
    def task_cells(self) -> bool:
        """Whether every cell runs the whole model through the task (a named task, or a rank_by)."""
        return self.task != "auto" or self.rank_by is not None


PARAMS_BY_KIND: dict[JobKind, type[BaseModel]] = {
    JobKind.inspect: InspectParams,
    JobKind.fidelity: FidelityJobParams,
    JobKind.sensitivity: SensitivityJobParams,
    JobKind.sweep: SweepJobParams,
    JobKind.recovery: RecoveryJobParams,
}

# Result keys under which workers store documents in job_results.
RESULT_FIDELITY_SUMMARY = "fidelity.summary"
RESULT_FIDELITY_LAYERS = "fidelity.layers"
RESULT_FIDELITY_CLASSES = "fidelity.classes"
RESULT_FIDELITY_SEQUENCE = "fidelity.sequence"
RESULT_FIDELITY_ROBUSTNESS = "fidelity.robustness"
RESULT_FIDELITY_ATTENTION = "fidelity.attention"
RESULT_FIDELITY_TASK_PROXY = "fidelity.task_proxy"  # does the divergence predict the task? (issue 30)
RESULT_FIDELITY_TASK_SAMPLES = "fidelity.task_samples"  # the inspector's boxes / transcripts (issue 30)
RESULT_SENSITIVITY = "sensitivity.result"
RESULT_SENSITIVITY_ALL_BUT = "sensitivity.all_but"
RESULT_SENSITIVITY_PLANS = "sensitivity.plans"
RESULT_SENSITIVITY_IMPORTANCE = "sensitivity.importance"
RESULT_SWEEP_SEARCH = "sweep.search"  # a sweep's accuracy-aware search (GET /jobs/{id}/sweep/search)
RESULT_RECOVERY_SUMMARY = "recovery.summary"
RESULT_RECOVERY_LAYERS = "recovery.layers"  # per-layer profiles before and after recovery (held-out split)
RESULT_MODEL_GRAPH = "model.graph"  # the inspect job's display graph of its model (GET /models/{id}/graph)


class ImagePreprocessing(BaseModel):
    """How a zip of images becomes the model's input array; stored with the dataset.

    Each image is converted to `mode`, resized to `size` (height, width) with bilinear filtering, scaled
    by `scale`, then normalised per channel: (x − mean) / std. Images are ordered by file name.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    size: tuple[int, int] = Field(default=(224, 224), description="(height, width) after resizing.")
    mode: Literal["RGB", "L"] = Field(
        default="RGB", description="RGB (3 channels) or L (grayscale, 1 channel)."
    )
    scale: float = Field(default=1 / 255, gt=0, description="Multiplies the 0–255 pixel values first.")
    mean: list[float] = Field(default_factory=lambda: [0.0], description="Per channel (or one for all).")
    std: list[float] = Field(default_factory=lambda: [1.0], description="Per channel (or one for all); > 0.")
    layout: Literal["NCHW", "NHWC"] = "NCHW"
    input_name: str = Field(default="input", min_length=1, description="Name of the array the images become.")

    @model_validator(mode="after")
    def _check(self) -> ImagePreprocessing:
        if min(self.size) < 1 or max(self.size) > 4096:
            raise ValueError("size must be two ints between 1 and 4096")
        for name in ("mean", "std"):
            values = getattr(self, name)
            if len(values) not in (1, self.channels):
                raise ValueError(f"{name} needs 1 or {self.channels} values for mode {self.mode}")
        if any(s <= 0 for s in self.std):
            raise ValueError("std values must be > 0")
        return self

    @property
    def channels(self) -> int:
        return 3 if self.mode == "RGB" else 1

    def array_shape(self, n: int) -> list[int]:
        h, w = self.size
        return [n, self.channels, h, w] if self.layout == "NCHW" else [n, h, w, self.channels]
