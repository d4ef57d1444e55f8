"""Jobs: the launch body, a job, its chunks, and the job kinds one can launch."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from backend.api.schemas.annotations import Annotations
from backend.api.schemas.common import ORMModel, UTCDateTime


class JobCreate(BaseModel):
    project_id: uuid.UUID
    kind: str = Field(description="Job kind, e.g. 'fidelity'.")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of the kind (see /job-kinds)."
    )


class JobOut(ORMModel, Annotations):
    id: uuid.UUID
    project_id: uuid.UUID
    kind: str
    name: str = Field(default="", description="The name people gave the run; empty until they do.")
    created_by: uuid.UUID | None = Field(default=None, description="Who launched it (null: account deleted).")
    created_by_name: str | None = Field(
        default=None, description="The username of who launched it (null: account deleted)."
    )
    params: dict[str, Any]
    status: str = Field(description="queued, running, succeeded, failed or cancelled")
    progress: float = Field(description="Fraction done, 0 to 1.")
    progress_message: str
    error: str | None
    worker_id: str | None
    attempts: int
    created_at: UTCDateTime
    started_at: UTCDateTime | None
    finished_at: UTCDateTime | None
    heartbeat_at: UTCDateTime | None
    duration_s: float | None = Field(default=None, description="finished_at − started_at, seconds.")
    eta_s: float | None = Field(
        default=None,
        description="Seconds left for a running job, estimated as elapsed × (1 − progress) / progress from "
        "started_at; null until it has run 5 s and is 5 % done, and for a job that is not running.",
    )
    chunks_total: int | None = Field(
        default=None,
        description="Chunks the job fanned out into over the worker pool (GET /jobs/{id}/chunks); null for a "
        "job that runs in one piece.",
    )


class JobChunkOut(ORMModel):
    """One piece of a job that fanned out: which worker computed it, how often it was tried, and why it
    failed. Its spec says what the chunk covers (e.g. which layers)."""

    index: int
    status: str
    spec: dict[str, Any]
    worker_id: str | None
    attempts: int
    started_at: UTCDateTime | None
    finished_at: UTCDateTime | None
    error: str | None


class JobKindOut(BaseModel):
    kind: str
    description: str
    params_schema: dict[str, Any]
