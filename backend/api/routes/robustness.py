"""The fidelity job's robustness slices (issue 13, seed 003): both models on seeded, corrupted copies of
the dataset, stored by the worker as RESULT_FIDELITY_ROBUSTNESS and served typed."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.robustness import RobustnessOut
from backend.api.routes.lookup import job_result, succeeded_job
from backend.contracts import RESULT_FIDELITY_ROBUSTNESS, JobKind
from backend.errors import Conflict, InvalidRequest, NotFound

router = APIRouter(tags=["fidelity"])


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
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    missing = f"job {job_id} has no robustness slices (run without the robustness option)"
    payload = job_result(session, job_id, RESULT_FIDELITY_ROBUSTNESS, missing)
    return RobustnessOut.model_validate({"job_id": job_id, **payload})
