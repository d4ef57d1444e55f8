"""Recovery jobs: launch one (checked like POST /jobs, plus the sweep point's origin) and read its
before/after summary."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, status
from fastapi.responses import FileResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Role
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.job_view import job_out
from backend.api.recovery_schemas import RecoveryJobCreate, RecoveryLayersOut, RecoverySummaryOut
from backend.api.routes.lookup import get_in_project_or_404, get_or_404, job_result, succeeded_job
from backend.api.schemas import JobOut
from backend.audit import AuditAction, record
from backend.contracts import (
    RESULT_RECOVERY_LAYERS,
    RESULT_RECOVERY_SUMMARY,
    RESULT_SENSITIVITY_PLANS,
    JobKind,
)
from backend.db.models import Dataset, Job, JobResult, Model, ModelStatus, Project, SweepPoint
from backend.errors import Conflict, Forbidden, InvalidRequest, KneeboardError, NotFound, QueueUnavailable
from backend.recovery_contracts import RecoveryJobParams, parse_point_id
from backend.services.jobs import dispatch, new_job
from backend.task_launch import task_mapping_problems

router = APIRouter(tags=["recovery"])

RECOVERABLE_FORMATS = ("torch_export", "onnx", "onnx_zip")
ONNX_METHODS = ("equalization", "smoothquant", "adaround", "bias_correction")
"""What recovery runs on an ONNX golden model (worker/engine/recovery/onnx_model.py); the other methods
rewrite or train a torch module."""


@router.post(
    "/recovery-jobs",
    status_code=status.HTTP_201_CREATED,
    operation_id="createRecoveryJob",
    responses=error_responses(KneeboardError, NotFound, Forbidden, Conflict, QueueUnavailable),
)
def create_recovery_job(
    body: RecoveryJobCreate, session: SessionDep, settings: SettingsDep, caller: CallerDep
) -> JobOut:
    """Recover the fidelity a compression configuration loses (a job of kind "recovery"; follow it with
    GET /jobs/{id}, read the result with GET /jobs/{id}/recovery)."""
    project = get_or_404(session, Project, body.project_id, caller, Role.member, "launching a job")
    params = body.params
    golden = get_in_project_or_404(session, Model, params.golden_model_id, body.project_id, caller)
    if golden.status == ModelStatus.invalid.value:
        raise Conflict(f"model {golden.name!r} ({golden.id}) is invalid: {golden.error}")
    if golden.format not in RECOVERABLE_FORMATS:
        raise InvalidRequest(
            f"params.golden_model_id: recovery runs on torch.export (.pt2) and ONNX models; {golden.name!r} "
            f"is {golden.format} (TorchScript runs its layers inside its interpreter, where recovery cannot "
            "reach them: export it with torch.export or to ONNX)"
        )
    torch_only = [m.name for m in params.methods if m.name not in ONNX_METHODS]
    if golden.format != "torch_export" and torch_only:
        raise InvalidRequest(
            f"params.methods: {', '.join(torch_only)} need(s) a torch.export (.pt2) golden model; on "
            f"{golden.format} model {golden.name!r} recovery runs {', '.join(ONNX_METHODS)}"
        )
    dataset = get_in_project_or_404(session, Dataset, params.dataset_id, body.project_id, caller)
    problems = task_mapping_problems(params.task, dict(params.task_options), golden, dataset)
    if problems:
        raise InvalidRequest("params.task_options: " + "; ".join(problems))
    if params.sweep_point_id is not None:
        sweep_id, index = parse_point_id(params.sweep_point_id)
        sweep = session.get(Job, sweep_id)
        point = session.scalar(
            select(SweepPoint).where(SweepPoint.job_id == sweep_id, SweepPoint.index == index)
        )
        if point is None or sweep is None or sweep.project_id != body.project_id:
            raise NotFound(f"no sweep point with id {params.sweep_point_id} in project {body.project_id}")
        if sweep.params.get("model_id") != str(params.golden_model_id):
            raise InvalidRequest(
                f"params.sweep_point_id: point {params.sweep_point_id} belongs to a sweep of model "
                f"{sweep.params.get('model_id')}, not of {params.golden_model_id}"
            )
        if not (point.point.get("config") or point.point.get("plan")):
            raise InvalidRequest(
                f"params.sweep_point_id: point {params.sweep_point_id} is the uncompressed model"
            )
    if params.sensitivity_plan is not None:
        _check_plan(session, params, body.project_id)
    job = new_job(body.project_id, JobKind.recovery, params.model_dump(mode="json"), caller.user_id)
    session.add(job)
    record(
        session, caller, project.team_id, AuditAction.job_launched, "job", job.id, project.id,
        kind=JobKind.recovery.value,
    )  # fmt: skip
    session.commit()
    dispatch(session, settings, job)
    return job_out(job)


def _check_plan(session: Session, params: RecoveryJobParams, project_id: uuid.UUID) -> None:
    """The sensitivity plan exists, belongs to a scan of the golden model in this project, and assigns layers."""
    ref = params.sensitivity_plan
    assert ref is not None
    scan = session.get(Job, ref.job_id)
    if scan is None or scan.project_id != project_id or scan.kind != JobKind.sensitivity.value:
        raise NotFound(f"no sensitivity job {ref.job_id} in project {project_id}")
    if scan.params.get("model_id") != str(params.golden_model_id):
        raise InvalidRequest(
            f"params.sensitivity_plan: job {ref.job_id} scanned model {scan.params.get('model_id')}, not "
            f"{params.golden_model_id}"
        )
    doc = session.scalar(
        select(JobResult.payload).where(
            JobResult.job_id == ref.job_id, JobResult.key == RESULT_SENSITIVITY_PLANS
        )
    )
    plans = (doc or {}).get("plans", [])
    plan = next((p for p in plans if p.get("average_bits") == ref.average_bits), None)
    if plan is None or not plan.get("assignments"):
        bits = sorted(p.get("average_bits") for p in plans if p.get("assignments"))
        raise InvalidRequest(
            f"params.sensitivity_plan: job {ref.job_id} has no plan of {ref.average_bits} average bits "
            f"(its plans: {bits})"
        )


@router.get(
    "/jobs/{job_id}/recovery",
    operation_id="getRecoverySummary",
    responses=error_responses(NotFound, Conflict),
)
def get_recovery_summary(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> RecoverySummaryOut:
    """Before/after on the held-out split (per method step), the recovered model's id and lineage, and its
    export measured in onnxruntime."""
    job = succeeded_job(session, job_id, JobKind.recovery, caller)
    doc = job_result(session, job.id, RESULT_RECOVERY_SUMMARY, f"job {job_id} stored no recovery summary")
    return RecoverySummaryOut.model_validate(doc | {"job_id": job.id})


@router.get(
    "/jobs/{job_id}/recovery/layers",
    operation_id="getRecoveryLayers",
    responses=error_responses(NotFound, Conflict),
)
def get_recovery_layers(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> RecoveryLayersOut:
    """The per-layer before/after: the golden model profiled layer by layer against the compressed model
    before recovery and against the recovered one, on the held-out split (404 for jobs run before it
    existed)."""
    job = succeeded_job(session, job_id, JobKind.recovery, caller)
    doc = job_result(
        session,
        job.id,
        RESULT_RECOVERY_LAYERS,
        f"job {job_id} stored no per-layer before/after (run before it existed)",
    )
    return RecoveryLayersOut.model_validate(
        {"job_id": job.id} | {side: {"job_id": job.id, **doc.get(side, {})} for side in ("before", "after")}
    )


@router.get(
    "/jobs/{job_id}/recovery/model",
    operation_id="downloadRecoveredModel",
    responses=error_responses(NotFound, Conflict)
    | {200: {"content": {"application/octet-stream": {}}, "description": "The recovered model (ONNX)."}},
    response_class=FileResponse,
)
def download_recovered_model(
    job_id: uuid.UUID, session: SessionDep, store: StoreDep, caller: CallerDep
) -> FileResponse:
    """The recovered model's runnable ONNX file (the export the summary's "export" describes)."""
    job = succeeded_job(session, job_id, JobKind.recovery, caller)
    doc = job_result(session, job.id, RESULT_RECOVERY_SUMMARY, f"job {job_id} stored no recovery summary")
    model = session.get(Model, uuid.UUID(str(doc["model_id"])))
    if model is None:
        raise NotFound(f"the model recovered by job {job_id} was deleted")
    return FileResponse(
        store.local_path(model.artifact_sha256),
        media_type="application/octet-stream",
        filename=model.filename,
    )
