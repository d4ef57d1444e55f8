"""A sweep's sensitivity sources, checked at launch (422 / 409 with words): the scan a mixed-precision block
plans from, and the scan an accuracy-aware search ranks its layers by, are succeeded scans of the sweep's own
model; the search's scan also has its "only" result (each layer compressed alone)."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from backend.accounts import Caller
from backend.api.deps import SessionDep
from backend.api.routes.lookup import get_in_project_or_404
from backend.contracts import RESULT_SENSITIVITY, JobKind, SweepJobParams
from backend.db.models import Job, JobResult, JobStatus
from backend.errors import Conflict, InvalidRequest


def check_sweep_sources(
    session: SessionDep, project_id: uuid.UUID, caller: Caller, params: SweepJobParams
) -> None:
    if params.mixed_precision is not None:
        _check_scan(
            session, project_id, caller, params, "mixed_precision", params.mixed_precision.sensitivity_job_id
        )
    if params.search is not None:
        _check_scan(session, project_id, caller, params, "search", params.search.sensitivity_job_id)
        _check_search_scan(session, params.search.sensitivity_job_id)


def _check_scan(
    session: SessionDep,
    project_id: uuid.UUID,
    caller: Caller,
    params: SweepJobParams,
    field: str,
    source_id: uuid.UUID,
) -> None:
    """A sweep's sensitivity source (mixed_precision, search): a succeeded scan of the sweep's own model."""
    source = get_in_project_or_404(session, Job, source_id, project_id, caller)
    if source.kind != JobKind.sensitivity.value:
        raise InvalidRequest(f"params.{field}.sensitivity_job_id: job {source_id} is a {source.kind} job")
    if source.status != JobStatus.succeeded.value:
        raise Conflict(
            f"the sensitivity job {source_id} is {source.status}; plans exist once it has succeeded"
        )
    if source.params.get("model_id") != str(params.model_id):
        raise InvalidRequest(
            f"params.{field}.sensitivity_job_id: job {source_id} scanned another model "
            f"({source.params.get('model_id')}), not {params.model_id}"
        )


def _check_search_scan(session: SessionDep, source_id: uuid.UUID) -> None:
    """The search ranks layers by the scan's "only" result (each layer compressed alone)."""
    mode = session.execute(
        select(JobResult.payload["mode"].as_string()).where(
            JobResult.job_id == source_id, JobResult.key == RESULT_SENSITIVITY
        )
    ).scalar_one_or_none()
    if mode != "only":
        raise InvalidRequest(
            f"params.search.sensitivity_job_id: job {source_id} has "
            + ("no layer-by-layer result" if mode is None else f"a {mode!r} result")
            + "; the search ranks layers by an 'only' scan (each layer compressed alone)"
        )
