"""Why a fidelity job diverges: per-class damage and sequence fidelity (issue 13), each a stored document
of its own (RESULT_FIDELITY_CLASSES, RESULT_FIDELITY_SEQUENCE) served typed, and the samples of one cell
of the golden → compressed confusion matrix."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import select

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.diagnostic_schemas import FidelityClassesOut, FidelitySequenceOut
from backend.api.errors import error_responses
from backend.api.routes.lookup import job_result, succeeded_job
from backend.api.schemas import Offset, Page, SampleDivergenceOut
from backend.contracts import RESULT_FIDELITY_CLASSES, RESULT_FIDELITY_SEQUENCE, JobKind
from backend.db.models import SampleDivergence
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.sample_order import sample_page

MAX_CLASS = 2**31 - 1
"""Classes are stored as database integers: a larger query value is a 422, not a 500 (the fuzz test found
2**31)."""

router = APIRouter(tags=["fidelity"])

RESULT_ERRORS = error_responses(NotFound, Conflict, InvalidRequest)


@router.get("/jobs/{job_id}/fidelity/classes", operation_id="getFidelityClasses", responses=RESULT_ERRORS)
def get_fidelity_classes(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> FidelityClassesOut:
    """Per-class damage of each classification output: per class the accuracy of both models and the
    drop, mean KL and top-1 agreement (most damaged first), the golden → compressed confusion matrix, and
    the confident flips with their sample indexes."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    missing = f"job {job_id} has no per-class damage (no classification output, or run before it existed)"
    payload = job_result(session, job_id, RESULT_FIDELITY_CLASSES, missing)
    return FidelityClassesOut.model_validate({"job_id": job_id, **payload})


@router.get("/jobs/{job_id}/fidelity/sequence", operation_id="getFidelitySequence", responses=RESULT_ERRORS)
def get_fidelity_sequence(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> FidelitySequenceOut:
    """Per output shaped (N, T, D): per-token cosine and SQNR over the attention mask's tokens, and the
    pooled sentence embeddings' cosine and nearest-neighbour agreement."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    missing = f"job {job_id} has no sequence fidelity (no output shaped (N, T, D), or run before it existed)"
    payload = job_result(session, job_id, RESULT_FIDELITY_SEQUENCE, missing)
    return FidelitySequenceOut.model_validate({"job_id": job_id, **payload})


@router.get(
    "/jobs/{job_id}/fidelity/classes/samples",
    operation_id="listFidelityClassSamples",
    responses=RESULT_ERRORS,
)
def list_fidelity_class_samples(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    golden_class: Annotated[
        int, Query(ge=0, le=MAX_CLASS, description="Golden predicted class (the matrix row).")
    ],
    compressed_class: Annotated[
        int, Query(ge=0, le=MAX_CLASS, description="Compressed predicted class (the column).")
    ],
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Offset = 0,
) -> Page[SampleDivergenceOut]:
    """The samples of one cell of the confusion matrix (primary output), highest KL first."""
    job = succeeded_job(session, job_id, JobKind.fidelity, caller)
    output = session.execute(
        select(SampleDivergence.output_name).where(SampleDivergence.job_id == job_id).limit(1)
    ).scalar_one_or_none()
    conditions = [
        SampleDivergence.job_id == job_id,
        SampleDivergence.output_name == output,
        SampleDivergence.golden_class == golden_class,
        SampleDivergence.compressed_class == compressed_class,
    ]
    total, rows = sample_page(
        session,
        job.id,
        job.finished_at,
        output,
        conditions,
        [SampleDivergence.kl.desc().nulls_last(), SampleDivergence.sample_index],
        ("cell", golden_class, compressed_class),
        offset,
        limit,
    )
    return Page[SampleDivergenceOut](
        items=[SampleDivergenceOut.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )
