"""Results of sensitivity jobs: the layer × configuration matrix, channel importance, mixed-precision
plans, and profiles of several scans side by side."""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import job_result, succeeded_job
from backend.api.sensitivity_schemas import (
    ChannelImportanceOut,
    MixedPrecisionPlansOut,
    ProfileLayerOut,
    SensitivityComparisonOut,
    SensitivityProfileOut,
    SensitivityReportOut,
)
from backend.contracts import (
    RESULT_SENSITIVITY,
    RESULT_SENSITIVITY_ALL_BUT,
    RESULT_SENSITIVITY_IMPORTANCE,
    RESULT_SENSITIVITY_PLANS,
    JobKind,
)
from backend.db.models import Job, Model
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.lru_cache import LRUCache

router = APIRouter(tags=["sensitivity"])
RESULT_ERRORS = error_responses(NotFound, Conflict)


# Reports by (job, finish time, view, cells): a succeeded job's results never change, and a report of 60
# layers × 6 configurations cost 50-70 ms a request to parse (every cell's record, even when left out) and
# validate. The access check runs before the cache, on every request.
_REPORTS: LRUCache[tuple[Any, ...], SensitivityReportOut] = LRUCache(max_weight=32)


def _report(session: SessionDep, job: Job, key: str, missing: str, cells: bool) -> SensitivityReportOut:
    def build() -> SensitivityReportOut:
        doc = job_result(session, job.id, key, missing)
        if not cells:
            doc.pop("cells", None)
        return SensitivityReportOut.model_validate(
            doc
            | {"job_id": job.id, "model_id": job.params["model_id"], "dataset_id": job.params["dataset_id"]}
        )

    return _REPORTS.get_or_compute((job.id, job.finished_at, key, cells), build)


@router.get("/jobs/{job_id}/sensitivity", operation_id="getSensitivityReport", responses=RESULT_ERRORS)
def get_sensitivity_report(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    cells: bool = Query(
        default=False, description="Include every cell's full record (large for big models)."
    ),
) -> SensitivityReportOut:
    """Each layer compressed alone with each configuration: the matrix behind the heatmap, the ranking,
    layer metadata, and each configuration applied to the whole model."""
    job = succeeded_job(session, job_id, JobKind.sensitivity, caller)
    return _report(session, job, RESULT_SENSITIVITY, f"job {job_id} has no sensitivity result", cells)


@router.get(
    "/jobs/{job_id}/sensitivity/all-but", operation_id="getSensitivityAllBut", responses=RESULT_ERRORS
)
def get_sensitivity_all_but(
    job_id: uuid.UUID, session: SessionDep, caller: CallerDep, cells: bool = Query(default=False)
) -> SensitivityReportOut:
    """The complementary view: every layer compressed except the one named by the row, left in float."""
    job = succeeded_job(session, job_id, JobKind.sensitivity, caller)
    missing = f"job {job_id} ran without the complementary view (its parameter all_but was false)"
    return _report(session, job, RESULT_SENSITIVITY_ALL_BUT, missing, cells)


@router.get(
    "/jobs/{job_id}/sensitivity/plans", operation_id="getMixedPrecisionPlans", responses=RESULT_ERRORS
)
def get_mixed_precision_plans(
    job_id: uuid.UUID, session: SessionDep, caller: CallerDep
) -> MixedPrecisionPlansOut:
    """Bit-width per layer minimising the predicted KL under each size budget, and the KL measured with
    the whole plan applied."""
    succeeded_job(session, job_id, JobKind.sensitivity, caller)
    doc = job_result(session, job_id, RESULT_SENSITIVITY_PLANS, f"job {job_id} has no mixed-precision plans")
    return MixedPrecisionPlansOut.model_validate({"job_id": job_id, **doc})


