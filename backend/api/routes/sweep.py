"""Results of sweep jobs: the evaluated points, the Pareto frontier over any objectives and constraints
(across several sweeps), and the download of a point's model."""

from __future__ import annotations

import io
import json
import math
import re
import uuid
import zipfile
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy import func, select

from backend import sweep_objectives
from backend.accounts import Caller
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.common import CompressionConfigOut
from backend.api.result_schemas.sweep import (
    ExportManifestOut,
    FrontierConstraintOut,
    FrontierObjectiveOut,
    SweepPointDocOut,
)
from backend.api.routes.lookup import succeeded_job
from backend.api.schemas import MAX_OFFSET, Offset, Page
from backend.contracts import JobKind
from backend.db.models import Job, SweepPoint
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.lru_cache import LRUCache
from backend.pareto import Bound, pareto_from_columns
from backend.sweep_objectives import SweepObjectives

router = APIRouter(tags=["sweep"])
RESULT_ERRORS = error_responses(NotFound, Conflict)


class SweepPointOut(BaseModel):
    job_id: uuid.UUID
    index: int
    id: str = Field(description="'<job id>:<index>', the point's id on a frontier.")
    label: str = Field(description="The configuration's id, e.g. w8-sym-channel+a8-minmax.")
    config: CompressionConfigOut
    objectives: dict[str, float | None] = Field(
        description="The point's numbers by name (kl_mean, top1_agreement, size_bytes, bops, "
        "latency_p50_ms_b1, runtime_memory_mib...): the axes a frontier can use."
    )
    point: SweepPointDocOut | None = Field(
        default=None, description="Everything measured (with ?details=true)."
    )
    executable: bool | None = Field(
        default=None,
        description="A real runtime can execute this point (else its figures are simulated only).",
    )
    real_export: str | None = Field(
        default=None, description="The runtime form of its export, e.g. real-int8-qdq."
    )
    export_available: bool
    export_manifest: ExportManifestOut | None = Field(
        default=None, description="The downloadable export's manifest (with ?details=true)."
    )


def _out(row: SweepPoint, details: bool) -> SweepPointOut:
    return SweepPointOut(
        job_id=row.job_id,
        index=row.index,
        id=f"{row.job_id}:{row.index}",
        label=row.label,
        config=CompressionConfigOut.model_validate(row.config),
        objectives=row.objectives,
        point=SweepPointDocOut.model_validate(row.point) if details else None,
        executable=(row.point.get("runtime") or {}).get("executable"),
        real_export=(row.point.get("runtime") or {}).get("real_export"),
        export_available=row.export_sha256 is not None,
        export_manifest=(
            ExportManifestOut.model_validate(row.export_manifest) if details and row.export_manifest else None
        ),
    )


@router.get("/jobs/{job_id}/sweep/points", operation_id="listSweepPoints", responses=RESULT_ERRORS)
def list_sweep_points(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    details: bool = Query(default=False, description="Include each point's full document and manifest."),
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Offset = 0,
) -> Page[SweepPointOut]:
    succeeded_job(session, job_id, JobKind.sweep, caller)
    total = session.execute(select(func.count()).where(SweepPoint.job_id == job_id)).scalar_one()
    rows = session.scalars(
        select(SweepPoint)
        .where(SweepPoint.job_id == job_id)
        .order_by(SweepPoint.index)
        .limit(limit)
        .offset(offset)
    )
    return Page[SweepPointOut](
        items=[_out(r, details) for r in rows], total=total, limit=limit, offset=offset
    )


@router.get("/jobs/{job_id}/sweep/points/{index}", operation_id="getSweepPoint", responses=RESULT_ERRORS)
def get_sweep_point(
    job_id: uuid.UUID,
    index: Annotated[int, Path(ge=0, le=MAX_OFFSET)],
    session: SessionDep,
    caller: CallerDep,
) -> SweepPointOut:
    return _out(_point(session, job_id, index, caller), details=True)


def _point(session: SessionDep, job_id: uuid.UUID, index: int, caller: Caller) -> SweepPoint:
    succeeded_job(session, job_id, JobKind.sweep, caller)
    row = session.scalars(
        select(SweepPoint).where(SweepPoint.job_id == job_id, SweepPoint.index == index)
    ).first()
    if row is None:
        raise NotFound(
            f"sweep job {job_id} has no point {index}; list them with GET /jobs/{job_id}/sweep/points"
        )
    return row


_OBJECTIVE = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]{1,100}):(?P<direction>min|max)$")
_BOUND = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]{1,100})(?P<op><=|>=)(?P<value>[-+0-9.eE]{1,40})$")


def _objectives(raw: list[str]) -> list[tuple[str, str]]:
    parsed = []
    for item in raw:
        match = _OBJECTIVE.match(item)
        if match is None:
            raise InvalidRequest(f"objective {item!r}: expected name:min or name:max, e.g. kl_mean:min")
        parsed.append((match["name"], match["direction"]))
    return parsed


def _bounds(raw: list[str]) -> list[Bound]:
    bounds = []
    for item in raw:
        match = _BOUND.match(item)
        try:
            value = float(match["value"]) if match else float("nan")
        except ValueError:
            value = float("nan")
        if match is None or value != value:
            raise InvalidRequest(f"bound {item!r}: expected name<=number or name>=number, e.g. kl_mean<=0.01")
        at_most = value if match["op"] == "<=" else None
        at_least = value if match["op"] == ">=" else None
        bounds.append(Bound(match["name"], at_least=at_least, at_most=at_most))
    return bounds


class FrontierPointOut(BaseModel):
    id: str
    job_id: uuid.UUID
    index: int
    label: str
    objectives: dict[str, float | None]
    knee: bool


class FrontierOut(BaseModel):
    """The non-dominated points (no other point at least as good on every objective and better on one)."""

    objectives: list[FrontierObjectiveOut]
    frontier: list[FrontierPointOut] = Field(description="In order along the first objective.")
    knee: str | None = Field(
        description="The frontier's knee: the best trade-off (see docs/design-notes.md)."
    )
    knee_method: str
    excluded: list[str] = Field(description="Points without a finite value for an objective or bound.")
    filtered: int = Field(description="Points outside the bounds.")
    n_points: int
    constraints: list[FrontierConstraintOut]


@router.get("/sweep-frontier", operation_id="getSweepFrontier", responses=RESULT_ERRORS)
def get_sweep_frontier(
    session: SessionDep,
    caller: CallerDep,
    job_ids: Annotated[list[uuid.UUID], Query(min_length=1, max_length=50, description="Sweep jobs.")],
    objective: Annotated[
        list[str],
        Query(
            min_length=1, max_length=3, description="name:min or name:max, e.g. kl_mean:min, size_bytes:min."
        ),
    ],
    bound: Annotated[
        list[str] | None,
        Query(max_length=10, description="name<=value or name>=value, e.g. top1_agreement>=0.99."),
    ] = None,
) -> FrontierOut:
    """The Pareto frontier of the points of one or several sweeps over 1 to 3 objectives, after the bounds."""
    objectives, bounds = _objectives(objective), _bounds(bound or [])
    jobs = list(dict.fromkeys(job_ids))
    for job_id in jobs:
        succeeded_job(session, job_id, JobKind.sweep, caller)
    current = sweep_objectives.fingerprints(session, jobs)
    return _FRONTIERS.get_or_compute(
        sweep_objectives.frontier_key(current, objectives, bounds),
        lambda: _frontier(session, jobs, current, objectives, bounds),
    )


# Frontiers by (sweeps with their points' fingerprints, objectives, bounds); at most 200,000 frontier points
# in all (a few hundred MB at worst). A hit answers in the time of the access checks and one aggregate.
_FRONTIERS: LRUCache[tuple[Any, ...], FrontierOut] = LRUCache(
    max_weight=200_000, weight=lambda out: len(out.frontier) + 1
)


