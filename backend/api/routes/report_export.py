"""A finished fidelity, sensitivity or sweep job as one self-contained HTML file (issue 17, shareable reports).

The dashboard's build makes a second page, frontend/dist/offline.html: the report, sensitivity and sweep pages
with every script, style and the Plotly bundle inlined, and an empty `<script type="application/json"
id="kb-report">`. This route fills that element with the job's stored results, gathered by calling the very
route functions the pages call (so the file holds exactly what the dashboard fetches, typed), keyed by the API
path each page asks for. In the file, the pages' API client is answered from that document instead of the
network (frontend/src/offline/answer.ts).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel
from sqlalchemy import select

from backend.accounts import Caller
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, SettingsDep, StoreDep
from backend.api.errors import error_responses
from backend.api.offline_inspections import INSPECT_MAX, gather_inspections, gather_task_samples
from backend.api.routes import (
    attention,
    datasets,
    diagnostics,
    fidelity,
    jobs,
    models,
    projects,
    robustness,
    sensitivity,
    sweep,
    sweep_search,
    task_proxy,
)
from backend.api.routes.lookup import get_or_404, job_result
from backend.contracts import (
    RESULT_FIDELITY_ATTENTION,
    RESULT_FIDELITY_ROBUSTNESS,
    RESULT_FIDELITY_TASK_PROXY,
    RESULT_SENSITIVITY_IMPORTANCE,
    JobKind,
)
from backend.db.models import Job, JobResult, JobStatus, SampleDivergence
from backend.errors import Conflict, InvalidRequest, KneeboardError, NotFound

router = APIRouter(tags=["jobs"])

TEMPLATE_NAME = "offline.html"
DATA_OPEN = '<script type="application/json" id="kb-report">'
SAMPLES_MAX = 2000
"""Per-sample rows embedded per output (the first by sample index): the histogram and the table of the file
use these; the page says when the job had more."""
CHANNEL_LIMIT = 512
"""As the sensitivity page asks (frontend/src/lib/sensitivity.ts CHANNEL_LIMIT)."""
SWEEP_POINTS_MAX = 1000
"""As the sweep page asks (frontend/src/api/sweeps.ts SWEEP_POINTS_MAX)."""
EXPORTABLE = (JobKind.fidelity, JobKind.sensitivity, JobKind.sweep)
EMBEDDED = "embedded"
OFFLINE_ROUTES: dict[str, str] = {
    "": EMBEDDED,
    "/chunks": EMBEDDED,
    "/fidelity": EMBEDDED,
    "/fidelity/layers": EMBEDDED,
    "/fidelity/classes": EMBEDDED,
    "/fidelity/sequence": EMBEDDED,
    "/fidelity/attention": EMBEDDED,
    "/fidelity/task": "embedded with the default points (every sample up to 5000, else every k-th)",
    "/fidelity/task/samples": "sorted worst-first by the task metric and paged in the file over the embedded rows",
    "/robustness": EMBEDDED,
    "/robustness/{slice}/{severity}/samples/{index}.png": "not in the file: the worst samples' corrupted "
    "inputs (up to 240 pictures per image input: 8 image slices x 3 severities x 10) are not embedded; the page "
    "says so where it would show them",
    "/fidelity/samples": "sorted, filtered and paged in the file over the embedded rows",
    "/fidelity/classes/samples": "filtered in the file from the embedded rows",
    "/fidelity/samples.csv": "not in the file: a download (the page's links into the API are hidden there)",
    "/sensitivity": EMBEDDED,
    "/sensitivity/all-but": EMBEDDED,
    "/sensitivity/plans": EMBEDDED,
    "/sensitivity/channels": "embedded for every scored layer and method",
    "/sweep/points": EMBEDDED,
    "/sweep/points/{index}": "not in the file: the pages read the points page, which holds every point",
    "/sweep/points/{index}/export": "not in the file: a model download",
    "/sweep/search": EMBEDDED,
    "/recovery": "not exported: recovery jobs have no report page to export",
    "/recovery/model": "not exported: a model download",
    "/recovery/layers": "not exported: recovery jobs have no report page to export",
    "/export.html": "this route",
    "/samples/{index}": "embedded for the worst samples by KL (backend/api/offline_inspections.py: at most "
    "INSPECT_MAX, their rows added to the embedded per-sample rows); other samples answer 404 in the file",
    "/samples/{index}/task": "embedded for the same samples as the inspections, a detection's or "
    "segmentation's picture and a signal's WAVs as data: URLs within the pictures' budget "
    "(backend/api/offline_inspections.py gather_task_samples); others 404",
    "/samples/{index}/task/audio/{which}": "embedded inside each embedded signal task sample, as its audio's "
    "data: URL (the same WAV bytes), within the pictures' byte budget",
    "/samples/{index}/input.png": "embedded inside each embedded inspection, as its thumbnail's data: URL "
    "(the same PNG bytes), within a byte budget",
}
"""How the exported file answers each GET under /api/v1/jobs/{job_id}: a route added there must say it here
(tests/backend/test_report_export.py), so that a page reading a new document does not break in the file."""


class ReportTemplateMissing(KneeboardError):
    """The dashboard (and with it the offline report page) was not built on this server."""

    status_code = 503
    code = "dashboard_not_built"


class _Gathered:
    """API path -> the JSON the route serves there, or the error it answers with."""

    def __init__(self) -> None:
        self.responses: dict[str, Any] = {}
        self.errors: dict[str, dict[str, Any]] = {}

    def add(self, path: str, read: Callable[[], Any]) -> Any:
        try:
            value = read()
        except KneeboardError as error:
            self.errors[path] = {"status": error.status_code, "detail": error.message}
            return None
        self.responses[path] = _json(value)
        return self.responses[path]


def _json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _gather_context(g: _Gathered, job: Job, session: SessionDep, caller: Caller, ids: set[str]) -> None:
    """The job, its project and the names of the models and datasets it used (only those)."""
    g.add(f"/api/v1/jobs/{job.id}", lambda: jobs.get_job(job.id, session, caller))
    g.add(f"/api/v1/jobs/{job.id}/chunks", lambda: jobs.list_job_chunks(job.id, session, caller))
    project = job.project_id
    g.add(f"/api/v1/projects/{project}", lambda: projects.get_project(project, session, caller))
    for path, listed in (
        (f"/api/v1/projects/{project}/models", lambda: models.list_models(project, session, caller)),
        (f"/api/v1/projects/{project}/datasets", lambda: datasets.list_datasets(project, session, caller)),
    ):
        rows = g.add(path, listed)
        if rows is not None:
            g.responses[path] = [r for r in rows if r.get("id") in ids]


def _gather_fidelity(g: _Gathered, job: Job, session: SessionDep, caller: Caller) -> dict[str, Any]:
    base = f"/api/v1/jobs/{job.id}/fidelity"
    g.add(base, lambda: fidelity.get_fidelity_report(job.id, session, caller))
    g.add(f"{base}/layers", lambda: fidelity.get_fidelity_layer_profile(job.id, session, caller))
    g.add(f"{base}/classes", lambda: diagnostics.get_fidelity_classes(job.id, session, caller))
    g.add(f"{base}/sequence", lambda: diagnostics.get_fidelity_sequence(job.id, session, caller))
    if session.scalar(  # only a job run with the option has one; the page asks only then (diagnostics)
        select(JobResult.key).where(JobResult.job_id == job.id, JobResult.key == RESULT_FIDELITY_ROBUSTNESS)
    ):
        g.add(
            f"/api/v1/jobs/{job.id}/robustness",
            lambda: robustness.get_fidelity_robustness(job.id, session, caller),
        )
    if session.scalar(  # only an ONNX pair with attention softmaxes has one (the page asks only then)
        select(JobResult.key).where(JobResult.job_id == job.id, JobResult.key == RESULT_FIDELITY_ATTENTION)
    ):
        g.add(f"{base}/attention", lambda: attention.get_fidelity_attention(job.id, session, caller))
    if session.scalar(  # only a job with a task that scores samples has one (the page asks only then)
        select(JobResult.key).where(JobResult.job_id == job.id, JobResult.key == RESULT_FIDELITY_TASK_PROXY)
    ):
        g.add(f"{base}/task", lambda: task_proxy.get_fidelity_task_proxy(job.id, session, caller))
    outputs = session.scalars(
        select(SampleDivergence.output_name).where(SampleDivergence.job_id == job.id).distinct()
    ).all()
    samples: dict[str, Any] = {}
    for output in sorted(outputs):
        rows: list[Any] = []
        total = 0
        while len(rows) < SAMPLES_MAX:
            page = fidelity.list_fidelity_samples(
                job.id,
                session,
                caller,
                output=output,
                sort="sample_index",
                order="asc",
                flagged=None,
                flipped=None,
                limit=min(1000, SAMPLES_MAX - len(rows)),
                offset=len(rows),
            )
            total = page.total
            rows.extend(_json(item) for item in page.items)
            if not page.items or len(rows) >= total:
                break
        # the worst rows by KL too, so the samples the file can inspect can be clicked in its table
        worst = fidelity.list_fidelity_samples(
            job.id, session, caller, output=output, sort="kl", order="desc", flagged=None, flipped=None,
            limit=INSPECT_MAX, offset=0,
        )  # fmt: skip
        held = {row["sample_index"] for row in rows}
        rows.extend(_json(item) for item in worst.items if item.sample_index not in held)
        rows.sort(key=lambda row: row["sample_index"])
        samples[output] = {"rows": rows, "total": total}
    return {"samples": samples}


def _gather_sensitivity(g: _Gathered, job: Job, session: SessionDep, caller: Caller) -> dict[str, Any]:
    base = f"/api/v1/jobs/{job.id}/sensitivity"
    g.add(base, lambda: sensitivity.get_sensitivity_report(job.id, session, caller, cells=False))
    g.add(
        f"{base}/all-but", lambda: sensitivity.get_sensitivity_all_but(job.id, session, caller, cells=False)
    )
    g.add(f"{base}/plans", lambda: sensitivity.get_mixed_precision_plans(job.id, session, caller))
    channels: dict[str, Any] = {}
    try:
        doc = job_result(session, job.id, RESULT_SENSITIVITY_IMPORTANCE, "no channel importance")
    except NotFound:
        doc = {}
    for layer, methods in (doc.get("layers") or {}).items():
        for method in methods:
            channels[f"{layer}\n{method}"] = _json(
                sensitivity.get_channel_importance(
                    job.id, session, caller, layer=layer, method=method, limit=CHANNEL_LIMIT
                )
            )
    return {"channels": channels}


def _gather_sweep(g: _Gathered, job: Job, session: SessionDep, caller: Caller) -> dict[str, Any]:
    path = f"/api/v1/jobs/{job.id}/sweep/points"
    points = g.add(
        path,
        lambda: sweep.list_sweep_points(
            job.id, session, caller, details=True, limit=SWEEP_POINTS_MAX, offset=0
        ),
    )
    if job.params.get("search"):
        g.add(
            f"/api/v1/jobs/{job.id}/sweep/search",
            lambda: sweep_search.get_sweep_search(job.id, session, caller),
        )
    items: list[dict[str, Any]] = (points or {}).get("items", [])
    by_id = {item["id"]: item for item in items}
    names = sorted(
        {
            name
            for item in items
            for name, value in (item.get("objectives") or {}).items()
            if isinstance(value, int | float)
        }
    )
    # The page asks for the frontier of the axes it shows, which the reader may change: every ordered pair of
    # objectives in every direction (and each one alone), without bounds. Bounds need the live dashboard.
    frontiers: dict[str, Any] = {}
    axes = [[a] for a in names] + [list(p) for p in itertools.permutations(names, 2)]
    for chosen in axes:
        for directions in itertools.product(("min", "max"), repeat=len(chosen)):
            objective = [f"{n}:{d}" for n, d in zip(chosen, directions, strict=True)]
            try:
                out = sweep.get_sweep_frontier(
                    session, caller, job_ids=[job.id], objective=objective, bound=None
                )
            except KneeboardError:
                continue
            frontiers[",".join(objective)] = _compact_frontier(_json(out), by_id)
    return {"frontiers": frontiers}


def _frontier_point(point: dict[str, Any], knee: str | None) -> dict[str, Any]:
    """A frontier point as the frontier route serves it, from the point as the points route serves it."""
    keys = ("id", "job_id", "index", "label", "objectives")
    return {k: point.get(k) for k in keys} | {"knee": point.get("id") == knee}


def _compact_frontier(frontier: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The frontier with its points as ids of the embedded points (`frontier_ids`; the file rebuilds them,
    frontend/src/offline/answer.ts), when that rebuilds exactly what the route served: each frontier point
    repeats every objective of its point, and a sweep's ~1000 frontiers would otherwise be megabytes."""
    points = frontier["frontier"]
    knee = frontier.get("knee")
    if not all(p["id"] in by_id and _frontier_point(by_id[p["id"]], knee) == p for p in points):
        return frontier
    rest = {k: v for k, v in frontier.items() if k != "frontier"}
    return rest | {"frontier_ids": [p["id"] for p in points]}