@router.get(
    "/jobs/{job_id}/sensitivity/channels", operation_id="getChannelImportance", responses=RESULT_ERRORS
)
def get_channel_importance(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    layer: Annotated[str, Query(min_length=1, max_length=1000)],
    method: Literal["l1", "l2", "taylor", "reconstruction"] = "l1",
    limit: Annotated[
        int | None, Query(ge=1, le=100_000, description="Only the first (most important) channels.")
    ] = None,
) -> ChannelImportanceOut:
    """Channel importance of one layer, most important channel first."""
    succeeded_job(session, job_id, JobKind.sensitivity, caller)
    doc = job_result(
        session, job_id, RESULT_SENSITIVITY_IMPORTANCE, f"job {job_id} has no channel importance"
    )
    layers: dict[str, Any] = doc.get("layers", {})
    if layer not in layers:
        raise NotFound(f"job {job_id} scored no layer named {layer!r}; scored layers: {sorted(layers)[:50]}")
    if method not in layers[layer]:
        raise NotFound(
            f"job {job_id} did not compute {method!r} importance (its importance_methods: {sorted(layers[layer])})"
        )
    scores = dict(layers[layer][method])
    if limit is not None and "channels" in scores:
        scores["channels"] = scores["channels"][:limit]
    return ChannelImportanceOut.model_validate({"job_id": job_id, "layer": layer, "method": method} | scores)


def _mean(values: list[float]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None


def _profile(session: SessionDep, job: Job) -> SensitivityProfileOut:
    doc = job_result(session, job.id, RESULT_SENSITIVITY, f"job {job.id} has no sensitivity result")
    matrix = doc["matrix"]
    metric = doc.get("ranking_metric", "kl")
    if metric not in ("kl", "sqnr"):  # ranked by a task metric: profiles of several models compare the proxy
        metric = "kl" if doc.get("output_kind") == "classification" else "sqnr"
    by_kl = metric == "kl"
    values = matrix["kl_mean"] if by_kl else matrix["sqnr_db"]
    score = {  # layer -> config -> score (higher = more sensitive)
        row: {col: (v if by_kl or v is None else -v) for col, v in zip(matrix["columns"], line, strict=True)}
        for row, line in zip(matrix["rows"], values, strict=True)
    }
    layers, grouped = [], defaultdict(list)
    for layer in doc["layers"]:
        if layer["name"] not in score:
            continue
        layers.append(
            ProfileLayerOut(
                name=layer["name"],
                type=layer["type"],
                depth_fraction=layer["depth_fraction"],
                scores=score[layer["name"]],
            )
        )
        grouped[layer["type"]].append(score[layer["name"]])
    model = session.get(Model, uuid.UUID(str(job.params["model_id"])))
    return SensitivityProfileOut(
        job_id=job.id,
        model_id=job.params["model_id"],
        model_name=None if model is None else model.name,
        ranking_metric=metric,
        configs=list(matrix["columns"]),
        layers=layers,
        by_type={
            kind: {col: _mean([s[col] for s in rows]) for col in matrix["columns"]}
            for kind, rows in grouped.items()
        },
        layer_counts={kind: len(rows) for kind, rows in grouped.items()},
    )


@router.get("/sensitivity-profiles", operation_id="compareSensitivityProfiles", responses=RESULT_ERRORS)
def compare_sensitivity_profiles(
    session: SessionDep,
    caller: CallerDep,
    job_ids: Annotated[list[uuid.UUID], Query(min_length=1, max_length=20, description="Sensitivity jobs.")],
) -> SensitivityComparisonOut:
    """Sensitivity of several models (e.g. a CNN, a transformer encoder, an LSTM) on a normalised depth
    axis and aggregated by layer type, with the configurations they have in common."""
    if len(set(job_ids)) != len(job_ids):
        raise InvalidRequest("job_ids must not repeat a job")
    profiles = [
        _profile(session, succeeded_job(session, job_id, JobKind.sensitivity, caller)) for job_id in job_ids
    ]
    common = [c for c in profiles[0].configs if all(c in p.configs for p in profiles[1:])]
    return SensitivityComparisonOut(profiles=profiles, common_configs=common)
