"""The stored results a sweep plans from: the "only" scan that mixed precision and the accuracy-aware search
both read."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from sqlalchemy import select

from backend.contracts import RESULT_SENSITIVITY
from backend.db.models import JobResult
from worker.engine.errors import EngineError
from worker.runtime import JobContext

if TYPE_CHECKING:
    from worker.engine.sensitivity.result import SensitivityResult


def stored_scan(ctx: JobContext, job_id: uuid.UUID, use: str) -> SensitivityResult:
    """The sensitivity job's stored result; an EngineError naming `use` ("to plan from") when it has none."""
    from worker.engine.sensitivity.result import SensitivityResult

    with ctx.sessions() as session:
        doc = session.execute(
            select(JobResult.payload).where(JobResult.job_id == job_id, JobResult.key == RESULT_SENSITIVITY)
        ).scalar_one_or_none()
    if doc is None:
        raise EngineError(f"the sensitivity job {job_id} has no result {use}")
    return SensitivityResult.from_dict(doc)
