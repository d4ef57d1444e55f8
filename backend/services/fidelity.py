"""The SQL behind the fidelity routes: a job's stored summary and which diagnostics it has, a page of its
per-sample table, and a project's succeeded fidelity runs with the names of what they compared.
routes/fidelity.py turns the rows into the typed answers."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_SUMMARY, JobKind
from backend.db.models import Dataset, Job, JobResult, JobStatus, Model, SampleDivergence
from backend.sample_order import sample_page


def summary_and_stored(
    session: Session, job_id: uuid.UUID, optional_keys: Collection[str]
) -> tuple[dict[str, Any], set[str]]:
    """The job's stored fidelity summary, and which of `optional_keys` it has results under."""
    summary = session.execute(
        select(JobResult.payload).where(JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_SUMMARY)
    ).scalar_one()
    stored = set(
        session.execute(
            select(JobResult.key).where(JobResult.job_id == job_id, JobResult.key.in_(optional_keys))
        ).scalars()
    )
    return summary, stored


SORTABLE = {
    "kl": SampleDivergence.kl,
    "cosine": SampleDivergence.cosine,
    "mse": SampleDivergence.mse,
    "sample_index": SampleDivergence.sample_index,
}


def sample_divergences(
    session: Session,
    job: Job,
    output: str | None,
    sort: Literal["kl", "cosine", "mse", "sample_index"],
    order: Literal["asc", "desc"],
    flagged: bool | None,
    flipped: bool | None,
    offset: int,
    limit: int,
    task_metric: str | None = None,
) -> tuple[int, Sequence[SampleDivergence]]:
    """One page of the job's per-sample table for `output` (default: its first output), filtered and sorted
    by a column or, with `task_metric`, by that per-sample task value (ties by sample index; missing values
    last either way), and how many rows match."""
    if output is None:
        output = session.execute(
            select(SampleDivergence.output_name).where(SampleDivergence.job_id == job.id).limit(1)
        ).scalar_one_or_none()
    conditions = [SampleDivergence.job_id == job.id, SampleDivergence.output_name == output]
    if flagged is not None:
        conditions.append(SampleDivergence.flagged == flagged)
    if flipped is not None:
        conditions.append(SampleDivergence.top1_match == (not flipped))
    column = SORTABLE[sort] if task_metric is None else SampleDivergence.task_values[task_metric].as_float()
    ordering = column.desc().nulls_last() if order == "desc" else column.asc().nulls_last()
    return sample_page(
        session,
        job.id,
        job.finished_at,
        output,
        conditions,
        [ordering, SampleDivergence.sample_index],
        (sort if task_metric is None else f"task:{task_metric}", order, flagged, flipped),
        offset,
        limit,
    )


@dataclass(frozen=True)
class FidelityRuns:
    total: int
    page: list[tuple[Job, dict[str, Any]]]  # (job, stored summary), newest first
    names: dict[uuid.UUID, str | None]  # every model and dataset the page names; None: deleted since


def fidelity_runs(
    session: Session,
    project_id: uuid.UUID,
    golden_model_id: uuid.UUID | None,
    dataset_id: uuid.UUID | None,
    limit: int,
    offset: int,
    compressed_model_id: uuid.UUID | None = None,
) -> FidelityRuns:
    conditions = [
        Job.project_id == project_id,
        Job.kind == JobKind.fidelity.value,
        Job.status == JobStatus.succeeded.value,
        JobResult.key == RESULT_FIDELITY_SUMMARY,
    ]
    if golden_model_id is not None:
        conditions.append(Job.params["golden_model_id"].as_string() == str(golden_model_id))
    if dataset_id is not None:
        conditions.append(Job.params["dataset_id"].as_string() == str(dataset_id))
    if compressed_model_id is not None:
        conditions.append(Job.params["compressed_model_id"].as_string() == str(compressed_model_id))
    joined = select(Job, JobResult.payload).join(JobResult, JobResult.job_id == Job.id).where(*conditions)
    total = session.execute(select(func.count()).select_from(joined.subquery())).scalar_one()
    page = [
        (job, payload)
        for job, payload in session.execute(
            joined.order_by(Job.finished_at.desc(), Job.id).limit(limit).offset(offset)
        ).tuples()
    ]
    ids = {
        uuid.UUID(job.params[k])
        for job, _ in page
        for k in ("golden_model_id", "compressed_model_id", "dataset_id")
    }
    found: dict[uuid.UUID, str] = {}
    for table in (Model, Dataset):
        found |= dict(session.execute(select(table.id, table.name).where(table.id.in_(ids))).tuples().all())
    return FidelityRuns(total, page, {i: found.get(i) for i in ids})
