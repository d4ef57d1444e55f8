"""A model family's fidelity over time: the succeeded fidelity jobs of a project that compare against one
golden model (optionally on one dataset), with their stored summaries and the compressed models' names and
tags. The SQL lives here; routes/trends.py turns the rows into the typed answer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_SUMMARY, JobKind
from backend.db.models import Dataset, Job, JobResult, JobStatus, Model


@dataclass(frozen=True)
class TrendRow:
    job: Job
    summary: dict[str, Any]


@dataclass(frozen=True)
class FamilyTrend:
    total: int
    rows: list[TrendRow]  # oldest first
    model_names: dict[uuid.UUID, str]
    model_tags: dict[uuid.UUID, list[str]]
    dataset_names: dict[uuid.UUID, str]


def family_trend(
    session: Session,
    project_id: uuid.UUID,
    golden_model_id: uuid.UUID,
    dataset_id: uuid.UUID | None,
    limit: int,
) -> FamilyTrend:
    """The newest `limit` succeeded fidelity jobs of the family, returned oldest first (finish time, then
    creation time, then id: a stable order for jobs that finished in the same instant)."""
    conditions = [
        Job.project_id == project_id,
        Job.kind == JobKind.fidelity.value,
        Job.status == JobStatus.succeeded.value,
        JobResult.key == RESULT_FIDELITY_SUMMARY,
        Job.params["golden_model_id"].as_string() == str(golden_model_id),
    ]
    if dataset_id is not None:
        conditions.append(Job.params["dataset_id"].as_string() == str(dataset_id))
    joined = select(Job, JobResult.payload).join(JobResult, JobResult.job_id == Job.id).where(*conditions)
    total = session.execute(select(func.count()).select_from(joined.subquery())).scalar_one()
    newest = session.execute(
        joined.order_by(Job.finished_at.desc().nulls_last(), Job.created_at.desc(), Job.id.desc()).limit(
            limit
        )
    ).tuples()
    rows = [TrendRow(job, dict(payload)) for job, payload in newest][::-1]
    model_ids = {uuid.UUID(str(r.job.params["compressed_model_id"])) for r in rows} | {golden_model_id}
    dataset_ids = {uuid.UUID(str(r.job.params["dataset_id"])) for r in rows}
    models = session.execute(select(Model.id, Model.name, Model.tags).where(Model.id.in_(model_ids))).tuples()
    names: dict[uuid.UUID, str] = {}
    tags: dict[uuid.UUID, list[str]] = {}
    for model_id, name, model_tags in models:
        names[model_id] = name
        tags[model_id] = [str(t) for t in model_tags or []]
    datasets = dict(
        session.execute(select(Dataset.id, Dataset.name).where(Dataset.id.in_(dataset_ids))).tuples().all()
    )
    return FamilyTrend(total, rows, names, tags, datasets)
