"""Parts of the sensitivity documents (worker/engine/sensitivity/result.py ``SensitivityResult.to_dict``, the
plans of worker/engine/sensitivity/plans.py) that the report routes serve as they are stored."""

from __future__ import annotations

from pydantic import Field

from backend.api.result_schemas.common import DivergenceOut, ResultModel


class SensitivityRankingOut(ResultModel):
    """Layers most sensitive first. In the all_but view the most sensitive layer is the one whose staying
    in float helps most."""

    overall: list[str] = Field(default_factory=list, description="By the mean score over configurations.")
    by_config: dict[str, list[str]] = Field(default_factory=dict, description="Configuration id → ranking.")


class SensitivityCellOut(DivergenceOut):
    """One layer × configuration cell with all its numbers and what was compressed."""

    layer: str
    config: str = Field(description="Configuration id.")
    compressed: list[str] = Field(default_factory=list, description="The tensors that were compressed.")
    affected_layers: list[str] = Field(
        default_factory=list, description="Other layers changed too (a shared weight tensor)."
    )
    notes: list[str] = Field(default_factory=list)
    task_metrics: dict[str, float | None] = Field(
        default_factory=dict,
        description="The task block's top-level numbers of this cell (e.g. miou_drop, map50_drop, wer_delta); "
        "empty when the scan had no task.",
    )
    exact: bool = Field(
        default=True,
        description="False: estimated by screening (not measured); its divergence numbers are the estimate.",
    )
    estimate: float | None = Field(
        default=None,
        description="Screening's local SQNR (dB) of this cell: its compressed weights' error where the layer's "
        "output joins the model; null when the scan did not screen.",
    )


class ScreeningSummaryOut(ResultModel):
    """A screened scan: which layers were measured exactly and how well the estimate ranked them."""

    top_k: int = Field(description="Layers measured exactly because the estimate ranked them highest.")
    control: int = Field(description="Other layers measured exactly, drawn at random (seeded).")
    seed: int
    top_layers: list[str] = Field(default_factory=list, description="The top_k layers, in depth order.")
    control_layers: list[str] = Field(default_factory=list, description="The control sample, in depth order.")
    exact_cells: int = Field(description="Cells measured exactly.")
    total_cells: int
    spearman: float | None = Field(
        default=None,
        description="Spearman's rank correlation between estimate and exact score over the exact cells "
        "(null under 3 cells).",
    )


class SensitivityModelOut(ResultModel):
    """Which model the scan ran on (what merging the chunks checks)."""

    backend: str | None = None
    weights_digest: str | None = None
    golden_digest: str | None = None


class PlanMeasurementOut(ResultModel):
    """A plan applied to every layer at once, measured."""

    predicted_kl: float | None = None
    measured: DivergenceOut | None = None
    notes: list[str] = Field(default_factory=list)
