from __future__ import annotations

import math
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from backend.accounts import Caller
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.api.routes.lookup import get_or_404, job_result, succeeded_job
from backend.api.schemas import (
    FidelityHeadline,
    FidelityReportOut,
    FidelityRunOut,
    LayerProfileOut,
    NamedRef,
    Offset,
    Page,
    SampleDivergenceOut,
)
from backend.api.schemas.fidelity import TaskHeadline, TaskHeadlineMetric
from backend.contracts import (
    RESULT_FIDELITY_ATTENTION,
    RESULT_FIDELITY_CLASSES,
    RESULT_FIDELITY_LAYERS,
    RESULT_FIDELITY_ROBUSTNESS,
    RESULT_FIDELITY_SEQUENCE,
    RESULT_FIDELITY_TASK_PROXY,
    RESULT_FIDELITY_TASK_SAMPLES,
    JobKind,
)
from backend.db.models import Job, Project
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.services.fidelity import fidelity_runs, sample_divergences, summary_and_stored
from task_specs.directions import higher_is_better
from task_specs.metrics import TASK_METRICS

TASK_METRIC_NAME = r"^[A-Za-z0-9_]{1,64}$"
"""A per-sample task value's name (the adapters' keys: `wer_golden`, `wer_delta`, `iou`...)."""

router = APIRouter(tags=["fidelity"])

# A job that is not a fidelity job is an invalid request (422); one that has not succeeded, a conflict.
RESULT_ERRORS = error_responses(NotFound, Conflict, InvalidRequest)

# The optional "why it diverges" documents, by stored result key (served by routes/diagnostics.py).
DIAGNOSTIC_RESULTS: dict[
    str, Literal["classes", "sequence", "robustness", "attention", "task", "task_samples"]
] = {
    RESULT_FIDELITY_CLASSES: "classes",
    RESULT_FIDELITY_SEQUENCE: "sequence",
    RESULT_FIDELITY_ROBUSTNESS: "robustness",
    RESULT_FIDELITY_ATTENTION: "attention",
    RESULT_FIDELITY_TASK_PROXY: "task",
    RESULT_FIDELITY_TASK_SAMPLES: "task_samples",
}


def _fidelity_job(session: SessionDep, job_id: uuid.UUID, caller: Caller) -> Job:
    return succeeded_job(session, job_id, JobKind.fidelity, caller)


@router.get("/jobs/{job_id}/fidelity", operation_id="getFidelityReport", responses=RESULT_ERRORS)
def get_fidelity_report(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> FidelityReportOut:
    job = _fidelity_job(session, job_id, caller)
    summary, stored = summary_and_stored(session, job_id, DIAGNOSTIC_RESULTS)
    return FidelityReportOut(
        job_id=job.id,
        golden_model_id=job.params["golden_model_id"],
        compressed_model_id=job.params["compressed_model_id"],
        dataset_id=job.params["dataset_id"],
        summary=FidelitySummaryOut.model_validate(summary),
        diagnostics=[name for key, name in DIAGNOSTIC_RESULTS.items() if key in stored],
    )


@router.get("/jobs/{job_id}/fidelity/layers", operation_id="getFidelityLayerProfile", responses=RESULT_ERRORS)
def get_fidelity_layer_profile(job_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> LayerProfileOut:
    """Accumulated and local cosine and SQNR of every layer matched between the two models."""
    _fidelity_job(session, job_id, caller)
    missing = f"job {job_id} ran without a layer profile (its parameter layer_profile was false)"
    payload = job_result(session, job_id, RESULT_FIDELITY_LAYERS, missing)
    return LayerProfileOut.model_validate({"job_id": job_id, **payload})


@router.get("/jobs/{job_id}/fidelity/samples", operation_id="listFidelitySamples", responses=RESULT_ERRORS)
def list_fidelity_samples(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    output: str | None = Query(default=None, description="Output name; default: the first output."),
    sort: Literal["kl", "cosine", "mse", "sample_index"] = "kl",
    task_metric: Annotated[
        str | None,
        Query(
            pattern=TASK_METRIC_NAME,
            description="Sort by this per-sample task value instead (a key of the rows' task_values; samples "
            "without it last); `sort` is then ignored.",
        ),
    ] = None,
    order: Literal["asc", "desc"] = "desc",
    flagged: bool | None = Query(default=None, description="Only samples flagged (or not) as degraded."),
    flipped: bool | None = Query(
        default=None, description="Only samples whose top-1 class changed (or not)."
    ),
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Offset = 0,
) -> Page[SampleDivergenceOut]:
    job = _fidelity_job(session, job_id, caller)
    total, rows = sample_divergences(
        session, job, output, sort, order, flagged, flipped, offset, limit, task_metric=task_metric
    )
    return Page[SampleDivergenceOut](
        items=[SampleDivergenceOut.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )


def headline(summary: dict[str, Any]) -> FidelityHeadline:
    """The primary output's key numbers from a stored fidelity summary."""
    output = summary.get("primary_output", "")
    metrics: dict[str, Any] = summary.get("outputs", {}).get(output, {})
    labels = metrics.get("labels") or {}
    concentration = (summary.get("per_sample_summary") or {}).get("concentration") or {}
    return FidelityHeadline(
        output=output,
        kl_mean_nats=metrics.get("kl_mean_nats"),
        js_mean_nats=metrics.get("js_mean_nats"),
        top1_match=metrics.get("top1_match"),
        topk_agreement=metrics.get("topk_agreement"),
        cosine_mean=metrics.get("cosine_mean"),
        sqnr_db=metrics.get("sqnr_db"),
        top1_accuracy_drop_pp=labels.get("top1_accuracy_drop_pp"),
        ece_shift=(labels.get("calibration") or {}).get("ece_shift"),
        concentration=concentration.get("verdict"),
        task=task_headline(metrics.get("task")),
    )


def task_headline(block: Any) -> TaskHeadline | None:
    """The numbers of a task block that a sweep or a budget can name (task_specs/metrics.py), with their
    direction; None for an output without a task block, or a task the table does not list."""
    if not isinstance(block, dict) or block.get("name") not in TASK_METRICS:
        return None
    name = str(block["name"])

    def number(value: Any) -> float | None:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else None

    return TaskHeadline(
        name=name,
        metrics=[
            TaskHeadlineMetric(
                metric=key, value=number(block.get(key)), higher_is_better=higher_is_better(key)
            )
            for key in TASK_METRICS[name]
        ],
    )


@router.get(
    "/projects/{project_id}/fidelity-runs",
    operation_id="listFidelityRuns",
    responses=error_responses(NotFound, InvalidRequest),
)
def list_fidelity_runs(
    project_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    golden_model_id: uuid.UUID | None = None,
    dataset_id: uuid.UUID | None = None,
    compressed_model_id: uuid.UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Offset = 0,
) -> Page[FidelityRunOut]:
    """Every succeeded fidelity job of a project with its headline numbers, newest first: compare runs."""
    get_or_404(session, Project, project_id, caller)
    runs = fidelity_runs(
        session,
        project_id,
        golden_model_id,
        dataset_id,
        limit,
        offset,
        compressed_model_id=compressed_model_id,
    )
    names = {str(i): NamedRef(id=i, name=name) for i, name in runs.names.items()}
    items = [
        FidelityRunOut(
            job_id=job.id,
            name=job.name,
            tags=[str(t) for t in job.tags or []],
            finished_at=job.finished_at,
            golden=names[job.params["golden_model_id"]],
            compressed=names[job.params["compressed_model_id"]],
            dataset=names[job.params["dataset_id"]],
            n_samples=payload.get("n_samples", 0),
            headline=headline(payload),
        )
        for job, payload in runs.page
    ]
    return Page[FidelityRunOut](items=items, total=runs.total, limit=limit, offset=offset)
