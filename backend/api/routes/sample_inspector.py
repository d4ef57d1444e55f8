"""The sample inspector: one sample of a fidelity job, its input (a PNG or an array summary) with both models'
top-k class probabilities side by side.

The probabilities come from the job's stored top-k document (worker/engine/fidelity/sample_topk.py), the input from the
stored dataset, read as the dataset preview reads it (backend/dataset_preview.py: that sample only, numpy
and Pillow, never a model runtime).
"""

from __future__ import annotations

import uuid
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from backend.accounts import Caller
from backend.api.auth import CallerDep
from backend.api.bounded_pool import BoundedPool
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.result_schemas.sample_inspector import (
    InputArrayOut,
    OutputTopKOut,
    SampleInspectionOut,
    TopKOut,
)
from backend.api.routes.dataset_preview import PNG_RESPONSE, THUMBNAIL_CACHE
from backend.api.routes.lookup import succeeded_job
from backend.api.schemas import SampleDivergenceOut
from backend.contracts import RESULT_FIDELITY_SUMMARY, JobKind
from backend.dataset_preview import sample_thumbnail
from backend.db.models import Dataset, Job, JobResult, SampleDivergence
from backend.errors import Busy, Conflict, InvalidRequest, KneeboardError, NotFound, StorageError
from backend.services.sample_inspector import (
    InputSummary,
    TopKIndex,
    input_summary,
    job_dataset_file,
    sample_topk,
    topk_index,
)
from backend.storage import ArtifactStore

router = APIRouter(tags=["fidelity"])

INPUT_PNG_MAX_SIDE = 256
"""Longest side of the inspector's picture: an 8x8 digit is enlarged 32x (nearest-neighbour), a photo shrunk."""

Index = Annotated[int, Path(ge=0, le=2**31 - 1)]


def _without_topk(session: Session, job: Job) -> TopKIndex:
    """A job with no top-k document: one without a classification output has no probabilities to store, so its
    inspection is the sample's input and divergence row alone (k 0, no outputs); one that has a classification
    output ran before Kneeboard stored them (404 with what to do)."""
    summary = session.execute(
        select(JobResult.payload).where(JobResult.job_id == job.id, JobResult.key == RESULT_FIDELITY_SUMMARY)
    ).scalar_one_or_none()
    outputs = (summary or {}).get("outputs") or {}
    n_samples = (summary or {}).get("n_samples")
    if isinstance(n_samples, int) and not any(m.get("kind") == "classification" for m in outputs.values()):
        return TopKIndex(k=0, n_samples=n_samples, output_names=[])
    raise NotFound(
        f"job {job.id} ran before Kneeboard stored each sample's top-k probabilities; launch it again "
        "(relaunch) to inspect its samples"
    )


def inspection(
    session: Session, store: ArtifactStore, job_id: uuid.UUID, index: int, caller: Caller
) -> tuple[SampleInspectionOut, Dataset | None, FilePath | None]:
    """Everything from the database (the transaction ends here, so no connection is held while the
    dataset is read in the render pool)."""
    job = succeeded_job(session, job_id, JobKind.fidelity, caller)
    stored = topk_index(session, job_id) or _without_topk(session, job)
    if not 0 <= index < stored.n_samples:
        raise NotFound(
            f"no sample {index}: job {job_id} compared {stored.n_samples} samples (0 to {stored.n_samples - 1})"
        )
    row = session.execute(
        select(SampleDivergence)
        .where(SampleDivergence.job_id == job_id, SampleDivergence.sample_index == index)
        .order_by(SampleDivergence.output_name)
        .limit(1)
    ).scalar_one_or_none()
    outputs = []
    for name in stored.output_names:
        entry = sample_topk(session, job_id, name, index)
        outputs.append(
            OutputTopKOut(
                output=name,
                compressed_output=entry["compressed_output"],
                num_classes=entry["num_classes"],
                outputs_are_probabilities=entry["outputs_are_probabilities"],
                golden=None if entry["golden"] is None else TopKOut.model_validate(entry["golden"]),
                compressed=None
                if entry["compressed"] is None
                else TopKOut.model_validate(entry["compressed"]),
            )
        )
    dataset, path, error = job_dataset_file(session, store, job)
    session.rollback()
    metrics = None if row is None else SampleDivergenceOut.model_validate(row)
    out = SampleInspectionOut(
        job_id=job_id,
        index=index,
        n_samples=stored.n_samples,
        k=stored.k,
        label=None if metrics is None else metrics.label,
        metrics=metrics,
        outputs=outputs,
        input=[],
        input_name=None,
        input_error=error,
    )
    return out, dataset, path


