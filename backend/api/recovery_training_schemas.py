"""The fields distillation and QAT add to a recovery result (worker/engine/recovery/distill.py
``TrainingResult`` and ``TrainingParams``), mixed into the step details and the lineage's methods of
backend/api/recovery_schemas.py."""

from __future__ import annotations

from pydantic import Field

from backend.api.result_schemas.common import ResultModel, StoredShape


class LossPointOut(ResultModel):
    step: int = Field(description="Training steps done (1-based).")
    loss: float | None = Field(description="The training loss of this step's batch.")
    heldout_kl: float | None = Field(
        default=None,
        description="KL(golden ‖ student) at T = 1 on the calibration data kept out of training, where "
        "measured at this step (null between measurements).",
    )


class TrainingParamsOut(ResultModel):
    steps: int
    learning_rate: float
    temperature: float
    batch_size: int
    alpha: float
    eval_every: int
    patience: int
    validation_fraction: float
    seed: int


class TrainingDetailsFields(StoredShape):
    """distill / qat: what trained and how (absent for the other methods)."""

    curve: list[LossPointOut] | None = Field(default=None, description="distill/qat: the loss curve.")
    steps_run: int | None = None
    best_step: int | None = Field(default=None, description="The step whose state was kept (0: the start).")
    start_heldout_kl: float | None = None
    best_heldout_kl: float | None = None
    stopped_early: bool | None = None
    trained: list[str] | None = Field(default=None, description="Parameters trained.")
    quantized: list[str] | None = Field(
        default=None, description="Layers whose weights stay on the configuration's grid."
    )
    masked: list[str] | None = Field(
        default=None,
        description="Pruned layers whose surviving weights trained under the pruning mask (pruned ones stay zero).",
    )
    n_train: int | None = None
    n_validation: int | None = None
    labelled: bool | None = None
    training_params: TrainingParamsOut | None = None


class TrainingMethodFields(StoredShape):
    """distill / qat parameters of a method in a recovered model's lineage."""

    steps: int | None = None
    temperature: float | None = None
    alpha: float | None = None
    eval_every: int | None = None
    patience: int | None = None
    validation_fraction: float | None = None
