"""What a team owns: projects, and the models and datasets uploaded to them (their bytes are artifacts)."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from backend.db.models.base import Base, TZDateTime, utcnow


class ModelStatus(enum.StrEnum):
    inspecting = "inspecting"
    ready = "ready"
    invalid = "invalid"


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("team_id", "name"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class Artifact(Base):
    """A stored file, content-addressed: the same bytes are stored once however often they are uploaded."""

    __tablename__ = "artifacts"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class Model(Base):
    __tablename__ = "models"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    filename: Mapped[str] = mapped_column(String(500))
    format: Mapped[str] = mapped_column(String(32))
    artifact_sha256: Mapped[str] = mapped_column(ForeignKey("artifacts.sha256"), index=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16), default=ModelStatus.inspecting.value)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    declared_input_shapes: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    inspection: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # The job that inspects the upload; while the model is "inspecting", that job's fate is the model's.
    inspect_job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    # Who uploaded or launched it (None when that account was deleted).
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    # Where a model made by a job comes from (a recovery job: parent model, configuration, methods, dataset,
    # job); None for uploads. JSON on the row: one parent, always read with the model (migration 0010).
    lineage: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # Free text and labels people add to find and explain it (PATCH; migration 0011).
    notes: Mapped[str] = mapped_column(Text, default="", server_default="")
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")


class Dataset(Base):
    __tablename__ = "datasets"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    filename: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(16))
    artifact_sha256: Mapped[str] = mapped_column(ForeignKey("artifacts.sha256"), index=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    n_samples: Mapped[int] = mapped_column(Integer)
    arrays: Mapped[dict[str, Any]] = mapped_column(JSON)
    has_labels: Mapped[bool] = mapped_column(Boolean, default=False)
    preprocessing: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # Who uploaded or launched it (None when that account was deleted).
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    # Free text and labels people add to find and explain it (PATCH; migration 0011).
    notes: Mapped[str] = mapped_column(Text, default="", server_default="")
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
