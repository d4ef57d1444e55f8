"""Fetch-or-404 helpers, so every route reports unknown ids the same way."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.contracts import JobKind
from backend.db.models import Base, Dataset, Job, JobResult, JobStatus, Model, Project
from backend.errors import Conflict, InvalidRequest, NotFound

Row = TypeVar("Row", bound=Base)

_LABELS: dict[type[Base], str] = {Project: "project", Model: "model", Dataset: "dataset", Job: "job"}


def get_or_404(session: Session, table: type[Row], row_id: uuid.UUID) -> Row:
    row = session.get(table, row_id)
    if row is None:
        label = _LABELS.get(table, table.__name__.lower())
        raise NotFound(f"no {label} with id {row_id}; list them with GET /api/v1/{label}s")
    return row


def get_in_project_or_404(
    session: Session, table: type[Row], row_id: uuid.UUID, project_id: uuid.UUID
) -> Row:
    row = get_or_404(session, table, row_id)
    if getattr(row, "project_id", None) != project_id:
        label = _LABELS.get(table, table.__name__.lower())
        raise NotFound(f"no {label} with id {row_id} in project {project_id}")
    return row


def succeeded_job(session: Session, job_id: uuid.UUID, kind: JobKind) -> Job:
    """The job, if it is of this kind and has succeeded (its results exist only then)."""
    job = get_or_404(session, Job, job_id)
    if job.kind != kind.value:
        raise InvalidRequest(f"job {job_id} is a {job.kind} job, not a {kind.value} job")
    if job.status != JobStatus.succeeded.value:
        detail = f": {job.error}" if job.error else ""
        raise Conflict(f"job {job_id} is {job.status}{detail}; results exist once it has succeeded")
    return job


def job_result(session: Session, job_id: uuid.UUID, key: str, missing: str) -> dict[str, Any]:
    """A stored result document of a job; NotFound with `missing` as the message when there is none."""
    payload = session.execute(
        select(JobResult.payload).where(JobResult.job_id == job_id, JobResult.key == key)
    ).scalar_one_or_none()
    if payload is None:
        raise NotFound(missing)
    return dict(payload)