def _frontier(
    session: SessionDep,
    jobs: list[uuid.UUID],
    current: dict[uuid.UUID, sweep_objectives.Fingerprint],
    objectives: list[tuple[str, str]],
    bounds: list[Bound],
) -> FrontierOut:
    tables = sweep_objectives.load(session, jobs, current)
    known = {name for table in tables for name in table.names}
    unknown = [name for name, _ in objectives if name not in known] + [
        b.objective for b in bounds if b.objective not in known
    ]
    if unknown and any(len(table.indexes) for table in tables):
        raise InvalidRequest(f"unknown objective(s) {unknown}; these sweeps measured: {sorted(known)}")
    used = dict.fromkeys([name for name, _ in objectives] + [b.objective for b in bounds])
    columns = {name: np.concatenate([table.column(name) for table in tables]) for name in used}
    # Points are named by their position in the concatenated columns: no string ids for 10,000 points (the
    # uuids' str() alone cost 25 ms), only for the few that are answered.
    starts = np.cumsum([0] + [len(table.indexes) for table in tables])
    result = pareto_from_columns(columns, range(int(starts[-1])), objectives, bounds)

    def locate(position: int) -> tuple[SweepObjectives, int, str]:
        which = int(np.searchsorted(starts, position, side="right")) - 1
        table, row = tables[which], position - int(starts[which])
        return table, row, f"{table.job_id}:{int(table.indexes[row])}"

    frontier = []
    for position in result.frontier:
        table, row, pid = locate(int(position))
        frontier.append(
            FrontierPointOut(
                id=pid,
                job_id=table.job_id,
                index=int(table.indexes[row]),
                label=table.labels[row],
                objectives={
                    name: (value if math.isfinite(value) else None)
                    for name, value in zip(table.names, table.values[row].tolist(), strict=True)
                },
                knee=position == result.knee,
            )
        )
    doc = result.to_dict()
    return FrontierOut(
        objectives=[FrontierObjectiveOut.model_validate(o) for o in doc["objectives"]],
        frontier=frontier,
        knee=None if result.knee is None else locate(int(result.knee))[2],
        knee_method=result.knee_method,
        excluded=[locate(int(position))[2] for position in result.excluded],
        filtered=result.filtered,
        n_points=result.n_points,
        constraints=[FrontierConstraintOut.model_validate(b.to_dict()) for b in result.constraints],
    )


@router.get(
    "/jobs/{job_id}/sweep/points/{index}/export",
    operation_id="exportSweepPoint",
    responses=RESULT_ERRORS
    | {200: {"content": {"application/zip": {}}, "description": "model.onnx + manifest.json"}},
    response_class=StreamingResponse,
)
def export_sweep_point(
    job_id: uuid.UUID,
    index: Annotated[int, Path(ge=0, le=MAX_OFFSET)],
    session: SessionDep,
    caller: CallerDep,
    request: Request,
) -> StreamingResponse:
    """A zip of the point's runnable ONNX model and its manifest (configuration, metrics, source model hash,
    what is real and what is simulated, file size on disk next to the computed size)."""
    row = _point(session, job_id, index, caller)
    if row.export_sha256 is None:
        raise NotFound(f"point {index} of job {job_id} has no exported model (the job ran with export=false)")
    job = session.get_one(Job, job_id)
    store = request.app.state.store
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(store.local_path(row.export_sha256), "model.onnx")
        manifest = dict(row.export_manifest or {}) | {
            "job_id": str(job.id),
            "point_index": index,
            "label": row.label,
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
    buffer.seek(0)
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", row.label)[:80] or "point"
    return StreamingResponse(
        buffer,
        media_type="application/zip",
        headers={"content-disposition": f'attachment; filename="kneeboard-{name}.zip"'},
    )
