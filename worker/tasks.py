"""Celery tasks: one per job kind, registered under the names the API sends (backend.contracts), plus the
chunk and merge tasks of jobs that fan out over the worker pool."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from backend.contracts import CHUNK_TASK, MERGE_TASK, TASK_NAMES, JobKind
from backend.db.models import Job, Model, ModelStatus
from backend.db.session import session_factory
from backend.settings import get_settings
from worker.celery_app import app
from worker.fanout import FanOutHandler, execute_chunk, execute_fanout_job, execute_merge
from worker.handlers import FidelityHandler, InspectHandler
from worker.runtime import LostWorkHook, execute_job
from worker.sensitivity_handler import SensitivityHandler
from worker.sweep_handler import SweepHandler

FANOUT_HANDLERS: dict[str, FanOutHandler] = {
    JobKind.sensitivity.value: SensitivityHandler(),
    JobKind.sweep.value: SweepHandler(),
}
"""Handlers of the kinds whose jobs fan out, by job kind."""


def _model_invalid(session: Session, params: dict[str, Any], reason: str) -> None:
    """An inspection whose pool process was lost (time limit, crash): the model is invalid, with the reason
    (what InspectHandler.on_failure does when the inspection fails in its own process)."""
    row = session.get(Model, uuid.UUID(str(params["model_id"])))
    if row is not None:
        row.status = ModelStatus.invalid.value
        row.error = reason


LOST_WORK_HOOKS: dict[str, LostWorkHook] = {JobKind.inspect.value: _model_invalid}
"""Rows to change, by job kind, when a job fails because its pool process was lost (worker.celery_app)."""


def _fanout_handler(job_id: str) -> FanOutHandler | None:
    with session_factory(get_settings().resolved_database_url)() as session:
        job = session.get(Job, uuid.UUID(job_id))
        return None if job is None else FANOUT_HANDLERS.get(job.kind)


@app.task(name=TASK_NAMES[JobKind.inspect])
def inspect_model(job_id: str) -> str:
    return execute_job(job_id, InspectHandler())


@app.task(name=TASK_NAMES[JobKind.fidelity])
def fidelity(job_id: str) -> str:
    return execute_job(job_id, FidelityHandler())


@app.task(name=TASK_NAMES[JobKind.sensitivity])
def sensitivity(job_id: str) -> str:
    return execute_fanout_job(job_id, FANOUT_HANDLERS[JobKind.sensitivity.value])


@app.task(name=TASK_NAMES[JobKind.sweep])
def sweep(job_id: str) -> str:
    return execute_fanout_job(job_id, FANOUT_HANDLERS[JobKind.sweep.value])


@app.task(name=CHUNK_TASK)
def chunk(job_id: str, index: int) -> str:
    handler = _fanout_handler(job_id)
    return "skipped" if handler is None else execute_chunk(job_id, index, handler)


@app.task(name=MERGE_TASK)
def merge(job_id: str) -> str:
    handler = _fanout_handler(job_id)
    return "skipped" if handler is None else execute_merge(job_id, handler)
