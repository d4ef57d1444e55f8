from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from sqlalchemy import func, select

from backend.api.deps import SessionDep
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import FidelityReportOut, Page, SampleDivergenceOut
from backend.contracts import RESULT_FIDELITY_SUMMARY, JobKind
from backend.db.models import Job, JobResult, JobStatus, SampleDivergence
from backend.errors import Conflict, InvalidRequest

router = APIRouter(tags=["fidelity"])

SORTABLE = {
    "kl": SampleDivergence.kl,
    "cosine": SampleDivergence.cosine,
    "mse": SampleDivergence.mse,
    "sample_index": SampleDivergence.sample_index,
}


def _fidelity_job(session: SessionDep, job_id: uuid.UUID) -> Job:
    job = get_or_404(session, Job, job_id)
    if job.kind != JobKind.fidelity.value:
        raise InvalidRequest(f"job {job_id} is a {job.kind} job, not a fidelity job")
    if job.status != JobStatus.succeeded.value:
        detail = f": {job.error}" if job.error else ""
        raise Conflict(f"job {job_id} is {job.status}{detail}; results exist once it has succeeded")
    return job


@router.get("/jobs/{job_id}/fidelity", operation_id="getFidelityReport")
def get_fidelity_report(job_id: uuid.UUID, session: SessionDep) -> FidelityReportOut:
    job = _fidelity_job(session, job_id)
    summary = session.execute(
        select(JobResult.payload).where(JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_SUMMARY)
    ).scalar_one()
    return FidelityReportOut(
        job_id=job.id,
        golden_model_id=job.params["golden_model_id"],
        compressed_model_id=job.params["compressed_model_id"],
        dataset_id=job.params["dataset_id"],
        summary=summary,
    )


@router.get("/jobs/{job_id}/fidelity/samples", operation_id="listFidelitySamples")
def list_fidelity_samples(
    job_id: uuid.UUID,
    session: SessionDep,
    output: str | None = Query(default=None, description="Output name; default: the first output."),
    sort: Literal["kl", "cosine", "mse", "sample_index"] = "kl",
    order: Literal["asc", "desc"] = "desc",
    flagged: bool | None = Query(default=None, description="Only samples flagged (or not) as degraded."),
    flipped: bool | None = Query(
        default=None, description="Only samples whose top-1 class changed (or not)."
    ),
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> Page[SampleDivergenceOut]:
    _fidelity_job(session, job_id)
    if output is None:
        output = session.execute(
            select(SampleDivergence.output_name).where(SampleDivergence.job_id == job_id).limit(1)
        ).scalar_one_or_none()
    conditions = [SampleDivergence.job_id == job_id, SampleDivergence.output_name == output]
    if flagged is not None:
        conditions.append(SampleDivergence.flagged == flagged)
    if flipped is not None:
        conditions.append(SampleDivergence.top1_match == (not flipped))
    column = SORTABLE[sort]
    ordering = column.desc().nulls_last() if order == "desc" else column.asc().nulls_last()
    total = session.execute(
        select(func.count()).select_from(SampleDivergence).where(*conditions)
    ).scalar_one()
    rows = session.execute(
        select(SampleDivergence)
        .where(*conditions)
        .order_by(ordering, SampleDivergence.sample_index)
        .limit(limit)
        .offset(offset)
    ).scalars()
    return Page[SampleDivergenceOut](
        items=[SampleDivergenceOut.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )
