from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ValidationError
from sqlalchemy import ColumnElement, String, cast, func, or_, select
from sqlalchemy.orm import Session

from backend import job_lifecycle
from backend.accounts import Caller, Role
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.job_view import job_out
from backend.api.routes import sample_csv
from backend.api.routes.annotate import apply_update
from backend.api.routes.lookup import get_in_project_or_404, get_or_404, require_owner_or_admin, team_of
from backend.api.routes.sweep_sources import check_sweep_sources
from backend.api.schemas import JobChunkOut, JobCreate, JobKindOut, JobOut, Offset, Page, ResourceUpdate, Tag
from backend.audit import AuditAction, record
from backend.calibration_launch import launch_split
from backend.calibration_split import any_quantizes_activations
from backend.contracts import (
    PARAMS_BY_KIND,
    USER_JOB_KINDS,
    FidelityJobParams,
    JobKind,
    SensitivityJobParams,
    SweepJobParams,
)
from backend.db.models import (
    Dataset,
    Job,
    JobChunk,
    JobStatus,
    Model,
    ModelStatus,
    Project,
    User,
)
from backend.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    KneeboardError,
    NotFound,
    QueueUnavailable,
    UploadTooLarge,
)
from backend.recovery_contracts import SWEEP_POINT_ID
from backend.services.artifacts import job_artifacts, release
from backend.services.jobs import dispatch, new_job
from backend.task_launch import similarity_model_problems, task_mapping_problems
from task_specs.text import TEXT_KINDS

router = APIRouter(tags=["jobs"])


@router.get("/job-kinds", operation_id="listJobKinds")
def list_job_kinds() -> list[JobKindOut]:
    return [
        JobKindOut(
            kind=kind.value,
            description=(PARAMS_BY_KIND[kind].__doc__ or "").strip(),
            params_schema=PARAMS_BY_KIND[kind].model_json_schema(),
        )
        for kind in USER_JOB_KINDS
    ]


