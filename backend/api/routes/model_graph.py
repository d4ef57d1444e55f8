"""GET /models/{id}/graph: the display graph the inspect job stored with the model (a result of that job)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from sqlalchemy import select

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.graph_schemas import ModelGraphOut
from backend.api.routes.lookup import get_or_404
from backend.api.routes.models import model_out
from backend.contracts import RESULT_MODEL_GRAPH
from backend.db.models import JobResult, Model, ModelStatus
from backend.errors import Conflict, InvalidRequest, NotFound

router = APIRouter(tags=["models"])


@router.get(
    "/models/{model_id}/graph",
    operation_id="getModelGraph",
    responses=error_responses(NotFound, Conflict, InvalidRequest),
)
def get_model_graph(model_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> ModelGraphOut:
    """The model's compute graph: nodes (canonical ids, op types, aliases, module and group paths, parameters,
    MACs, QDQ folded in) and edges. 409 while the model is inspected, when it is invalid, or when it was
    inspected before graphs were recorded."""
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
        raise Conflict(
            f"no graph is stored for model {model.name!r}: it was inspected before Kneeboard recorded graphs, "
            "or its inspect job was deleted. Delete the model and upload the file again to draw its graph."
        )
    return ModelGraphOut.model_validate({"model_id": model.id, **payload})
