"""Response bodies of the sensitivity endpoints."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, Field

from backend.api.result_schemas.common import CalibrationSamplesOut, CompressionConfigOut, DivergenceOut
from backend.api.result_schemas.sensitivity import (
    PlanMeasurementOut,
    ScreeningSummaryOut,
    SensitivityCellOut,
    SensitivityModelOut,
    SensitivityRankingOut,
)


class SensitivityLayerOut(BaseModel):
    name: str
    type: str = Field(description="Module or op type, e.g. Conv2d, Linear, LSTM.")
    params: int
    weight_params: int = Field(
        description="Parameters of the compressible weights (the mixed-precision budget)."
    )
    macs: int | None = Field(description="Multiply-accumulates per sample; null when not countable.")
    depth_index: int
    depth_fraction: float = Field(description="depth_index / (layers − 1): 0 first layer, 1 last.")
    tensors: list[str] = Field(default_factory=list, description="Its weight then bias tensors.")
    shared_with: list[str] = Field(description="Layers sharing a weight tensor with this one.")
    notes: list[str]


class SensitivityConfigOut(BaseModel):
    id: str = Field(description="Stable id, the column key of the matrix, e.g. w4-sym-tensor.")
    config: CompressionConfigOut
    weight_bits: int | None


class SensitivityMatrix(BaseModel):
    rows: list[str] = Field(description="Layer names, in depth order.")
    columns: list[str] = Field(description="Configuration ids.")
    kl_mean: list[list[float | None]] = Field(description="KL(P‖Q) mean in nats per cell; lower is better.")
    top1_agreement: list[list[float | None]] = Field(description="Share of samples with the golden top-1.")
    sqnr_db: list[list[float | None]] = Field(
        description="Output SQNR in dB; higher is better; null when infinite (see sqnr_db_infinite) or undefined."
    )
    sqnr_db_infinite: list[list[bool]] | None = Field(
        default=None, description="True where the compressed output equals the golden one (SQNR = +∞)."
    )
    task_metrics: dict[str, list[list[float | None]]] = Field(
        default_factory=dict,
        description="Task metric name (e.g. miou_drop) → its matrix, for a scan with a task; empty otherwise.",
    )
    exact: list[list[bool]] | None = Field(
        default=None,
        description="False where a cell was estimated by screening rather than measured (null: scans made "
        "before screening, every cell exact).",
    )


class SensitivityReportOut(BaseModel):
    """Each layer compressed alone ("only") or everything but that layer ("all_but"), per configuration."""

    job_id: uuid.UUID
    model_id: uuid.UUID
    dataset_id: uuid.UUID
    mode: str
    primary_output: str
    output_kind: str
    n_samples: int
    batch_size: int | None = Field(
        default=None,
        description="Samples per run the scan used: the job's batch_size, or the worker's choice when it "
        "was null (null for scans made before this was recorded).",
    )
    ranking_metric: str = Field(
        description="What layers are ranked by: kl (classifiers: KL mean, higher = more sensitive), sqnr "
        "(other outputs: lower SQNR = more sensitive) or task.<metric> when the scan was ranked by a task "
        "metric (a _drop / _delta: larger = more sensitive; a higher-is-better metric: smaller = more sensitive)."
    )
    task: str = Field(
        default="auto", description="The task the cells were scored on ('auto': none, unless rank_by is set)."
    )
    rank_by: str | None = Field(
        default=None, description="The task metric layers are ranked by (bare name), or null for KL / SQNR."
    )
    configs: list[SensitivityConfigOut]
    layers: list[SensitivityLayerOut]
    matrix: SensitivityMatrix
    computed_layers: list[str] = Field(
        default_factory=list, description="Layers the scan computed (the matrix rows), in depth order."
    )
    model: SensitivityModelOut | None = None
    ranking: SensitivityRankingOut
    whole_model: dict[str, DivergenceOut] = Field(
        description="Per configuration: the divergence with every layer compressed at once."
    )
    cells: list[SensitivityCellOut] | None = Field(
        default=None,
        description="Every cell with all its numbers and what was compressed (only with ?cells=true).",
    )
    notes: list[str]
    screening: ScreeningSummaryOut | None = Field(
        default=None, description="A screened scan's summary; null when every cell was measured."
    )
    calibration: CalibrationSamplesOut | None = Field(
        default=None,
        description="Which samples calibrated the activation-quantized cells (disjoint from the measured "
        "ones); null when no configuration quantizes activations.",
    )


class ChannelScoreOut(BaseModel):
    channel: int
    rank: int = Field(description="0 = most important.")
    score: float | None
    kl_mean: float | None = Field(
        default=None, description="reconstruction only: KL(P‖Q) mean with this channel zeroed."
    )
    sqnr_db: float | None = Field(
        default=None, description="reconstruction only: output SQNR, channel zeroed."
    )
    top1_agreement: float | None = Field(default=None, description="reconstruction only.")


class ChannelImportanceOut(BaseModel):
    job_id: uuid.UUID
    layer: str
    method: str
    unit: str | None = None
    n_channels: int | None = None
    channels: list[ChannelScoreOut] = Field(default_factory=list, description="Most important first.")
    error: str | None = Field(default=None, description="Why this method could not score this layer.")
    notes: list[str] = Field(default_factory=list)


class MixedPrecisionPlanOut(BaseModel):
    average_bits: float
    budget_bytes: float | None = None
    assignments: dict[str, str] | None = Field(default=None, description="Layer → configuration id.")
    bits: dict[str, int] | None = None
    predicted_kl: float | None = Field(
        default=None, description="Σ of the chosen cells' KL means (each layer compressed alone)."
    )
    size_bytes: float | None = None
    configs: dict[str, CompressionConfigOut] | None = Field(
        default=None, description="Configuration id → the configuration the plan assigns."
    )
    measurement: PlanMeasurementOut | None = Field(
        default=None, description="Measured with every layer compressed by the plan at once."
    )
    error: str | None = None
    notes: list[str] = Field(default_factory=list)


class MixedPrecisionPlansOut(BaseModel):
    job_id: uuid.UUID
    plans: list[MixedPrecisionPlanOut]
    calibration: CalibrationSamplesOut | None = Field(
        default=None,
        description="Which samples calibrated the plans' activation ranges when they quantize activations "
        "(disjoint from the measured ones); null otherwise.",
    )


class ProfileLayerOut(BaseModel):
    name: str
    type: str
    depth_fraction: float
    scores: dict[str, float | None] = Field(description="Configuration id → KL mean (or −SQNR dB).")


class SensitivityProfileOut(BaseModel):
    job_id: uuid.UUID
    model_id: uuid.UUID
    model_name: str | None
    ranking_metric: Literal["kl", "sqnr"]
    configs: list[str]
    layers: list[ProfileLayerOut] = Field(description="On a normalised depth axis (0 = first, 1 = last).")
    by_type: dict[str, dict[str, float | None]] = Field(
        description="Layer type → configuration id → mean score over the layers of that type."
    )
    layer_counts: dict[str, int] = Field(description="Layers of each type.")


class SensitivityComparisonOut(BaseModel):
    """Sensitivity profiles of several scans (e.g. a CNN, a transformer and an LSTM) side by side."""

    profiles: list[SensitivityProfileOut]
    common_configs: list[str] = Field(description="Configuration ids every compared scan has.")
