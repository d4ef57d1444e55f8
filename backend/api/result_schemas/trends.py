"""A model family's fidelity over time (GET /projects/{id}/trends): every succeeded fidelity job with the
same golden model (and, optionally, dataset), oldest first."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from backend.api.schemas import FidelityHeadline, NamedRef


class TrendModelOut(NamedRef):
    tags: list[str] = Field(description="The compressed model's tags (empty when it was deleted).")


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


class TrendOut(BaseModel):
    project_id: uuid.UUID
    golden: NamedRef
    dataset_id: uuid.UUID | None = Field(description="The dataset the family was restricted to, if any.")
    total: int = Field(description="Succeeded fidelity jobs of the family; points holds the newest `limit`.")
    points: list[TrendPointOut] = Field(description="Oldest first (by finish time, then creation).")
