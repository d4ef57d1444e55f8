"""Celery tasks: one per job kind, registered under the names the API sends (backend.contracts)."""

from __future__ import annotations

from backend.contracts import TASK_NAMES, JobKind
from worker.celery_app import app
from worker.handlers import FidelityHandler, InspectHandler
from worker.runtime import execute_job


@app.task(name=TASK_NAMES[JobKind.inspect])
def inspect_model(job_id: str) -> str:
    return execute_job(job_id, InspectHandler())


@app.task(name=TASK_NAMES[JobKind.fidelity])
def fidelity(job_id: str) -> str:
    return execute_job(job_id, FidelityHandler())
