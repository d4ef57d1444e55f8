"""The per-sample table of a fidelity job as one CSV file: every sample of an output, in sample order, with
the columns the API's per-sample page has (GET /jobs/{id}/fidelity/samples), for spreadsheets and pandas."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Query
from fastapi.responses import Response
from sqlalchemy import select

from backend.api.auth import CallerDep
from backend.api.csv_text import csv_text
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import succeeded_job
from backend.contracts import JobKind
from backend.db.models import SampleDivergence
from backend.errors import Conflict, InvalidRequest, NotFound

router = APIRouter(tags=["fidelity"])

COLUMNS = (
    "sample_index",
    "output_name",
    "kl",
    "cosine",
    "mse",
    "sqnr_db",
    "top1_match",
    "golden_class",
    "compressed_class",
    "label",
    "flagged",
    "finite",
)


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value  # a float is written as its repr (every digit: the CSV holds the stored numbers exactly)


def samples_csv(rows: list[tuple[object, ...]]) -> str:
    """CSV text of rows in COLUMNS order. SQNR is stored as NULL when infinite; an exact sample (finite, MSE 0)
    is written "inf" (+∞ dB, as the API's sqnr_db_infinite says), an undefined one is left empty."""
    table = []
    for row in rows:
        cells = dict(zip(COLUMNS, row, strict=True))
        if cells["sqnr_db"] is None and cells["finite"] and cells["mse"] == 0.0:
            cells["sqnr_db"] = "inf"
        table.append([_cell(v) for v in cells.values()])
    return csv_text(COLUMNS, table)


@router.get(
    "/jobs/{job_id}/fidelity/samples.csv",
    operation_id="exportFidelitySamplesCsv",
    responses=error_responses(NotFound, Conflict, InvalidRequest)
    | {200: {"content": {"text/csv": {}}, "description": "One row per sample, a header row first."}},
    response_class=Response,
)
def export_fidelity_samples_csv(
    job_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    output: str | None = Query(default=None, max_length=200, description="Only this output; default: all."),
    flagged: bool | None = Query(default=None, description="Only samples flagged (or not) as degraded."),
) -> Response:
    """Every sample of the job's per-sample table (all outputs unless `output` says which), in sample order."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    conditions = [SampleDivergence.job_id == job_id]
    if output is not None:
        conditions.append(SampleDivergence.output_name == output)
    if flagged is not None:
        conditions.append(SampleDivergence.flagged == flagged)
    columns = [getattr(SampleDivergence, c) for c in COLUMNS]
    rows = session.execute(
        select(*columns)
        .where(*conditions)
        .order_by(SampleDivergence.output_name, SampleDivergence.sample_index)
    ).all()
    if not rows and output is not None:
        raise NotFound(f"job {job_id} has no samples of an output named {output!r}")
    return Response(
        samples_csv([tuple(r) for r in rows]),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="samples-{str(job_id)[:8]}.csv"'},
    )
