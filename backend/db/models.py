"""ORM tables (SQLAlchemy 2, typed). Alembic migrations are the only way these tables get created;
tests/backend/test_migrations.py fails when the two drift apart."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class JobStatus(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled)


class ModelStatus(enum.StrEnum):
    inspecting = "inspecting"
    ready = "ready"
    invalid = "invalid"


TZDateTime = DateTime(timezone=True)


class User(Base):
    """Someone who signs in. ``password_hash`` is an Argon2 hash, or "" for an account that can only use
    API tokens (e.g. created by `kneeboard token create` for CI)."""

    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255), default="")
    # Site admins create accounts; they see no team's data unless they are a member of the team.
    is_site_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class Team(Base):
    """Owns projects; its members' roles decide who may read and change them."""

    __tablename__ = "teams"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class TeamMembership(Base):
    __tablename__ = "team_memberships"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class ApiToken(Base):
    """A bearer credential: a personal API token (kind "api") or a dashboard sign-in (kind "session").

    Only the SHA-256 of the secret is stored (the secret is 256 random bits, so a slow hash adds nothing);
    every request looks the row up, so a revoked token stops working at once.
    """

    __tablename__ = "api_tokens"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200), default="")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    expires_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)


class LoginThrottle(Base):
    """Failed sign-in attempts of one account ("user:NAME") or one client address ("addr:IP"), shared by all
    API processes (backend/login_throttle.py). An attempt is counted before its password is checked, with a
    compare-and-set on `failures`, so that concurrent guesses cannot all slip through."""

    __tablename__ = "login_throttle"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_failure_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    blocked_until: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)


class AuditEvent(Base):
    """Who uploaded, launched, cancelled, deleted or changed what, in which team. Written in the same
    transaction as the change it records."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_team_created", "team_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    actor_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor_name: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(64))
    resource_type: Mapped[str] = mapped_column(String(32))
    resource_id: Mapped[str] = mapped_column(String(64))
    project_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


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


class SweepPoint(Base):
    """One evaluated configuration of a sweep job: its fidelity, cost and latency, queryable for frontiers.

    `objectives` holds the point's numbers flat (name → value: kl_mean, size_bytes, latency_p50_ms_b1...),
    the axes a Pareto frontier can be drawn on; `point` the full document; `export_*` the runnable model
    file stored for download.
    """

    __tablename__ = "sweep_points"
    # (job_id, id): the frontier's fingerprint of a sweep's points (count, max id) is an index-only scan.
    __table_args__ = (UniqueConstraint("job_id", "index"), Index("ix_sweep_points_job_id_id", "job_id", "id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(500))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    objectives: Mapped[dict[str, Any]] = mapped_column(JSON)
    point: Mapped[dict[str, Any]] = mapped_column(JSON)
    export_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    export_manifest: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)


class SweepObjectiveTable(Base):
    """A sweep's objectives packed for frontiers (backend/sweep_objectives.py): one row per sweep instead of
    one JSON document per point. Built by the API from `sweep_points` when a frontier first needs it, and
    rebuilt when the points' fingerprint (count, largest id) no longer matches."""

    __tablename__ = "sweep_objective_tables"

    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    names: Mapped[list[Any]] = mapped_column(JSON)  # the objective names, one per column
    labels: Mapped[list[Any]] = mapped_column(JSON)  # the points' labels, one per row
    point_indexes: Mapped[bytes] = mapped_column(LargeBinary)  # int64 little-endian, one per row
    objective_values: Mapped[bytes] = mapped_column(
        LargeBinary
    )  # float64 little-endian, rows × names, NaN: none
    points_count: Mapped[int] = mapped_column(Integer)
    points_max_id: Mapped[int] = mapped_column(Integer)


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


class SampleDivergence(Base):
    """Per-sample divergence of one output of a fidelity job: pageable, sortable and filterable in SQL."""

    __tablename__ = "sample_divergences"
    __table_args__ = (Index("ix_sample_divergences_job_kl", "job_id", "output_name", "kl"),)

    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    output_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    sample_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    kl: Mapped[float | None] = mapped_column(Float)
    cosine: Mapped[float | None] = mapped_column(Float)
    mse: Mapped[float | None] = mapped_column(Float)
    sqnr_db: Mapped[float | None] = mapped_column(Float)
    top1_match: Mapped[bool | None] = mapped_column(Boolean)
    golden_class: Mapped[int | None] = mapped_column(Integer)
    compressed_class: Mapped[int | None] = mapped_column(Integer)
    label: Mapped[int | None] = mapped_column(Integer)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    finite: Mapped[bool] = mapped_column(Boolean, default=True)


class Budget(Base):
    """A named fidelity budget of a project: rules ({metric, bound: max|min, value}, the vocabulary of
    `kneeboard check --max/--min`) that every succeeded fidelity job whose compressed model is in scope must
    meet. Scope: every model ("all"), models with a tag ("tag"), or models whose name starts with a prefix
    ("family")."""

    __tablename__ = "budgets"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(16))
    scope_value: Mapped[str] = mapped_column(String(200), default="")
    rules: Mapped[list[Any]] = mapped_column(JSON)
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class Alert(Base):
    """A budget breached by a finished job: the rules it broke, and the state of its webhook delivery
    ("none": no webhook configured, "pending", "delivered", "failed")."""

    __tablename__ = "alerts"
    __table_args__ = (
        UniqueConstraint("budget_id", "job_id"),
        Index("ix_alerts_project_created", "project_id", "created_at"),
        Index("ix_alerts_delivery_due", "delivery_state", "next_attempt_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    # The budget's name is kept, so an alert still reads after its budget was deleted.
    budget_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("budgets.id", ondelete="SET NULL"), default=None
    )
    budget_name: Mapped[str] = mapped_column(String(200))
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    breaches: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    acknowledged_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    acknowledged_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    delivery_state: Mapped[str] = mapped_column(String(16), default="none")
    delivery_attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    delivered_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
