"""A preview of a dataset's samples: per-array statistics and labels, and PNG thumbnails of image samples.

Reads only the samples asked for from the stored file (backend/dataset_preview.py); never a model runtime.
"""

from __future__ import annotations

import uuid
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from backend.accounts import Caller
from backend.api.auth import CallerDep
from backend.api.bounded_pool import BoundedPool
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import get_or_404
from backend.array_png import THUMBNAIL_MAX_SIDE
from backend.dataset_preview import (
    ArrayStats,
    SamplePreview,
    preview_samples,
    sample_thumbnail,
)
from backend.db.models import Dataset
from backend.errors import Busy, Conflict, InvalidRequest, NotFound, StorageError
from backend.storage import ArtifactStore

router = APIRouter(tags=["datasets"])

THUMBNAIL_CACHE = "private, max-age=3600"  # a stored dataset never changes
PNG_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
        "description": f"A PNG, longest side at most {THUMBNAIL_MAX_SIDE} px (tiny images enlarged with "
        "nearest-neighbour, array values min-max scaled per sample).",
    }
}


class SampleArrayOut(BaseModel):
    shape: list[int] = Field(description="Shape of this one sample (the sample axis left out).")
    dtype: str
    min: float | None = Field(description="Smallest finite value (null: no finite or no numeric values).")
    max: float | None
    mean: float | None = Field(description="Mean of the finite values.")
    nonfinite: int = Field(description="How many values are NaN or infinite.")
    image: bool = Field(description="Whether this array of the sample can be drawn as a picture.")


class DatasetSampleOut(BaseModel):
    index: int
    label: int | None = Field(description="The sample's label (integer 'labels' array or labels.csv).")
    name: str | None = Field(description="The image's file in the zip (image datasets only).")
    image: bool = Field(description="Whether getDatasetSampleThumbnail can draw this sample.")
    image_array: str | None = Field(description="The array a thumbnail of an .npz sample shows by default.")
    error: str | None = Field(
        default=None, description="Why this sample could not be read, e.g. an image too large to decode."
    )
    arrays: dict[str, SampleArrayOut] = Field(
        description="Per array (an .npz's arrays except labels; 'image' for a zip of images): shape, dtype "
        "and statistics of this sample."
    )
    text: dict[str, str] | None = Field(
        default=None,
        description="A text dataset's sample as written: 'prompt' and 'reference' of a JSONL line, or 'text', "
        "the start of a corpus (each cut at 2000 characters); null for array datasets.",
    )


class DatasetSamplesOut(BaseModel):
    dataset_id: uuid.UUID
    kind: str
    total: int = Field(description="Number of samples in the dataset.")
    offset: int
    limit: int
    items: list[DatasetSampleOut]


def _array_out(stats: ArrayStats) -> SampleArrayOut:
    return SampleArrayOut(
        shape=list(stats.shape),
        dtype=stats.dtype,
        min=stats.min,
        max=stats.max,
        mean=stats.mean,
        nonfinite=stats.nonfinite,
        image=stats.image,
    )


def _sample_out(sample: SamplePreview) -> DatasetSampleOut:
    return DatasetSampleOut(
        index=sample.index,
        label=sample.label,
        name=sample.name,
        image=sample.image,
        image_array=sample.image_array,
        error=sample.error,
        arrays={name: _array_out(stats) for name, stats in sample.arrays.items()},
        text=sample.text,
    )


def _stored_dataset(
    session: Session, store: ArtifactStore, dataset_id: uuid.UUID, caller: Caller
) -> tuple[Dataset, FilePath]:
    """The dataset (access-checked) and a local file of it; the transaction ends here, so no database
    connection is held while the preview waits for the render pool."""
    dataset = get_or_404(session, Dataset, dataset_id, caller)
    path = store.local_path(dataset.artifact_sha256)
    session.expunge(dataset)
    session.rollback()
    return dataset, path


def _render_pool(request: Request) -> BoundedPool:
    pool: BoundedPool = request.app.state.render_pool
    return pool


@router.get(
    "/datasets/{dataset_id}/samples",
    operation_id="listDatasetSamples",
    responses=error_responses(NotFound, Conflict, InvalidRequest, StorageError, Busy),
    summary="A preview of samples offset..offset+limit-1: per array shape, dtype, min/max/mean, label, and "
    "whether a thumbnail can be drawn",
)
async def list_dataset_samples(
    dataset_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=64)] = 8,
) -> DatasetSamplesOut:
    """Reads only these samples from the stored file (a multi-GB .npz is never loaded whole). An offset past
    the end gives no items. Decoding runs in the API's bounded render pool (503 when it is full)."""
    dataset, path = await run_in_threadpool(_stored_dataset, session, store, dataset_id, caller)
    page = await _render_pool(request).run(
        preview_samples, path, dataset.kind, offset, limit, settings.image_max_pixels
    )
    return DatasetSamplesOut(
        dataset_id=dataset.id,
        kind=dataset.kind,
        total=page.total,
        offset=offset,
        limit=limit,
        items=[_sample_out(s) for s in page.items],
    )


@router.get(
    "/datasets/{dataset_id}/samples/{index}/thumbnail.png",
    operation_id="getDatasetSampleThumbnail",
    response_class=Response,
    responses=PNG_RESPONSE | error_responses(NotFound, Conflict, InvalidRequest, StorageError, Busy),
    summary="A small PNG of one sample: the image of a zip of images, or an image-like .npz array "
    "((H, W), (1|3, H, W) or (H, W, 1|3))",
)
async def get_dataset_sample_thumbnail(
    dataset_id: uuid.UUID,
    index: Annotated[int, Path(ge=0, le=2**31 - 1)],
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
    array: Annotated[
        str | None,
        Query(
            max_length=200, description="The .npz array to draw; default: the sample's first image-like one."
        ),
    ] = None,
) -> Response:
    """404 for an index past the end; 409 when the sample is not an image (e.g. a feature vector)."""
    dataset, path = await run_in_threadpool(_stored_dataset, session, store, dataset_id, caller)
    png = await _render_pool(request).run(
        sample_thumbnail, path, dataset.kind, index, array, THUMBNAIL_MAX_SIDE, settings.image_max_pixels
    )
    return Response(content=png, media_type="image/png", headers={"Cache-Control": THUMBNAIL_CACHE})
