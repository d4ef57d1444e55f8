"""The fidelity job's robustness slices (issue 13, seed 003): both models on seeded, corrupted copies of
the dataset, stored by the worker as RESULT_FIDELITY_ROBUSTNESS and served typed; and the pictures of the
worst samples' corrupted inputs, which the worker stores as one archive (backend/robustness_images.py)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from sqlalchemy.orm import Session

from backend.accounts import Caller
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, StoreDep
from backend.api.errors import error_responses
from backend.api.result_schemas.robustness import RobustnessOut
from backend.api.routes.dataset_preview import THUMBNAIL_CACHE
from backend.api.routes.lookup import job_result, succeeded_job
from backend.contracts import RESULT_FIDELITY_ROBUSTNESS, JobKind
from backend.errors import Conflict, InvalidRequest, NotFound, StorageError
from backend.robustness_contracts import RobustnessSlice
from backend.robustness_images import PNG_MAX_SIDE, read_member
from backend.storage import ArtifactStore

router = APIRouter(tags=["fidelity"])

PICTURE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
        "description": f"A PNG, longest side at most {PNG_MAX_SIDE} px (tiny images enlarged with "
        "nearest-neighbour), drawn on the clean sample's value range (its min to max), values outside clipped.",
    }
}


@router.get(
    "/jobs/{job_id}/robustness",
    operation_id="getFidelityRobustness",
    responses=error_responses(NotFound, Conflict, InvalidRequest),
)
def get_fidelity_robustness(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> RobustnessOut:
    """Per corruption slice (noise, brightness, contrast, blur, occlusion, JPEG, token replacement, FGSM
    and PGD adversarial inputs crafted against the golden model) and severity: both models'
    accuracy, mean KL, top-1 agreement, the brittleness ratio (slice divergence / clean divergence) and
    the worst samples. 404 when the job was run without `robustness`."""
    return RobustnessOut.model_validate({"job_id": job_id, **_document(session, job_id, caller)})


def _document(session: Session, job_id: uuid.UUID, caller: Caller) -> dict[str, Any]:
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    missing = f"job {job_id} has no robustness slices (run without the robustness option)"
    return job_result(session, job_id, RESULT_FIDELITY_ROBUSTNESS, missing)


def _pictured(document: dict[str, Any], job_id: uuid.UUID, slice_name: str, severity: int, index: int) -> str:
    """The sha256 of the job's picture archive, when it holds a picture of this worst sample."""
    point = next(
        (
            p
            for s in document.get("slices") or []
            if s.get("name") == slice_name
            for p in s.get("points") or []
            if p.get("severity") == severity
        ),
        None,
    )
    if point is None:
        raise NotFound(f"job {job_id} has no robustness slice {slice_name!r} at severity {severity}")
    worst = next((w for w in point.get("worst_samples") or [] if w.get("sample_index") == index), None)
    if worst is None:
        raise NotFound(
            f"sample {index} is not among the worst samples of {slice_name} at severity {severity}: only "
            "their corrupted inputs are kept"
        )
    images = document.get("images") or {}
    if not worst.get("image") or not images.get("sha256"):
        raise NotFound(
            f"job {job_id} has no picture of sample {index} at {slice_name} severity {severity}: its input is "
            "not an image, or the job ran before Kneeboard kept the corrupted inputs (relaunch it)"
        )
    return str(images["sha256"])


@router.get(
    "/jobs/{job_id}/robustness/{slice}/{severity}/samples/{index}.png",
    operation_id="getRobustnessSamplePng",
    response_class=Response,
    responses=PICTURE_RESPONSE | error_responses(NotFound, Conflict, InvalidRequest, StorageError),
    summary="The corrupted input of one of a robustness point's worst samples, as the models received it",
)
def get_robustness_sample_png(
    job_id: uuid.UUID,
    slice: RobustnessSlice,
    severity: Annotated[int, Path(ge=1, le=3)],
    index: Annotated[int, Path(ge=0, le=2**31 - 1)],
    session: SessionDep,
    store: StoreDep,
    caller: CallerDep,
    array: Annotated[
        str | None,
        Query(max_length=200, description="The input array to draw; default: the first (by name) pictured."),
    ] = None,
) -> Response:
    """Only the worst samples listed in GET /jobs/{job_id}/robustness with ``image`` true have one (404
    otherwise, with the reason: not a worst sample there, not an image input, a job stored before the
    pictures existed). The clean input beside it: GET /jobs/{job_id}/samples/{index}/input.png."""
    sha256 = _pictured(_document(session, job_id, caller), job_id, slice, severity, index)
    session.rollback()  # no connection held while the archive is read
    png = _read(store, sha256, slice, severity, index, array)
    return Response(content=png, media_type="image/png", headers={"Cache-Control": THUMBNAIL_CACHE})


def _read(
    store: ArtifactStore, sha256: str, slice_name: str, severity: int, index: int, array: str | None
) -> bytes:
    return read_member(store.local_path(sha256), slice_name, severity, index, array)
