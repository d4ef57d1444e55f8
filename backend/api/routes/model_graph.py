"""GET /models/{id}/graph: the display graph the inspect job stored with the model (a result of that job)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.graph_schemas import ModelGraphOut
from backend.api.routes.lookup import get_or_404
from backend.api.routes.models import model_out
from backend.contracts import RESULT_MODEL_GRAPH
from backend.db.models import Job, JobResult, Model, ModelStatus
from backend.errors import Conflict, InvalidRequest, NotFound

router = APIRouter(tags=["models"])


@router.get(
    "/models/{model_id}/graph",
    operation_id="getModelGraph",
    responses=error_responses(NotFound, Conflict, InvalidRequest),
)
def get_model_graph(model_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> ModelGraphOut:
    """The model's compute graph: nodes (canonical ids, op types, aliases, module and group paths, parameters,
    MACs, QDQ folded in) and edges. 409 while the model is inspected, when it is invalid, or when no graph is
    stored (inspected before graphs were recorded, or its inspect job deleted), saying how to get one."""
    model = get_or_404(session, Model, model_id, caller)
    state = model_out(session, model)
    if state.status == ModelStatus.inspecting.value:
        raise Conflict(
            f"model {model.name!r} is still being inspected; its graph is ready when that job ends"
        )
    if state.status == ModelStatus.invalid.value:
        raise Conflict(f"model {model.name!r} is invalid ({state.error}); it has no graph")
    payload = None
    if model.inspect_job_id is not None:
        payload = session.execute(
            select(JobResult.payload).where(
                JobResult.job_id == model.inspect_job_id, JobResult.key == RESULT_MODEL_GRAPH
            )
        ).scalar_one_or_none()
    if payload is None:
        raise Conflict(_why_no_graph(session, model))
    return ModelGraphOut.model_validate({"model_id": model.id, **payload})


def _why_no_graph(session: Session, model: Model) -> str:
    """Why a ready model has no stored graph, and what would draw one: the advice fits the model (an upload is
    uploaded again; a model a job made is made again by relaunching that job, which records its graph)."""
    stem = f"no graph is stored for model {model.name!r}"
    inspector = session.get(Job, model.inspect_job_id) if model.inspect_job_id is not None else None
    if model.inspect_job_id is None:
        cause = (
            "it was stored before Kneeboard inspected models it makes"
            if model.lineage
            else ("it was uploaded before Kneeboard recorded graphs")
        )
    elif inspector is None:
        cause = f"the job that inspected it ({model.inspect_job_id}) was deleted, and its graph with it"
    else:
        cause = f"it was inspected (job {inspector.id}) before Kneeboard recorded graphs"
    maker_id = (model.lineage or {}).get("job_id")
    if maker_id is None:
        return f"{stem}: {cause}. Delete the model and upload the file again to draw its graph."
    maker = session.get(Job, uuid.UUID(str(maker_id)))
    kind = (model.lineage or {}).get("kind", "recovery")
    if maker is None:
        return (
            f"{stem}: {cause}. It was made by {kind} job {maker_id}, since deleted: launch that {kind} "
            "again for a model with a graph."
        )
    return (
        f"{stem}: {cause}. It was made by {kind} job {maker_id}: relaunch that job (Relaunch in the "
        "project's jobs list) for a model with its graph."
    )
