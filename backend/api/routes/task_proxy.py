"""Does the divergence predict the task? (issue 30): a fidelity job with a task adapter stores, per task
metric, Spearman's rho of the primary output's per-sample divergence against the per-sample task loss and
the samples where they disagree most (worker/engine/tasks/proxy.py), and each per-sample row carries the
task's values. These routes serve that document with the scatter's points, and the per-sample rows sorted
worst-first by a task metric."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.task_proxy import TaskProxyOut
from backend.api.routes.lookup import job_result, succeeded_job
from backend.api.schemas import Offset, Page, SampleDivergenceOut
from backend.contracts import RESULT_FIDELITY_TASK_PROXY, JobKind
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.services.task_proxy import scatter_points, task_sample_page

router = APIRouter(tags=["fidelity"])

RESULT_ERRORS = error_responses(NotFound, Conflict, InvalidRequest)

MAX_POINTS = 5000
"""Scatter points served by default: every sample up to this many, else every k-th sample by index."""


def _document(session: SessionDep, job_id: uuid.UUID) -> dict[str, Any]:
    missing = (
        f"job {job_id} has no task proxy: it ran without a task that scores samples (segmentation, ctc...), "
        "or before per-sample task values were stored"
    )
    return job_result(session, job_id, RESULT_FIDELITY_TASK_PROXY, missing)


@router.get("/jobs/{job_id}/fidelity/task", operation_id="getFidelityTaskProxy", responses=RESULT_ERRORS)
def get_fidelity_task_proxy(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    max_points: Annotated[
        int, Query(ge=100, le=20000, description="Most scatter points (a larger job is thinned by index).")
    ] = MAX_POINTS,
) -> TaskProxyOut:
    """Per task metric: Spearman's rho of per-sample divergence (KL, or SQNR for a non-classifier) against the
    per-sample task loss (positive: divergence predicts task loss), its p-value, the samples kept and left
    out, and the samples whose ranks disagree most; with one scatter point per sample."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    document = _document(session, job_id)
    stride, points = scatter_points(session, job_id, document, max_points)
    return TaskProxyOut.model_validate({"job_id": job_id, **document, "points": points, "stride": stride})


@router.get(
    "/jobs/{job_id}/fidelity/task/samples", operation_id="listFidelityTaskSamples", responses=RESULT_ERRORS
)
def list_fidelity_task_samples(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    metric: str = Query(description="A task metric of the job (GET …/fidelity/task lists them)."),
    order: Literal["worst", "best"] = "worst",
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Offset = 0,
) -> Page[SampleDivergenceOut]:
    """The per-sample rows (primary output, with their task values) sorted by a task metric: worst first
    (lowest IoU, highest WER), samples without a value last, ties by sample index."""
    job = succeeded_job(session, job_id, JobKind.fidelity, caller)
    document = _document(session, job_id)
    directions = {m["metric"]: bool(m["higher_is_better"]) for m in document.get("metrics", [])}
    if metric not in directions:
        known = ", ".join(sorted(directions)) or "none"
        raise InvalidRequest(f"job {job_id} has no task metric {metric!r}; it has: {known}")
    total, rows = task_sample_page(
        session, job, document["proxy_output"], metric, directions[metric], order, offset, limit
    )
    return Page[SampleDivergenceOut](
        items=[SampleDivergenceOut.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )
