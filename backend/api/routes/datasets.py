from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile, status
from sqlalchemy import select

from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import DatasetOut
from backend.dataset_formats import describe_npz
from backend.db.models import Dataset, Project
from backend.errors import InvalidUpload
from backend.services.artifacts import persist, release, stage_upload, staging_file

router = APIRouter(tags=["datasets"])


@router.post(
    "/projects/{project_id}/datasets",
    status_code=status.HTTP_201_CREATED,
    operation_id="uploadDataset",
    summary="Upload a dataset (.npz: arrays named after the model inputs, optional int 'labels')",
)
async def upload_dataset(
    project_id: uuid.UUID,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="The .npz file.")],
    name: Annotated[str | None, Form(max_length=200)] = None,
) -> DatasetOut:
    get_or_404(session, Project, project_id)
    filename = file.filename or "dataset"
    suffix = Path(filename).suffix.lower()
    if suffix != ".npz":
        raise InvalidUpload(
            f"unsupported dataset file {filename!r}: upload a .npz written by numpy.savez('data.npz', input=x, "
            "labels=y) (zipped image folders are not supported yet)"
        )
    with staging_file(store) as path:
        staged = await stage_upload(file, store, settings.max_upload_bytes, path)
        description = describe_npz(staged.path)
        dataset = Dataset(
            id=uuid.uuid4(),
            project_id=project_id,
            name=name or filename,
            filename=filename,
            kind="npz",
            artifact_sha256=staged.sha256,
            size_bytes=staged.size_bytes,
            n_samples=description.n_samples,
            arrays={k: v.to_dict() for k, v in description.arrays.items()},
            has_labels=description.has_labels,
        )
        persist(session, store, staged, lambda s: s.add(dataset))
    return DatasetOut.model_validate(dataset)


@router.get("/projects/{project_id}/datasets", operation_id="listDatasets")
def list_datasets(project_id: uuid.UUID, session: SessionDep) -> list[DatasetOut]:
    get_or_404(session, Project, project_id)
    rows = session.execute(
        select(Dataset).where(Dataset.project_id == project_id).order_by(Dataset.created_at)
    ).scalars()
    return [DatasetOut.model_validate(d) for d in rows]


@router.get("/datasets/{dataset_id}", operation_id="getDataset")
def get_dataset(dataset_id: uuid.UUID, session: SessionDep) -> DatasetOut:
    return DatasetOut.model_validate(get_or_404(session, Dataset, dataset_id))


@router.delete("/datasets/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="deleteDataset")
def delete_dataset(dataset_id: uuid.UUID, session: SessionDep, store: StoreDep) -> None:
    dataset = get_or_404(session, Dataset, dataset_id)
    sha = dataset.artifact_sha256
    session.delete(dataset)
    session.commit()
    release(session, store, sha)
