"""Parameters of recovery jobs (accuracy recovery of a compressed model: training-free methods, and
distillation / QAT), as the API accepts them. The worker's engine (worker/engine/recovery) checks the same
ranges again; tests keep the AdaRound and training fields in step with the engine's AdaRoundParams and
TrainingParams."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from backend.compression_contracts import CompressionConfigIn
from task_specs.metrics import TaskName, TaskOptions


class _Method(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class EqualizationIn(_Method):
    """Cross-layer equalization of Conv/Linear → ReLU → Conv/Linear pairs (the float function is kept)."""

    name: Literal["equalization"] = "equalization"


class SmoothQuantIn(_Method):
    """Migrate activation outliers into the weights: per input channel of each Linear/Conv,
    s = max|X|^α / max|W|^(1−α); X/s folded into the op producing X (or a scale node), W·s."""

    name: Literal["smoothquant"] = "smoothquant"
    alpha: float = Field(
        default=0.5, ge=0, le=1, description="Migration strength (0: activations kept, 1: all into weights)."
    )


class BiasCorrectionIn(_Method):
    """Shift each compressed layer's bias by minus its mean output error on the calibration split."""

    name: Literal["bias_correction"] = "bias_correction"


class AdaRoundIn(_Method):
    """Learn per weight whether it rounds up or down (minimising each layer's output error)."""

    name: Literal["adaround"] = "adaround"
    iterations: int = Field(default=1200, ge=1, le=100_000, description="Adam steps per layer.")
    batch_size: int = Field(default=64, ge=1, le=65_536, description="Calibration inputs per step.")
    learning_rate: float = Field(default=1e-2, gt=0, le=1)
    reg_weight: float = Field(default=0.01, ge=0, le=100, description="λ of the rounding regulariser.")
    beta_start: float = Field(default=20.0, ge=1, le=1000)
    beta_end: float = Field(default=2.0, ge=1, le=1000)
    warmup: float = Field(default=0.2, ge=0, lt=1, description="Fraction of iterations without regulariser.")
    max_samples: int = Field(
        default=512, ge=1, le=1_000_000, description="Calibration samples kept per layer."
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _beta(self) -> AdaRoundIn:
        if self.beta_end > self.beta_start:
            raise ValueError("beta_end must not exceed beta_start")
        return self


class _TrainingIn(_Method):
    steps: int = Field(default=300, ge=1, le=1_000_000, description="Adam steps (one batch each).")
    learning_rate: float = Field(default=1e-3, gt=0, le=1)
    temperature: float = Field(default=2.0, ge=0.1, le=100, description="T of the distillation KL (× T²).")
    batch_size: int = Field(default=64, ge=1, le=65_536)
    alpha: float = Field(
        default=0.0, ge=0, le=1, description="Weight of the cross-entropy on labels (when the data has them)."
    )
    eval_every: int = Field(default=20, ge=1, le=1_000_000, description="Steps between held-out KL checks.")
    patience: int = Field(
        default=5, ge=0, le=10_000, description="Checks without improvement before stopping (0: never)."
    )
    validation_fraction: float = Field(
        default=0.2, ge=0.05, le=0.5, description="Share of the calibration split kept out of training."
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


class DistillIn(_TrainingIn):
    """Fine-tune the compressed model's float parameters against the golden teacher (KL at temperature T,
    optionally + cross-entropy); compressed weights stay as the configuration makes them."""

    name: Literal["distill"] = "distill"


class QatIn(_TrainingIn):
    """Distillation with the quantized weights trained too, fake-quantized with a straight-through
    estimator: the result stays exactly on the configuration's grid."""

    name: Literal["qat"] = "qat"


RecoveryMethodIn = Annotated[
    EqualizationIn | SmoothQuantIn | BiasCorrectionIn | AdaRoundIn | DistillIn | QatIn,
    Field(discriminator="name"),
]


SWEEP_POINT_ID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}:[0-9]{1,6}$"


def parse_point_id(point_id: str) -> tuple[uuid.UUID, int]:
    """'<sweep job id>:<index>' → (job id, index)."""
    job, _, index = point_id.partition(":")
    return uuid.UUID(job), int(index)


class SensitivityPlanRef(BaseModel):
    """A mixed-precision plan of a sensitivity job of the golden model, by its average bits."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    job_id: uuid.UUID = Field(description="The sensitivity job (of the golden model) that made the plan.")
    average_bits: float = Field(description="Which of its plans: the one with this average bit width.")


class RecoveryJobParams(BaseModel):
    """Recover fidelity lost to compression (equalization, SmoothQuant, AdaRound, bias correction, distillation, QAT, in
    the order given), on a torch golden model (.pt2), or AdaRound and bias correction on an ONNX golden model;
    stores the recovered model as a new model with its lineage
    and a before/after report on a held-out split."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    golden_model_id: uuid.UUID = Field(
        description="The golden (uncompressed) model: a .pt2 torch.export file (every method), or ONNX "
        "(adaround and bias_correction)."
    )
    config: CompressionConfigIn | None = Field(
        default=None, description="The compression configuration to recover (as sweeps take it)."
    )
    sweep_point_id: str | None = Field(
        default=None,
        pattern=SWEEP_POINT_ID,
        description="Or: a point of a sweep of the golden model, by its id '<sweep job id>:<index>' (as the "
        "sweep's points and frontier give it); its configuration is taken.",
    )
    sensitivity_plan: SensitivityPlanRef | None = Field(
        default=None,
        description="Or: a mixed-precision plan of a sensitivity job of the golden model (each layer its "
        "configuration).",
    )
    dataset_id: uuid.UUID = Field(description="Calibration and held-out data (labels optional).")
    heldout_fraction: float = Field(
        default=0.3, ge=0.05, le=0.9, description="Share of the samples held out to measure before and after."
    )
    max_samples: int = Field(
        default=2048, ge=4, le=100_000, description="Samples used (calibration + held out)."
    )
    methods: list[RecoveryMethodIn] = Field(min_length=1, max_length=8, description="Applied in this order.")
    batch_size: int = Field(default=64, ge=1, le=65_536)
    threads: int = Field(default=1, ge=1, le=256, description="Intra-op threads of torch.")
    name: str | None = Field(default=None, max_length=200, description="Name of the recovered model.")
    task: TaskName = Field(
        default="auto",
        description="Also score the task before and after recovery (as a fidelity job's `task`: "
        "'segmentation', 'ctc', 'detection', 'image', 'signal'...), on the held-out split: the compressed "
        "export before recovery and the recovered export, each against the golden model and the dataset's "
        "annotations. 'auto': divergence and accuracy only.",
    )
    task_options: TaskOptions = Field(
        default_factory=dict, description="The task's options, as a fidelity job takes them."
    )

    @model_validator(mode="after")
    def _one_source(self) -> RecoveryJobParams:
        given = [self.config, self.sweep_point_id, self.sensitivity_plan]
        if sum(value is not None for value in given) != 1:
            raise ValueError("give exactly one of config, sweep_point_id and sensitivity_plan")
        return self