GATHER = {
    JobKind.fidelity: _gather_fidelity,
    JobKind.sensitivity: _gather_sensitivity,
    JobKind.sweep: _gather_sweep,
}


def report_document(job: Job, session: SessionDep, caller: Caller) -> dict[str, Any]:
    """Everything the job's page fetches, keyed by API path, plus the per-kind extras the page pages through."""
    kind = JobKind(job.kind)
    g = _Gathered()
    ids = {str(v) for v in job.params.values() if isinstance(v, str)}
    _gather_context(g, job, session, caller, ids)
    extras = GATHER[kind](g, job, session, caller)
    return {
        "format": 1,
        "kind": kind.value,
        "job_id": str(job.id),
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "responses": g.responses,
        "errors": g.errors,
        **extras,
    }


def embed_json(document: dict[str, Any]) -> str:
    """JSON that cannot end its <script> element or open a comment in it: <, > and & are \\u escapes, which
    JSON.parse reads back as the same characters."""
    text = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def fill_template(template: str, document: dict[str, Any]) -> str:
    start = template.find(DATA_OPEN)
    end = template.find("</script>", start)
    if start < 0 or end < 0 or template.find(DATA_OPEN, start + 1) >= 0:
        raise ReportTemplateMissing(
            f"the dashboard's {TEMPLATE_NAME} has no single {DATA_OPEN} element; rebuild it (npm run build)"
        )
    return template[: start + len(DATA_OPEN)] + embed_json(document) + template[end:]


