"""The fidelity job's attention-map fidelity (issue 13, transformer internals): per layer x head KL / JS
between the golden and compressed attention softmaxes of an ONNX or torch.export pair, stored by the worker as
RESULT_FIDELITY_ATTENTION and served typed."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.attention import FidelityAttentionOut
from backend.api.routes.lookup import job_result, succeeded_job
from backend.contracts import RESULT_FIDELITY_ATTENTION, JobKind
from backend.errors import Conflict, InvalidRequest, NotFound

router = APIRouter(tags=["fidelity"])


@router.get(
    "/jobs/{job_id}/fidelity/attention",
    operation_id="getFidelityAttention",
    responses=error_responses(NotFound, Conflict, InvalidRequest),
)
def get_fidelity_attention(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> FidelityAttentionOut:
    """Per attention layer (Softmax over the last axis giving [N, heads, Tq, Tk]) and head: the mean KL and
    Jensen–Shannon divergence between the golden and compressed attention distributions. 404 when the job
    has none: the golden model has no attention (no attention softmax, no fused attention op; a classifier's
    final softmax is not attention, in any format), or the job ran before the step existed. A document with
    only ``error`` when attention is there but cannot be compared: fused into single ops, a TorchScript
    model with attention ops (or paired with a golden model that has attention), graphs whose softmaxes do
    not pair, or a failure of the step."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    missing = f"job {job_id} has no attention maps (no ONNX or torch.export pair with attention softmaxes)"
    payload = job_result(session, job_id, RESULT_FIDELITY_ATTENTION, missing)
    return FidelityAttentionOut.model_validate({"job_id": job_id, **payload})
