"""Trends: a model family's fidelity across versions and runs (is this release worse than the last?).

The family is every succeeded fidelity job of a project against one golden model, optionally on one dataset;
each point is one job's headline numbers (routes/fidelity.py `headline`) with their standard errors
(backend/services/trend_spread.py), labelled with the compressed model
and the tags of the model and the job. The SQL is in backend/services/trends.py.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.trends import TrendModelOut, TrendOut, TrendPointOut, TrendStandardErrors
from backend.api.routes.fidelity import headline
from backend.api.routes.lookup import get_in_project_or_404, get_or_404
from backend.api.schemas import NamedRef
from backend.db.models import Dataset, Model, Project
from backend.errors import InvalidRequest, NotFound
from backend.services.trend_spread import standard_errors
from backend.services.trends import family_trend

router = APIRouter(tags=["fidelity"])

TREND_MAX_POINTS = 500


@router.get(
    "/projects/{project_id}/trends",
    operation_id="getFidelityTrend",
    responses=error_responses(NotFound, InvalidRequest),
    summary="A golden model's family over time: every succeeded fidelity job against it, oldest first, with "
    "its headline metrics, the compressed model's name and tags and the job's tags",
)
def get_fidelity_trend(
    project_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    golden_model_id: uuid.UUID,
    dataset_id: Annotated[
        uuid.UUID | None, Query(description="Only jobs on this dataset (the same inputs run after run).")
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=TREND_MAX_POINTS, description="The newest this many jobs (still oldest first).")
    ] = 200,
) -> TrendOut:
    get_or_404(session, Project, project_id, caller)
    golden = get_in_project_or_404(session, Model, golden_model_id, project_id, caller)
    if dataset_id is not None:
        get_in_project_or_404(session, Dataset, dataset_id, project_id, caller)
    trend = family_trend(session, project_id, golden_model_id, dataset_id, limit)
    errors = standard_errors(session, [(row.job.id, row.summary) for row in trend.rows])
    points = []
    for row in trend.rows:
        job = row.job
        compressed_id = uuid.UUID(str(job.params["compressed_model_id"]))
        data_id = uuid.UUID(str(job.params["dataset_id"]))
        points.append(
            TrendPointOut(
                job_id=job.id,
                job_name=job.name,
                job_tags=[str(t) for t in job.tags or []],
                created_at=job.created_at,
                finished_at=job.finished_at,
                compressed=TrendModelOut(
                    id=compressed_id,
                    name=trend.model_names.get(compressed_id),
                    tags=trend.model_tags.get(compressed_id, []),
                ),
                dataset=NamedRef(id=data_id, name=trend.dataset_names.get(data_id)),
                n_samples=int(row.summary.get("n_samples", 0)),
                headline=headline(row.summary),
                standard_errors=TrendStandardErrors(**errors[job.id]),
            )
        )
    return TrendOut(
        project_id=project_id,
        golden=NamedRef(id=golden.id, name=golden.name),
        dataset_id=dataset_id,
        total=trend.total,
        points=points,
    )
