"""Jobs: the row that decides a job's state (backend/job_lifecycle.py), the chunks a job fans out into, and
its named result documents."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column, relationship

from backend.db.models.base import Base, TZDateTime, utcnow


class JobStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled)


class Job(Base):
    """The source of truth for a job's state. The queue only delivers job ids."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_status_heartbeat", "status", "heartbeat_at"),
        # The job list: a team's projects' jobs, newest first (a sort of every job without it).
        Index("ix_jobs_project_created", "project_id", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.queued.value, index=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    progress_message: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text, default=None)
    worker_id: Mapped[str | None] = mapped_column(String(255), default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    attempt_token: Mapped[str | None] = mapped_column(String(36), default=None)
    # Who uploaded or launched it (None when that account was deleted).
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    heartbeat_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    # When the job's message was last sent to the queue; the reaper sends it again if it waits too long.
    enqueued_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    # Set when the job fanned out into job_chunks (backend/chunk_lifecycle.py); None for a one-piece job.
    chunks_total: Mapped[int | None] = mapped_column(Integer, default=None)
    # A name people give a run ("" until they do: the dashboard then describes it by its parameters).
    name: Mapped[str] = mapped_column(String(200), default="", server_default="")
    # Free text and labels people add to find and explain it (PATCH; migration 0011).
    notes: Mapped[str] = mapped_column(Text, default="", server_default="")
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    # When the job's finish was checked against its project's fidelity budgets (backend/budgets.py); None
    # until then. Claimed by a compare-and-set, so each finished job is checked exactly once (migration 0012).
    budget_checked_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None, index=True)

    results: Mapped[list[JobResult]] = relationship(
        back_populates="job", cascade="all, delete-orphan", passive_deletes=True
    )


class JobChunk(Base):
    """One piece of a job that fanned out over the worker pool (e.g. a few layers of a sensitivity scan).

    It has the job's own lifecycle in small (queued, running, succeeded, failed; attempts, a heartbeat and a
    compare-and-set token), so a worker that dies costs only its chunk. Its result stays here until the
    job's merge step turns all of them into the job's results.
    """

    __tablename__ = "job_chunks"
    __table_args__ = (
        UniqueConstraint("job_id", "index"),
        Index("ix_job_chunks_status_heartbeat", "status", "heartbeat_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.queued.value)
    created_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    attempt_token: Mapped[str | None] = mapped_column(String(36), default=None)
    worker_id: Mapped[str | None] = mapped_column(String(255), default=None)
    enqueued_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    started_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    heartbeat_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # the running attempt's own fraction done (0 when queued again); the job's bar sums them
    progress: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")


class JobResult(Base):
    """A named result document of a job (e.g. "fidelity.summary"). One row per (job, key): writes are upserts."""

    __tablename__ = "job_results"
    __table_args__ = (UniqueConstraint("job_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(100))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)

    job: Mapped[Job] = relationship(back_populates="results")
