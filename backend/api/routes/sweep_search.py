"""A sweep's accuracy-aware search (issue 33): the steps it measured and the plan it returned."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.sweep_search import SweepSearchOut
from backend.api.routes.lookup import job_result, succeeded_job
from backend.contracts import RESULT_SWEEP_SEARCH, JobKind
from backend.errors import Conflict, NotFound

router = APIRouter(tags=["sweep"])


@router.get(
    "/jobs/{job_id}/sweep/search",
    operation_id="getSweepSearch",
    responses=error_responses(NotFound, Conflict),
)
def get_sweep_search(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> SweepSearchOut:
    succeeded_job(session, job_id, JobKind.sweep, caller)
    doc = job_result(
        session, job_id, RESULT_SWEEP_SEARCH, f"sweep job {job_id} ran no search (its params have no search)"
    )
    return SweepSearchOut.model_validate(doc)
