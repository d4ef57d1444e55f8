"""The result of a recovery job as the API serves it (stored by worker/jobs/recovery.py under
"recovery.summary"; the figures are worker/engine/sweep/golden.py ``fidelity_summary`` on the held-out
split, the details those of worker/engine/recovery's methods)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field

from backend.api.recovery_smoothquant_schemas import SmoothQuantDetailsFields
from backend.api.recovery_training_schemas import TrainingDetailsFields, TrainingMethodFields
from backend.api.result_schemas.common import CalibrationSamplesOut, CompressionConfigOut, ResultModel
from backend.api.result_schemas.sweep import PointFidelityOut
from backend.api.schemas.layer_profile import LayerProfileOut
from backend.recovery_contracts import RecoveryJobParams, SensitivityPlanRef


class EqualizedPairOut(ResultModel):
    first: str
    second: str
    flattened: bool = Field(default=False, description="A flatten lies between the two layers.")


class RoundedLayerOut(ResultModel):
    name: str
    flipped: int = Field(description="Weights AdaRound rounded the other way than nearest.")
    total: int
    loss_nearest: float | None = Field(description="‖W x − Ŵ x‖² on the layer's inputs, round-to-nearest.")
    loss_adaround: float | None = Field(description="The same with the learned rounding.")


class AdaRoundParamsOut(ResultModel):
    iterations: int
    batch_size: int
    learning_rate: float
    reg_weight: float
    beta_start: float
    beta_end: float
    warmup: float
    max_samples: int
    seed: int


class RecoveryDetailsOut(TrainingDetailsFields, SmoothQuantDetailsFields):
    """What a method did; the fields depend on the method (served as stored)."""

    pairs: list[EqualizedPairOut] | None = Field(default=None, description="equalization: the pairs found.")
    scales: dict[str, list[float]] | None = Field(
        default=None, description='equalization: "first→second" → per-channel scale s.'
    )
    iterations: int | None = Field(default=None, description="equalization: sweeps over the pairs.")
    shifts: dict[str, list[float]] | None = Field(
        default=None, description="bias_correction: layer → shift added to its bias, per output channel."
    )
    layers: list[RoundedLayerOut] | None = Field(default=None, description="adaround: per layer.")
    params: AdaRoundParamsOut | None = None
    notes: list[str] = Field(default_factory=list)


class RecoveryStepOut(ResultModel):
    method: str = Field(description='"before" (the compressed model, unrecovered), then each method.')
    seconds: float
    fidelity: PointFidelityOut
    details: RecoveryDetailsOut


class RecoveryExportOut(ResultModel):
    kind: str = Field(description="real-int8-weights, real-int8-qdq, ... or simulated-float (see sweeps).")
    file: str
    sha256: str
    size_bytes: int
    measured: PointFidelityOut | None = Field(
        default=None,
        description="The file run in onnxruntime against the golden model on the held-out split.",
    )
    notes: list[str] = Field(default_factory=list)


class RecoveryLineageOut(ResultModel):
    kind: str = "recovery"
    parent_model_id: uuid.UUID
    job_id: uuid.UUID
    dataset_id: uuid.UUID
    heldout_fraction: float
    sweep_point_id: str | None = Field(default=None, description="'<sweep job id>:<index>'.")
    sensitivity_plan: SensitivityPlanRef | None = Field(
        default=None, description="The mixed-precision plan recovered, when it came from a sensitivity job."
    )
    point_id: str = Field(description="The configuration's id (e.g. w4-sym-channel).")
    config: CompressionConfigOut | None = None
    plan: dict[str, CompressionConfigOut] | None = Field(
        default=None, description="Per-layer configurations."
    )
    methods: list[RecoveryMethodOut] = Field(default_factory=list)


class RecoveryMethodOut(TrainingMethodFields):
    name: str
    iterations: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    reg_weight: float | None = None
    beta_start: float | None = None
    beta_end: float | None = None
    warmup: float | None = None
    max_samples: int | None = None
    seed: int | None = None


RecoveryLineageOut.model_rebuild()


class RecoveryPerSampleOut(ResultModel):
    """Each held-out sample before and after recovery, in the order of the summary's heldout_index."""

    kl_before: list[float | None] = Field(
        default_factory=list,
        description="KL(golden ‖ compressed) in nats per sample before recovery (null: not finite).",
    )
    kl_after: list[float | None] = Field(default_factory=list, description="The same after the last method.")
    top1_before: list[bool] = Field(
        default_factory=list, description="Top-1 class agrees with the golden model."
    )
    top1_after: list[bool] = Field(default_factory=list)


class RecoveryTaskMetricOut(ResultModel):
    metric: str = Field(
        description="A top-level number of the task block (as task.<metric>), e.g. miou_drop."
    )
    before: float | None = Field(description="The compressed export before recovery, on the held-out split.")
    after: float | None = Field(description="The recovered export, on the same samples.")
    higher_is_better: bool = Field(description="kneeboard check's direction rule (task_specs.directions).")


class RecoveryTaskOut(ResultModel):
    task: str = Field(description="The task the job scored (segmentation, ctc, detection...).")
    metrics: list[RecoveryTaskMetricOut]


class RecoverySummaryOut(ResultModel):
    job_id: uuid.UUID
    model_id: uuid.UUID = Field(description="The recovered model (a new model of the project).")
    point_id: str
    before: PointFidelityOut = Field(description="The compressed model without recovery (held-out split).")
    after: PointFidelityOut = Field(description="After the last method.")
    steps: list[RecoveryStepOut]
    lineage: RecoveryLineageOut
    n_calibration: int
    n_heldout: int
    labelled: bool
    export: RecoveryExportOut
    heldout_index: list[int] = Field(
        default_factory=list,
        description="The dataset index of each held-out sample (empty for jobs run before it was recorded).",
    )
    per_sample: RecoveryPerSampleOut = Field(
        default_factory=RecoveryPerSampleOut,
        description="Per held-out sample, before and after (empty lists for jobs run before it was recorded).",
    )
    task: RecoveryTaskOut | None = Field(
        default=None,
        description="With params.task: the task's metrics before and after recovery (both exports against "
        "the golden model and the dataset's annotations on the held-out split).",
    )
    calibration: CalibrationSamplesOut | None = Field(
        default=None,
        description="Which samples calibrated activation ranges and the methods (the calibration split), "
        "disjoint from the held-out ones measured (null for jobs run before it was recorded).",
    )


class RecoveryLayersOut(ResultModel):
    """The golden model profiled layer by layer against the compressed model before recovery and against the
    recovered one, on the held-out split (each the fidelity job's layer profile; a side that could not be
    made has its ``error``)."""

    job_id: uuid.UUID
    before: LayerProfileOut
    after: LayerProfileOut


class RecoveryJobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: uuid.UUID
    params: RecoveryJobParams
