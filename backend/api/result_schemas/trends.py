"""A model family's fidelity over time (GET /projects/{id}/trends): every succeeded fidelity job with the
same golden model (and, optionally, dataset), oldest first."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from backend.api.schemas import FidelityHeadline, NamedRef


class TrendModelOut(NamedRef):
    tags: list[str] = Field(description="The compressed model's tags (empty when it was deleted).")


class TrendStandardErrors(BaseModel):
    """The sampling noise of a run's headline numbers, in their units (None: no spread for that metric)."""

    kl_mean_nats: float | None = Field(
        default=None,
        description="s/√n of the per-sample KL over the finite samples (stored per-sample table).",
    )
    cosine_mean: float | None = Field(
        default=None, description="s/√n of the per-sample cosine (finite samples)."
    )
    top1_match: float | None = Field(
        default=None, description="Binomial √(p(1−p)/n) over the finite samples."
    )
    topk_agreement: float | None = Field(
        default=None, description="Binomial √(p(1−p)/n) over the finite samples."
    )
    top1_accuracy_drop_pp: float | None = Field(
        default=None,
        description="Paired: 100·s/√n of [golden right] − [compressed right] over labelled finite samples.",
    )
    sqnr_db: float | None = Field(
        default=None,
        description="Delta method on 10·log10(Σ signal / Σ error) over finite samples, in dB; job-time only "
        "(None for jobs run before it, and where a sample's error is exactly 0).",
    )


class TrendPointOut(BaseModel):
    job_id: uuid.UUID
    job_name: str
    job_tags: list[str]
    created_at: datetime
    finished_at: datetime | None
    compressed: TrendModelOut
    dataset: NamedRef
    n_samples: int
    headline: FidelityHeadline
    standard_errors: TrendStandardErrors = Field(
        description="Per headline metric; the dashboard flags a run worse than the last only beyond "
        "2·√(se_prev² + se_last²), and falls back to fixed thresholds where this is None."
    )


class TrendOut(BaseModel):
    project_id: uuid.UUID
    golden: NamedRef
    dataset_id: uuid.UUID | None = Field(description="The dataset the family was restricted to, if any.")
    total: int = Field(description="Succeeded fidelity jobs of the family; points holds the newest `limit`.")
    points: list[TrendPointOut] = Field(description="Oldest first (by finish time, then creation).")
