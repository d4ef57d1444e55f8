"""A fidelity job's report and per-sample divergences, and a project's fidelity runs side by side."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.api.schemas.common import ORMModel, UTCDateTime


class SampleDivergenceOut(ORMModel):
    sample_index: int
    output_name: str
    kl: float | None = Field(description="KL(P‖Q) in nats, golden P to compressed Q; lower is better.")
    cosine: float | None
    mse: float | None
    sqnr_db: float | None = Field(
        description="Per-sample SQNR in dB; null when infinite (see sqnr_db_infinite) or undefined (a "
        "non-finite sample, or a golden output of all zeros: −∞)."
    )
    top1_match: bool | None
    golden_class: int | None
    compressed_class: int | None
    label: int | None
    flagged: bool
    finite: bool
    task_values: dict[str, float | None] | None = Field(
        default=None,
        description="With a task that scores samples (segmentation, ctc...): the sample's task values, metric → "
        "number in the metric's own unit (null: undefined, e.g. WER of an empty reference); null without one.",
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="True when the sample's outputs are identical (error exactly 0: +∞ dB)."
    )
    @property
    def sqnr_db_infinite(self) -> bool:
        # The table stores +∞ and −∞ SQNR as NULL like NaN; an exact sample is the finite one with MSE 0.
        return self.sqnr_db is None and self.finite and self.mse == 0.0


class FidelityReportOut(BaseModel):
    job_id: uuid.UUID
    golden_model_id: uuid.UUID
    compressed_model_id: uuid.UUID
    dataset_id: uuid.UUID
    summary: FidelitySummaryOut = Field(
        description="Per output name: the metrics; plus warnings and sample counts."
    )
    diagnostics: list[Literal["classes", "sequence", "robustness", "attention", "task", "task_samples"]] = (
        Field(
            default_factory=list,
            description="Which 'why it diverges' documents this job has: 'classes' (GET …/fidelity/classes, a "
            "classification output), 'sequence' (GET …/fidelity/sequence, an output shaped (N, T, D)), "
            "'robustness' (GET …/robustness, a job run with robustness slices) and 'attention' (GET "
            "…/fidelity/attention, an ONNX pair with attention softmaxes) and 'task' (GET …/fidelity/task, a task "
            "that scores samples: does the divergence predict it?) and 'task_samples' (GET …/samples/{index}/task, "
            "the boxes, transcripts, label maps, output pictures or waveforms of a detection, speech, segmentation, "
            "image or signal task's first samples); the "
            "others answer 404, so a page asks only for these.",
        )
    )


class NamedRef(BaseModel):
    id: uuid.UUID
    name: str | None = Field(description="None when the model or dataset was deleted since.")


class TaskHeadlineMetric(BaseModel):
    metric: str = Field(
        description="A top-level number of the task block, e.g. map50_drop (as task.<metric>)."
    )
    value: float | None = Field(description="None when the job left it undefined (e.g. no labels).")
    higher_is_better: bool = Field(
        description="kneeboard check's direction rule (task_specs.directions), so no client keeps a second one."
    )


class TaskHeadline(BaseModel):
    name: str = Field(description="The task the job scored (detection, segmentation, ctc, ...).")
    metrics: list[TaskHeadlineMetric] = Field(
        description="The task's metrics a sweep or a budget can name, in the task's own order."
    )


class FidelityHeadline(BaseModel):
    """The primary output's key numbers, for comparing runs side by side."""

    output: str
    kl_mean_nats: float | None = Field(
        default=None, description="KL(P‖Q), golden P to compressed Q; lower is better."
    )
    js_mean_nats: float | None = Field(
        default=None, description="Jensen-Shannon divergence; lower is better."
    )
    top1_match: float | None = Field(default=None, description="Share of samples with the same top-1 class.")
    topk_agreement: float | None = None
    cosine_mean: float | None = None
    sqnr_db: float | None = Field(
        default=None, description="Higher is better; None when infinite or undefined."
    )
    top1_accuracy_drop_pp: float | None = Field(default=None, description="Needs labels; lower is better.")
    ece_shift: float | None = Field(default=None, description="ECE(compressed) − ECE(golden); needs labels.")
    concentration: str | None = Field(default=None, description="uniform or concentrated damage.")
    task: TaskHeadline | None = Field(
        default=None, description="The primary output's task metrics; None when the job scored no task."
    )


class FidelityRunOut(BaseModel):
    job_id: uuid.UUID
    name: str = Field(default="", description='The run\'s name ("" until someone names it).')
    tags: list[str] = Field(default_factory=list)
    finished_at: UTCDateTime | None
    golden: NamedRef
    compressed: NamedRef
    dataset: NamedRef
    n_samples: int
    headline: FidelityHeadline
