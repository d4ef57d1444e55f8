"""Results kept as rows so that SQL can page, sort and filter them: per-sample divergences of a fidelity job,
a sweep's points and their packed objective table."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from backend.db.models.base import Base


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
    # With a task adapter (issue 30): the task's per-sample values (metric → number, None where undefined),
    # e.g. {"wer_vs_golden": 0.5, "cer_vs_golden": 0.2}; null for a job without a task.
    task_values: Mapped[dict[str, float | None] | None] = mapped_column(JSON(none_as_null=True), default=None)


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
    export_manifest: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), default=None)


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
