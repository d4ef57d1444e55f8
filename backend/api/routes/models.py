from __future__ import annotations

import json
import uuid

from fastapi import APIRouter, Request, status
from sqlalchemy import select

from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.multipart_upload import form_text, multipart_openapi, receive_upload
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import ModelOut
from backend.contracts import JobKind
from backend.db.models import Job, JobStatus, Model, ModelStatus, Project
from backend.errors import InvalidUpload
from backend.model_formats import detect_model_format
from backend.services.artifacts import persist, release
from backend.services.jobs import dispatch, new_job
from backend.storage import staging_file

router = APIRouter(tags=["models"])


def _parse_input_shapes(raw: str | None) -> dict[str, list[int]] | None:
    if not raw:
        return None
    try:
        shapes = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidUpload(f'input_shapes must be JSON like {{"input": [1, 3, 224, 224]}}: {exc}') from exc
    if not isinstance(shapes, dict) or not all(
        isinstance(v, list) and all(isinstance(d, int) and d > 0 for d in v) for v in shapes.values()
    ):
        raise InvalidUpload(
            'input_shapes must map input names to lists of positive ints, e.g. {"input": [1, 3, 8, 8]}'
        )
    return shapes


def model_out(session: SessionDep, model: Model) -> ModelOut:
    """While a model is being inspected, its inspect job's failure is the model's failure."""
    out = ModelOut.model_validate(model)
    if model.status == ModelStatus.inspecting.value and model.inspect_job_id is not None:
        job = session.get(Job, model.inspect_job_id)
        if job is None or job.status in (JobStatus.failed.value, JobStatus.cancelled.value):
            reason = job.error if job and job.error else "its inspection job was cancelled or lost"
            out = out.model_copy(update={"status": ModelStatus.invalid.value, "error": reason})
    return out


@router.post(
    "/projects/{project_id}/models",
    status_code=status.HTTP_201_CREATED,
    operation_id="uploadModel",
    summary="Upload a model (.onnx, zipped ONNX with external data, .pt2, TorchScript .pt)",
    openapi_extra=multipart_openapi(
        "The model file.",
        {
            "name": "Display name (default: the file name).",
            "input_shapes": 'JSON of concrete input shapes for MACs/FLOPs, e.g. {"input": [1, 3, 224, 224]}.',
        },
    ),
)
async def upload_model(
    project_id: uuid.UUID, request: Request, session: SessionDep, store: StoreDep, settings: SettingsDep
) -> ModelOut:
    get_or_404(session, Project, project_id)
    with staging_file(store) as path:
        staged, filename, fields = await receive_upload(request, path, settings.max_upload_bytes)
        shapes = _parse_input_shapes(fields.get("input_shapes"))
        fmt = detect_model_format(staged.path, filename)
        model = Model(
            id=uuid.uuid4(),
            project_id=project_id,
            name=form_text(fields, "name") or filename,
            filename=filename,
            format=fmt,
            artifact_sha256=staged.sha256,
            size_bytes=staged.size_bytes,
            status=ModelStatus.inspecting.value,
            declared_input_shapes=shapes,
        )
        job = new_job(project_id, JobKind.inspect, {"model_id": str(model.id)})
        model.inspect_job_id = job.id
        persist(session, store, staged, lambda s: s.add_all([model, job]))
    dispatch(session, settings, job)
    return model_out(session, model)


@router.get("/projects/{project_id}/models", operation_id="listModels")
def list_models(project_id: uuid.UUID, session: SessionDep) -> list[ModelOut]:
    get_or_404(session, Project, project_id)
    rows = session.execute(
        select(Model).where(Model.project_id == project_id).order_by(Model.created_at)
    ).scalars()
    return [model_out(session, m) for m in rows]


@router.get("/models/{model_id}", operation_id="getModel")
def get_model(model_id: uuid.UUID, session: SessionDep) -> ModelOut:
    return model_out(session, get_or_404(session, Model, model_id))


@router.delete("/models/{model_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="deleteModel")
def delete_model(model_id: uuid.UUID, session: SessionDep, store: StoreDep) -> None:
    model = get_or_404(session, Model, model_id)
    sha = model.artifact_sha256
    session.delete(model)
    session.commit()
    release(session, store, sha)
