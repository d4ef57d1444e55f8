"""Projects: the create body and the project with its counts."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from backend.api.schemas.common import ORMModel, UTCDateTime


class ProjectCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    team_id: uuid.UUID | None = Field(
        default=None,
        description="The team that will own the project (you must be a member or admin of it). May be left "
        "out when you are a member or admin of exactly one team.",
    )


class ProjectOut(ORMModel):
    id: uuid.UUID
    team_id: uuid.UUID
    name: str
    description: str
    created_at: UTCDateTime
    models_count: int = Field(default=0, description="Models in the project (uploaded and made by jobs).")
    datasets_count: int = Field(default=0, description="Datasets in the project.")
    jobs_count: int = Field(default=0, description="Jobs of the project, inspections included.")
    open_alerts_count: int = Field(
        default=0, description="Budget alerts of the project that nobody has acknowledged yet."
    )
    last_activity_at: UTCDateTime | None = Field(
        default=None,
        description="The latest of: the project's creation, an upload, a job launched, started or finished.",
    )