def _validate_params(kind_name: str, raw: dict[str, object]) -> tuple[JobKind, BaseModel]:
    kinds = [k.value for k in USER_JOB_KINDS]
    if kind_name not in kinds:
        raise InvalidRequest(f"unknown job kind {kind_name!r}; available kinds: {', '.join(kinds)}")
    kind = JobKind(kind_name)
    try:
        return kind, PARAMS_BY_KIND[kind].model_validate(raw)
    except ValidationError as exc:
        details = "; ".join(f"params.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise InvalidRequest(details) from exc


def _references(params: BaseModel) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """(model ids, dataset ids) a job's parameters name."""
    if isinstance(params, FidelityJobParams):
        ood = params.robustness.ood_dataset_id if params.robustness is not None else None
        datasets = [params.dataset_id] + [d for d in (ood, params.calibration_dataset_id) if d is not None]
        twin = params.robustness.twin_model_id if params.robustness is not None else None
        models = [params.golden_model_id, params.compressed_model_id] + ([twin] if twin is not None else [])
        return models, datasets
    if isinstance(params, SensitivityJobParams | SweepJobParams):
        calibration = [params.calibration_dataset_id] if params.calibration_dataset_id is not None else []
        return [params.model_id], [params.dataset_id, *calibration]
    return [], []


def _check_references(session: SessionDep, project_id: uuid.UUID, params: BaseModel, caller: Caller) -> None:
    model_ids, dataset_ids = _references(params)
    for model_id in model_ids:
        model = get_in_project_or_404(session, Model, model_id, project_id, caller)
        if model.status == ModelStatus.invalid.value:
            raise Conflict(f"model {model.name!r} ({model_id}) is invalid: {model.error}")
    for dataset_id in dataset_ids:
        dataset = get_in_project_or_404(session, Dataset, dataset_id, project_id, caller)
        # tokenized at job time by the golden model's tokenizer: a fidelity job's dataset, or the evaluated
        # dataset of a sweep of task 'language_model' (its points are scored teacher-forced on the token ids)
        evaluated = isinstance(params, FidelityJobParams) and dataset_id == params.dataset_id
        swept = (
            isinstance(params, SweepJobParams)
            and dataset_id == params.dataset_id
            and params.task == "language_model"
        )
        if dataset.kind in TEXT_KINDS and not (evaluated or swept):
            raise InvalidRequest(
                f"dataset {dataset.name!r} is text ({dataset.kind}), tokenized at job time by a fidelity job or "
                "a sweep of task 'language_model' (as its dataset_id); this job reads arrays: upload token ids "
                "as an .npz"
            )
    if isinstance(params, FidelityJobParams):
        golden = get_in_project_or_404(session, Model, params.golden_model_id, project_id, caller)
        dataset = get_in_project_or_404(session, Dataset, params.dataset_id, project_id, caller)
        options = dict(params.task_options)
        problems = task_mapping_problems(params.task, options, golden, dataset)
        problems += similarity_model_problems(session, project_id, options)
        if problems:
            raise InvalidRequest("params.task_options: " + "; ".join(problems))
    twin_id = (
        params.robustness.twin_model_id
        if isinstance(params, FidelityJobParams) and params.robustness
        else None
    )
    if twin_id is not None:
        twin = get_in_project_or_404(session, Model, twin_id, project_id, caller)
        if twin.format not in ("torch_export", "torchscript"):
            raise InvalidRequest(
                f"params.robustness.twin_model_id: model {twin.name!r} is {twin.format}; a twin is a PyTorch "
                "copy of the golden model (.pt2 or TorchScript) that the attacks take gradients from"
            )
    if isinstance(params, SweepJobParams):
        check_sweep_sources(session, project_id, caller, params)
    # a sweep's or scan's task: the mapping a fidelity job's launch checks (a tokenizer for text...)
    if isinstance(params, SweepJobParams | SensitivityJobParams) and params.task != "auto":
        model = get_in_project_or_404(session, Model, params.model_id, project_id, caller)
        dataset = get_in_project_or_404(session, Dataset, params.dataset_id, project_id, caller)
        problems = task_mapping_problems(params.task, dict(params.task_options), model, dataset)
        if problems:
            raise InvalidRequest("params.task_options: " + "; ".join(problems))
    if isinstance(params, SweepJobParams | SensitivityJobParams):
        _check_calibration(session, project_id, params, caller)


def _check_calibration(
    session: SessionDep, project_id: uuid.UUID, params: SweepJobParams | SensitivityJobParams, caller: Caller
) -> None:
    """A sweep or scan that quantizes activations calibrates on samples it does not evaluate (issue 33):
    the split must exist and a named calibration set must fit the golden model (422 with words otherwise)."""
    configs = [c.model_dump(mode="json") for c in params.configs]
    if isinstance(params, SweepJobParams) and params.mixed_precision is not None:
        source = session.get(Job, params.mixed_precision.sensitivity_job_id)
        configs += list((source.params if source is not None else {}).get("configs") or [])
    if isinstance(params, SweepJobParams) and params.search is not None:
        configs += [
            c.model_dump(mode="json") for c in (params.search.low, params.search.high) if c is not None
        ]
    if not any_quantizes_activations(configs):
        if params.calibration_dataset_id is not None or params.calibration_samples is not None:
            raise InvalidRequest(
                f"params.calibration_dataset_id: no configuration of this {'sweep' if isinstance(params, SweepJobParams) else 'scan'} quantizes activations, so "
                "nothing would be calibrated; drop calibration_dataset_id and calibration_samples"
            )
        return
    golden = get_in_project_or_404(session, Model, params.model_id, project_id, caller)
    evaluation = get_in_project_or_404(session, Dataset, params.dataset_id, project_id, caller)
    calibration = (
        None
        if params.calibration_dataset_id is None
        else get_in_project_or_404(session, Dataset, params.calibration_dataset_id, project_id, caller)
    )
    launch_split(golden, evaluation, calibration, params.max_samples, params.calibration_samples)


@router.post(
    "/jobs",
    status_code=status.HTTP_201_CREATED,
    operation_id="createJob",
    responses=error_responses(
        KneeboardError, NotFound, Forbidden, Conflict, UploadTooLarge, QueueUnavailable
    ),
)
def create_job(body: JobCreate, session: SessionDep, settings: SettingsDep, caller: CallerDep) -> JobOut:
    return job_out(_launch(session, settings, caller, body))


def _launch(
    session: Session, settings: SettingsDep, caller: Caller, body: JobCreate, source: Job | None = None
) -> Job:
    """Validate, store, audit and enqueue a job; a relaunch (`source`) keeps the source's name and tags."""
    project = get_or_404(session, Project, body.project_id, caller, Role.member, "launching a job")
    kind, params = _validate_params(body.kind, body.params)
    _check_references(session, body.project_id, params, caller)
    job = new_job(body.project_id, kind, params.model_dump(mode="json"), caller.user_id)
    detail: dict[str, str] = {"kind": kind.value}
    if source is not None:
        job.name, job.tags = source.name, list(source.tags)
        detail["relaunched_from"] = str(source.id)
    session.add(job)
    record(session, caller, project.team_id, AuditAction.job_launched, "job", job.id, project.id, **detail)
    session.commit()
    dispatch(session, settings, job)
    return job


@router.post(
    "/jobs/{job_id}/relaunch",
    status_code=status.HTTP_201_CREATED,
    operation_id="relaunchJob",
    responses=error_responses(
        KneeboardError, NotFound, Forbidden, Conflict, UploadTooLarge, QueueUnavailable
    ),
)
def relaunch_job(job_id: uuid.UUID, session: SessionDep, settings: SettingsDep, caller: CallerDep) -> JobOut:
    """A new job with the same kind and parameters as this one (any status: a failed or cancelled job too),
    keeping its name and tags. The models and datasets it names must still exist. Needs the member role."""
    source = get_or_404(session, Job, job_id, caller, Role.member, "relaunching a job")
    if source.kind == JobKind.recovery.value:
        from backend.api.recovery_schemas import RecoveryJobCreate
        from backend.api.routes.recovery import create_recovery_job

        try:
            recovery = RecoveryJobCreate.model_validate(
                {"project_id": source.project_id, "params": source.params}
            )
        except ValidationError as exc:
            raise InvalidRequest(
                f"job {job_id}'s parameters are no longer valid: {exc.errors()[0]['msg']}"
            ) from exc
        created = create_recovery_job(recovery, session, settings, caller)
        job = session.get_one(Job, created.id)
        job.name, job.tags = source.name, list(source.tags)
        session.commit()
        return job_out(job)
    if source.kind not in {k.value for k in USER_JOB_KINDS}:
        raise InvalidRequest(
            f"job {job_id} is a {source.kind} job, which uploads start; upload the file again"
        )
    body = JobCreate(project_id=source.project_id, kind=source.kind, params=source.params)
    return job_out(_launch(session, settings, caller, body, source))


@router.get("/jobs", operation_id="listJobs")
def list_jobs(
    session: SessionDep,
    caller: CallerDep,
    project_id: uuid.UUID | None = None,
    kind: JobKind | None = None,
    status_: Annotated[JobStatus | None, Query(alias="status")] = None,
    tag: Annotated[Tag | None, Query(description="Only jobs with this tag.")] = None,
    q: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="Only jobs whose name or notes contain this text (any case).",
        ),
    ] = None,
    sweep_point_id: Annotated[
        str | None,
        Query(
            pattern=SWEEP_POINT_ID,
            description="Only jobs launched from this sweep point ('<sweep job id>:<index>'): its recoveries.",
        ),
    ] = None,
    sensitivity_job_id: Annotated[
        uuid.UUID | None,
        Query(
            description="Only jobs launched from a mixed-precision plan of this sensitivity job: its recoveries."
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> Page[JobOut]:
    """Jobs of your teams' projects, newest first; filtered by project, kind, status, tag, text and the sweep
    point or sensitivity plan they were launched from."""
    conditions: list[ColumnElement[bool]] = [
        Job.project_id.in_(select(Project.id).where(Project.team_id.in_(list(caller.roles))))
    ]
    if project_id is not None:
        conditions.append(Job.project_id == project_id)
    if kind is not None:
        conditions.append(Job.kind == kind.value)
    if status_ is not None:
        conditions.append(Job.status == status_.value)
    if tag is not None:
        # Tags are plain characters (no quote or backslash), so the JSON text holds "tag" exactly.
        conditions.append(cast(Job.tags, String).contains(f'"{tag}"', autoescape=True))
    if q is not None:
        needle = q.lower()
        conditions.append(
            or_(
                func.lower(Job.name).contains(needle, autoescape=True),
                func.lower(Job.notes).contains(needle, autoescape=True),
            )
        )
    if sweep_point_id is not None:
        conditions.append(Job.params["sweep_point_id"].as_string() == sweep_point_id)
    if sensitivity_job_id is not None:
        # A JSON path, not two subscripts: the same SQL on Postgres (#>>) and SQLite (json_extract).
        plan_job = Job.params[("sensitivity_plan", "job_id")].as_string()
        conditions.append(plan_job == str(sensitivity_job_id))
    total = session.execute(select(func.count()).select_from(Job).where(*conditions)).scalar_one()
    rows = session.execute(
        select(Job, User.username)
        .outerjoin(User, User.id == Job.created_by)
        .where(*conditions)
        .order_by(Job.created_at.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    usernames = {job.created_by: name for job, name in rows if job.created_by is not None and name}
    items = [job_out(job, usernames) for job, _ in rows]
    return Page[JobOut](items=items, total=total, limit=limit, offset=offset)


@router.get("/jobs/{job_id}", operation_id="getJob", responses=error_responses(NotFound))
def get_job(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> JobOut:
    return job_out(get_or_404(session, Job, job_id, caller))


@router.patch(
    "/jobs/{job_id}", operation_id="updateJob", responses=error_responses(NotFound, Forbidden, InvalidRequest)
)
def update_job(job_id: uuid.UUID, body: ResourceUpdate, session: SessionDep, caller: CallerDep) -> JobOut:
    """Name a job, replace its notes or tags. Members may change the jobs they launched; team admins any job
    of the team."""
    job = get_or_404(session, Job, job_id, caller)
    apply_update(session, caller, job, body)
    return job_out(job)


@router.get("/jobs/{job_id}/chunks", operation_id="listJobChunks", responses=error_responses(NotFound))
def list_job_chunks(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> list[JobChunkOut]:
    """The chunks of a job that fanned out over the worker pool, in order (empty for a one-piece job)."""
    get_or_404(session, Job, job_id, caller)
    rows = session.scalars(select(JobChunk).where(JobChunk.job_id == job_id).order_by(JobChunk.index))
    return [JobChunkOut.model_validate(row) for row in rows]


@router.post(
    "/jobs/{job_id}/cancel",
    operation_id="cancelJob",
    responses=error_responses(NotFound, Forbidden, Conflict),
)
def cancel_job(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> JobOut:
    """Members may cancel the jobs they launched; team admins any job of the team."""
    job = get_or_404(session, Job, job_id, caller)
    require_owner_or_admin(session, caller, job, "cancelling a job")
    team_id = team_of(session, job)
    if not job_lifecycle.cancel(session, job_id):
        session.refresh(job)
        raise Conflict(f"job {job_id} is already {job.status}; only queued or running jobs can be cancelled")
    record(session, caller, team_id, AuditAction.job_cancelled, "job", job_id, job.project_id, kind=job.kind)
    session.commit()
    session.refresh(job)
    return job_out(job)


@router.delete(
    "/jobs/{job_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="deleteJob",
    responses=error_responses(NotFound, Forbidden),
)
def delete_job(job_id: uuid.UUID, session: SessionDep, store: StoreDep, caller: CallerDep) -> None:
    """Delete a job and its results; a queued or running job is cancelled first so its worker stops.
    Members may delete the jobs they launched; team admins any job of the team."""
    job = get_or_404(session, Job, job_id, caller)
    require_owner_or_admin(session, caller, job, "deleting a job")
    job_lifecycle.cancel(session, job_id)
    job = get_or_404(session, Job, job_id, caller)
    record(
        session, caller, team_of(session, job), AuditAction.job_deleted, "job", job_id, job.project_id,
        kind=job.kind,
    )  # fmt: skip
    made = job_artifacts(session, job_id)
    session.delete(job)
    session.commit()
    for sha in made:  # the sweep's exported models, the robustness pictures, unless something else uses them
        release(session, store, sha)


# The per-sample CSV (its own module) is served with the job routes, so the app's router list stays as it is.
router.include_router(sample_csv.router)
