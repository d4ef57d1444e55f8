"""The fields SmoothQuant adds to a recovery step's details (worker/engine/recovery/smoothquant.py
``SmoothQuantResult``), mixed into backend/api/recovery_schemas.py ``RecoveryDetailsOut``."""

from __future__ import annotations

from pydantic import Field

from backend.api.result_schemas.common import ResultModel, StoredShape


class SmoothedGroupOut(ResultModel):
    layers: list[str] = Field(description="Layers sharing one input, and so one per-channel scale s.")
    folded_into: str | None = Field(
        description="The module that absorbed 1/s (a LayerNorm, BatchNorm, Linear or Conv); null: a scale "
        "node (the layer's input times 1/s, a Mul in the exported file)."
    )
    fold: str = Field(description='"layernorm", "batchnorm", "linear", "conv" or "scale node".')
    through_relu: bool = Field(description="1/s folded through a ReLU (relu(z/s) = relu(z)/s, s > 0).")
    outlier_ratio: float | None = Field(
        description="Largest input channel's max|X| over the median channel's, before smoothing."
    )
    scales: list[float] = Field(description="s per input channel: max|X_j|^α / max|W_j|^(1−α).")


class SmoothQuantDetailsFields(StoredShape):
    """smoothquant: what was smoothed (absent for the other methods)."""

    alpha: float | None = Field(default=None, description="smoothquant: the migration strength α.")
    groups: list[SmoothedGroupOut] | None = Field(default=None, description="smoothquant: per input.")
