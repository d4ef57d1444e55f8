from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Request, Response, status
from fastapi.responses import FileResponse
from pydantic import Field, TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Role
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.multipart_upload import default_name, form_json, form_text, multipart_openapi, receive_upload
from backend.api.routes.annotate import apply_update, delete_upload
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import ModelOut, ResourceUpdate
from backend.archive_limits import archive_limits
from backend.audit import AuditAction, record
from backend.contracts import JobKind
from backend.db.models import Job, JobStatus, Model, ModelStatus, Project
from backend.errors import (
    Forbidden,
    InvalidRequest,
    InvalidUpload,
    NotFound,
    QueueUnavailable,
    StorageError,
    UploadTooLarge,
)
from backend.model_formats import detect_model_format
from backend.services.artifacts import persist
from backend.services.jobs import dispatch, new_job
from backend.storage import staging_file

router = APIRouter(tags=["models"])


# One dimension of a concrete input shape: a positive int (not a bool, not 2.0) that fits ONNX's int64.
Dim = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]
INPUT_SHAPES = TypeAdapter(dict[str, list[Dim]])
INPUT_SHAPES_EXAMPLE = '{"input": [1, 3, 224, 224]}'


def _parse_input_shapes(fields: dict[str, str]) -> dict[str, list[int]] | None:
    raw = form_json(fields, "input_shapes", INPUT_SHAPES_EXAMPLE)
    if raw is None:
        return None
    try:
        return INPUT_SHAPES.validate_python(raw)
    except ValidationError as exc:
        details = "; ".join(
            f"input_shapes{''.join(f'[{p!r}]' for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidUpload(
            f"input_shapes must map input names to lists of positive ints, e.g. {INPUT_SHAPES_EXAMPLE}: {details}"
        ) from exc


def model_out(session: SessionDep, model: Model) -> ModelOut:
    """While a model is being inspected, its inspect job's failure is the model's failure."""
    out = ModelOut.model_validate(model)
    if model.status == ModelStatus.inspecting.value and model.inspect_job_id is not None:
        job = session.get(Job, model.inspect_job_id)
        if job is None or job.status in (JobStatus.failed.value, JobStatus.cancelled.value):
            reason = job.error if job and job.error else "its inspection job was cancelled or lost"
            out = out.model_copy(update={"status": ModelStatus.invalid.value, "error": reason})
    return out


def _same_model(
    session: Session, project_id: uuid.UUID, sha256: str, shapes: dict[str, list[int]] | None
) -> Model | None:
    """The project's model made from the same file and input shapes, unless it is invalid (a re-upload may
    then be a retry after a fixed worker); the oldest one."""
    candidates = session.scalars(
        select(Model)
        .where(Model.project_id == project_id, Model.artifact_sha256 == sha256)
        .order_by(Model.created_at)
    ).all()
    return next(
        (
            m
            for m in candidates
            if m.declared_input_shapes == shapes and model_out(session, m).status != ModelStatus.invalid.value
        ),
        None,
    )


@router.post(
    "/projects/{project_id}/models",
    status_code=status.HTTP_201_CREATED,
    operation_id="uploadModel",
    responses={
        200: {
            "model": ModelOut,
            "description": "The same file is already in the project: the existing model, with duplicate_of set; "
            "nothing new was stored.",
        },
        **error_responses(
            NotFound, Forbidden, InvalidRequest, InvalidUpload, UploadTooLarge, StorageError, QueueUnavailable
        ),
    },
    summary="Upload a model (.onnx, zipped ONNX with external data, .pt2, TorchScript .pt); the same file "
    "again answers 200 with the existing model (duplicate_of)",
    openapi_extra=multipart_openapi(
        "The model file.",
        {
            "name": "Display name (default: the file name).",
            "input_shapes": 'JSON of concrete input shapes for MACs/FLOPs, e.g. {"input": [1, 3, 224, 224]}.',
        },
    ),
)
async def upload_model(
    project_id: uuid.UUID,
    request: Request,
    response: Response,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
) -> ModelOut:
    project = get_or_404(session, Project, project_id, caller, Role.member, "uploading a model")
    with staging_file(store) as path:
        staged, filename, fields = await receive_upload(request, path, settings.max_upload_bytes)
        shapes = _parse_input_shapes(fields)
        fmt = detect_model_format(staged.path, filename, archive_limits(settings))
        existing = _same_model(session, project_id, staged.sha256, shapes)
        if existing is not None:
            response.status_code = status.HTTP_200_OK
            return model_out(session, existing).model_copy(update={"duplicate_of": existing.id})
        model = Model(
            id=uuid.uuid4(),
            project_id=project_id,
            name=form_text(fields, "name") or default_name(filename),
            filename=filename,
            format=fmt,
            artifact_sha256=staged.sha256,
            size_bytes=staged.size_bytes,
            status=ModelStatus.inspecting.value,
            declared_input_shapes=shapes,
            created_by=caller.user_id,
        )
        job = new_job(project_id, JobKind.inspect, {"model_id": str(model.id)}, caller.user_id)
        model.inspect_job_id = job.id

        def add_rows(s: Session) -> None:
            s.add_all([model, job])
            record(
                s, caller, project.team_id, AuditAction.model_uploaded, "model", model.id, project_id,
                name=model.name, filename=filename, size_bytes=staged.size_bytes, sha256=staged.sha256,
            )  # fmt: skip

        persist(session, store, staged, add_rows)
    dispatch(session, settings, job)
    return model_out(session, model)


@router.get(
    "/projects/{project_id}/models",
    operation_id="listModels",
    responses=error_responses(NotFound, InvalidRequest),
)
def list_models(project_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> list[ModelOut]:
    get_or_404(session, Project, project_id, caller)
    rows = session.execute(
        select(Model).where(Model.project_id == project_id).order_by(Model.created_at)
    ).scalars()
    return [model_out(session, m) for m in rows]


@router.get(
    "/models/{model_id}", operation_id="getModel", responses=error_responses(NotFound, InvalidRequest)
)
def get_model(model_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> ModelOut:
    return model_out(session, get_or_404(session, Model, model_id, caller))


@router.get(
    "/models/{model_id}/file",
    operation_id="downloadModel",
    responses=error_responses(NotFound, InvalidRequest)
    | {200: {"content": {"application/octet-stream": {}}, "description": "The model file as uploaded."}},
    response_class=FileResponse,
)
def download_model(
    model_id: uuid.UUID, session: SessionDep, store: StoreDep, caller: CallerDep
) -> FileResponse:
    """The model's file exactly as it was uploaded (the same bytes, so its sha256 is the model's
    `artifact_sha256`), under its upload name: any member of the team may take a copy."""
    model = get_or_404(session, Model, model_id, caller)
    return FileResponse(
        store.local_path(model.artifact_sha256),
        media_type="application/octet-stream",
        filename=model.filename,
    )


@router.patch(
    "/models/{model_id}",
    operation_id="updateModel",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def update_model(
    model_id: uuid.UUID, body: ResourceUpdate, session: SessionDep, caller: CallerDep
) -> ModelOut:
    """Rename a model, replace its notes or tags. Members may change the models they uploaded; team admins
    any model of the team."""
    model = get_or_404(session, Model, model_id, caller)
    apply_update(session, caller, model, body)
    return model_out(session, model)


@router.delete(
    "/models/{model_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="deleteModel",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def delete_model(model_id: uuid.UUID, session: SessionDep, store: StoreDep, caller: CallerDep) -> None:
    """Members may delete the models they uploaded; team admins any model of the team."""
    delete_upload(session, store, caller, get_or_404(session, Model, model_id, caller))