def _template(request: Request) -> str:
    dist: Path = request.app.state.frontend_dist
    path = dist / TEMPLATE_NAME
    if not path.is_file():
        raise ReportTemplateMissing(
            f"the offline report page {path} is not built; ./scripts/install.sh builds it, or by hand: "
            "cd frontend && npm ci && npm run build"
        )
    return path.read_text(encoding="utf-8")


@router.get(
    "/jobs/{job_id}/export.html",
    operation_id="exportJobReport",
    responses={
        **error_responses(NotFound, Conflict, InvalidRequest, ReportTemplateMissing),
        200: {
            "content": {"text/html": {"schema": {"type": "string"}}},
            "description": "The report as one HTML file, for download.",
        },
    },
    response_class=Response,
)
def export_job_report(
    job_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    store: StoreDep,
    settings: SettingsDep,
    caller: CallerDep,
) -> Response:
    """The job's report (fidelity, sensitivity or sweep) as one self-contained HTML file: every number, the
    charts and the scripts that draw them inline, nothing fetched from a network; open it in a browser."""
    job = get_or_404(session, Job, job_id, caller)
    if job.kind not in {k.value for k in EXPORTABLE}:
        raise InvalidRequest(
            f"job {job_id} is a {job.kind} job; reports export fidelity, sensitivity and sweep jobs"
        )
    if job.status != JobStatus.succeeded.value:
        raise Conflict(f"job {job_id} is {job.status}; its report can be exported once it has succeeded")
    template = _template(request)
    document = report_document(job, session, caller)
    if job.kind == JobKind.fidelity.value:
        found = gather_inspections(session, store, settings, job.id, caller)
        document["responses"].update(found.responses)
        document["responses"].update(gather_task_samples(session, store, settings, job.id, caller))
        document["inspections"] = {
            "indices": found.indices,
            "max": INSPECT_MAX,
            "pictures_left_out": found.pictures_left_out,
        }
    html = fill_template(template, document)
    filename = f"kneeboard-{job.kind}-{job.id}.html"
    return Response(
        content=html,
        media_type="text/html; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
