"""Celery tasks: one per job kind, registered under the names the API sends (backend.contracts), plus the
chunk and merge tasks of jobs that fan out over the worker pool.

A task whose database or broker stays unreachable past the retries (worker.runtime.ServiceUnavailable) puts
its message back on the queue instead of letting Celery acknowledge it away: the job is not at fault, and
the next delivery claims it (or skips it, when the claim had gone through; then the reaper takes the job
back once its heartbeat stops).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable
from typing import ParamSpec

from celery.exceptions import Reject
from sqlalchemy.orm import Session

from backend.contracts import CHUNK_TASK, MERGE_TASK, TASK_NAMES, JobKind
from backend.db.models import Job
from backend.db.session import session_factory
from backend.db_retry import in_transaction
from backend.settings import get_settings
from worker.celery_app import app
from worker.fanout import FanOutHandler, execute_chunk, execute_fanout_job, execute_merge
from worker.jobs.fidelity import FidelityHandler
from worker.jobs.inspect import InspectHandler
from worker.jobs.recovery import RecoveryHandler
from worker.jobs.sensitivity import SensitivityHandler
from worker.jobs.sweep import SweepHandler
from worker.lost_work import LOST_WORK_HOOKS
from worker.runtime import execute_job, service_error

FANOUT_HANDLERS: dict[str, FanOutHandler] = {
    JobKind.sensitivity.value: SensitivityHandler(),
    JobKind.sweep.value: SweepHandler(),
}
"""Handlers of the kinds whose jobs fan out, by job kind."""


__all__ = ["FANOUT_HANDLERS", "LOST_WORK_HOOKS"]

log = logging.getLogger(__name__)
P = ParamSpec("P")


def requeue_on_outage(body: Callable[P, str]) -> Callable[P, str]:
    """Run a task body; a database or broker outage it could not ride out sends the message back to the
    queue (Reject with requeue; the tasks are acks_late) rather than failing the task."""

    @functools.wraps(body)
    def task(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return body(*args, **kwargs)
        except Exception as exc:
            if not service_error(exc):
                raise
            log.warning(
                "%s%s: database or broker unavailable, message back to the queue", body.__name__, args
            )
            raise Reject(f"{type(exc).__name__}: {exc}", requeue=True) from exc

    return task


def _fanout_handler(job_id: str) -> FanOutHandler | None:
    def kind(session: Session) -> str | None:
        job = session.get(Job, uuid.UUID(job_id))
        return None if job is None else job.kind

    found = in_transaction(
        session_factory(get_settings().resolved_database_url), kind, f"loading job {job_id}"
    )
    return None if found is None else FANOUT_HANDLERS.get(found)


@app.task(name=TASK_NAMES[JobKind.inspect])
@requeue_on_outage
def inspect_model(job_id: str) -> str:
    return execute_job(job_id, InspectHandler())


@app.task(name=TASK_NAMES[JobKind.fidelity])
@requeue_on_outage
def fidelity(job_id: str) -> str:
    return execute_job(job_id, FidelityHandler())


@app.task(name=TASK_NAMES[JobKind.sensitivity])
@requeue_on_outage
def sensitivity(job_id: str) -> str:
    return execute_fanout_job(job_id, FANOUT_HANDLERS[JobKind.sensitivity.value])


@app.task(name=TASK_NAMES[JobKind.sweep])
@requeue_on_outage
def sweep(job_id: str) -> str:
    return execute_fanout_job(job_id, FANOUT_HANDLERS[JobKind.sweep.value])


@app.task(name=TASK_NAMES[JobKind.recovery])
@requeue_on_outage
def recovery(job_id: str) -> str:
    return execute_job(job_id, RecoveryHandler())


@app.task(name=CHUNK_TASK)
@requeue_on_outage
def chunk(job_id: str, index: int) -> str:
    handler = _fanout_handler(job_id)
    return "skipped" if handler is None else execute_chunk(job_id, index, handler)


@app.task(name=MERGE_TASK)
@requeue_on_outage
def merge(job_id: str) -> str:
    handler = _fanout_handler(job_id)
    return "skipped" if handler is None else execute_merge(job_id, handler)