def _render_pool(request: Request) -> BoundedPool:
    pool: BoundedPool = request.app.state.render_pool
    return pool


def png_url(job_id: uuid.UUID, index: int, array: str | None) -> str:
    url = f"/api/v1/jobs/{job_id}/samples/{index}/input.png"
    return url if array is None else f"{url}?array={array}"


@router.get(
    "/jobs/{job_id}/samples/{index}",
    operation_id="getSampleInspection",
    responses=error_responses(NotFound, Conflict, InvalidRequest, Busy),
    summary="One sample: its per-sample metrics, both models' top-k classes and probabilities per "
    "classification output, and its input (a thumbnail URL when image-like, else shape and statistics)",
)
async def get_sample_inspection(
    job_id: uuid.UUID,
    index: Index,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
) -> SampleInspectionOut:
    """404 for an index past the job's samples, and for a classification job without stored top-k
    probabilities (one run before the inspector existed: launch it again). A job without a classification
    output has no probabilities: its inspection is the sample's input and divergence row (`outputs` empty). The input is read from the stored dataset in the API's
    bounded render pool; when it cannot be read (the dataset was deleted) input_error says why."""
    out, dataset, path = await run_in_threadpool(inspection, session, store, job_id, index, caller)
    if dataset is None or path is None:
        return out
    try:
        summary: InputSummary = await _render_pool(request).run(
            input_summary, path, dataset.kind, index, settings.image_max_pixels
        )
    except Busy:
        raise
    except KneeboardError as exc:  # an unreadable file or image: the probabilities still stand
        return out.model_copy(update={"input_error": exc.message})
    return with_input(out, summary, dataset.kind)


def with_input(out: SampleInspectionOut, summary: InputSummary, kind: str) -> SampleInspectionOut:
    """The inspection with its input arrays (thumbnail URLs for image-like ones) and the dataset's label."""
    job_id, index = out.job_id, out.index
    single = kind != "npz"
    arrays = [
        InputArrayOut(
            name=a.name,
            shape=a.shape,
            dtype=a.dtype,
            min=a.min,
            max=a.max,
            mean=a.mean,
            std=a.std,
            nonfinite=a.nonfinite,
            thumbnail=png_url(job_id, index, None if single else a.name) if a.image else None,
        )
        for a in summary.arrays
    ]
    label = out.label if out.label is not None else summary.label
    return out.model_copy(update={"input": arrays, "input_name": summary.name, "label": label})


def _png_source(
    session: Session, store: ArtifactStore, job_id: uuid.UUID, caller: Caller
) -> tuple[str, FilePath]:
    job = succeeded_job(session, job_id, JobKind.fidelity, caller)
    dataset, path, error = job_dataset_file(session, store, job)
    session.rollback()
    if dataset is None or path is None:
        raise NotFound(error or "the job's dataset is gone")
    return dataset.kind, path


@router.get(
    "/jobs/{job_id}/samples/{index}/input.png",
    operation_id="getSampleInputPng",
    response_class=Response,
    responses=PNG_RESPONSE | error_responses(NotFound, Conflict, InvalidRequest, StorageError, Busy),
    summary=f"The sample's input as a PNG, longest side at most {INPUT_PNG_MAX_SIDE} px (values min-max "
    "scaled; tiny images enlarged with nearest-neighbour)",
)
async def get_sample_input_png(
    job_id: uuid.UUID,
    index: Index,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
    array: Annotated[
        str | None,
        Query(max_length=200, description="The .npz array to draw; default: the first image-like one."),
    ] = None,
) -> Response:
    """404 for an index past the dataset's end or a deleted dataset; 409 when the sample is not an image."""
    kind, path = await run_in_threadpool(_png_source, session, store, job_id, caller)
    png = await _render_pool(request).run(
        sample_thumbnail, path, kind, index, array, INPUT_PNG_MAX_SIDE, settings.image_max_pixels
    )
    return Response(content=png, media_type="image/png", headers={"Cache-Control": THUMBNAIL_CACHE})
