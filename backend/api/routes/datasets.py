from __future__ import annotations

import uuid
from pathlib import Path

from fastapi import APIRouter, Request, Response, status
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Role
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.multipart_upload import default_name, form_json, form_text, multipart_openapi, receive_upload
from backend.api.routes.annotate import apply_update, delete_upload
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import DatasetOut, ResourceUpdate
from backend.archive_limits import archive_limits
from backend.audit import AuditAction, record
from backend.contracts import ImagePreprocessing
from backend.db.models import Dataset, Project
from backend.errors import Forbidden, InvalidRequest, InvalidUpload, NotFound, StorageError, UploadTooLarge
from backend.services.artifacts import persist
from backend.settings import Settings
from backend.storage import staging_file
from dataset_readers.errors import DatasetFormatError
from dataset_readers.interface import ReadOptions
from dataset_readers.registry import reader_for

router = APIRouter(tags=["datasets"])

KIND_BY_SUFFIX = {
    ".npz": "npz",
    ".zip": "image_zip",
    ".jsonl": "prompts_jsonl",  # text, tokenized at job time with the golden model's tokenizer (issue 31)
    ".txt": "text_corpus",
}


@router.post(
    "/projects/{project_id}/datasets",
    status_code=status.HTTP_201_CREATED,
    operation_id="uploadDataset",
    responses={
        200: {
            "model": DatasetOut,
            "description": "The same file is already in the project: the existing dataset, with duplicate_of set; "
            "nothing new was stored.",
        },
        **error_responses(NotFound, Forbidden, InvalidRequest, InvalidUpload, UploadTooLarge, StorageError),
    },
    summary="Upload a dataset: .npz (arrays named after the model inputs, optional int 'labels'), a .zip of "
    "images with an optional labels.csv (filename,label) and a preprocessing recipe, a .jsonl of prompts "
    "(optional reference continuations) or a .txt corpus, both tokenized at job time with the golden model's "
    "tokenizer; the same file (and recipe) again answers 200 with the existing dataset (duplicate_of)",
    openapi_extra=multipart_openapi(
        "The .npz file, the .zip of images, the .jsonl of prompts or the .txt corpus.",
        {
            "name": "Display name (default: the file name).",
            "preprocessing": "For a zip of images: JSON of the recipe (size, mode, scale, mean, std, layout, "
            "input_name); see ImagePreprocessing.",
        },
    ),
)
async def upload_dataset(
    project_id: uuid.UUID,
    request: Request,
    response: Response,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
) -> DatasetOut:
    project = get_or_404(session, Project, project_id, caller, Role.member, "uploading a dataset")
    with staging_file(store) as path:
        staged, filename, fields = await receive_upload(request, path, settings.max_upload_bytes)
        suffix = Path(filename).suffix.lower()
        if suffix not in KIND_BY_SUFFIX:
            raise InvalidUpload(
                f"unsupported dataset file {filename!r}: upload a .npz written by numpy.savez('data.npz', "
                "input=x, labels=y), a .zip of images with an optional labels.csv, a .jsonl of prompts "
                '({"prompt": ..., "reference": ...} a line) or a .txt corpus'
            )
        kind = KIND_BY_SUFFIX[suffix]
        dataset = Dataset(
            id=uuid.uuid4(),
            project_id=project_id,
            name=form_text(fields, "name") or default_name(filename),
            filename=filename,
            artifact_sha256=staged.sha256,
            size_bytes=staged.size_bytes,
            created_by=caller.user_id,
        )
        recipe = _parse_recipe(fields) if kind == "image_zip" else None
        _describe_into(dataset, kind, staged.path, recipe, settings)
        existing = session.scalars(
            select(Dataset)
            .where(Dataset.project_id == project_id, Dataset.artifact_sha256 == staged.sha256)
            .order_by(Dataset.created_at)
        ).all()
        # the same bytes read another way (a recipe, or .jsonl vs .txt) are another dataset
        same = next(
            (d for d in existing if d.preprocessing == dataset.preprocessing and d.kind == dataset.kind), None
        )
        if same is not None:  # the same file read the same way: answer with it, store nothing
            response.status_code = status.HTTP_200_OK
            return DatasetOut.model_validate(same).model_copy(update={"duplicate_of": same.id})

        def add_rows(s: Session) -> None:
            s.add(dataset)
            record(
                s, caller, project.team_id, AuditAction.dataset_uploaded, "dataset", dataset.id, project_id,
                name=dataset.name, filename=filename, size_bytes=staged.size_bytes, sha256=staged.sha256,
            )  # fmt: skip

        persist(session, store, staged, add_rows)
    return DatasetOut.model_validate(dataset)


RECIPE_EXAMPLE = (
    '{"size": [224, 224], "mode": "RGB", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}'
)


def _parse_recipe(fields: dict[str, str]) -> ImagePreprocessing:
    raw = form_json(fields, "preprocessing", RECIPE_EXAMPLE)
    try:
        return ImagePreprocessing() if raw is None else ImagePreprocessing.model_validate(raw)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(map(str, ('preprocessing', *e['loc'])))}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidUpload(details or str(exc)) from exc


def _describe_into(
    dataset: Dataset, kind: str, path: Path, recipe: ImagePreprocessing | None, settings: Settings
) -> None:
    """The upload check of the dataset's reader (dataset_readers), its refusal an InvalidUpload; what it
    learns goes on the row. A zip of images keeps its recipe, which made the arrays it describes."""
    options = ReadOptions(recipe=recipe, max_pixels=settings.image_max_pixels)
    try:
        description = reader_for(kind).describe(path, archive_limits(settings), options)
    except DatasetFormatError as exc:
        raise InvalidUpload(exc.message) from exc
    dataset.kind = kind
    dataset.n_samples = description.n_samples
    dataset.arrays = description.arrays_json()
    dataset.has_labels = description.has_labels
    if recipe is not None:
        dataset.preprocessing = recipe.model_dump(mode="json")


@router.get(
    "/projects/{project_id}/datasets",
    operation_id="listDatasets",
    responses=error_responses(NotFound, InvalidRequest),
)
def list_datasets(project_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> list[DatasetOut]:
    get_or_404(session, Project, project_id, caller)
    rows = session.execute(
        select(Dataset).where(Dataset.project_id == project_id).order_by(Dataset.created_at)
    ).scalars()
    return [DatasetOut.model_validate(d) for d in rows]


@router.get(
    "/datasets/{dataset_id}", operation_id="getDataset", responses=error_responses(NotFound, InvalidRequest)
)
def get_dataset(dataset_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> DatasetOut:
    return DatasetOut.model_validate(get_or_404(session, Dataset, dataset_id, caller))


@router.patch(
    "/datasets/{dataset_id}",
    operation_id="updateDataset",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def update_dataset(
    dataset_id: uuid.UUID, body: ResourceUpdate, session: SessionDep, caller: CallerDep
) -> DatasetOut:
    """Rename a dataset, replace its notes or tags. Members may change the datasets they uploaded; team
    admins any dataset of the team."""
    dataset = get_or_404(session, Dataset, dataset_id, caller)
    apply_update(session, caller, dataset, body)
    return DatasetOut.model_validate(dataset)


@router.delete(
    "/datasets/{dataset_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="deleteDataset",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def delete_dataset(dataset_id: uuid.UUID, session: SessionDep, store: StoreDep, caller: CallerDep) -> None:
    """Members may delete the datasets they uploaded; team admins any dataset of the team."""
    delete_upload(session, store, caller, get_or_404(session, Dataset, dataset_id, caller))
