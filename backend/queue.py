"""Enqueue jobs by task name. The API never imports worker code."""

from __future__ import annotations

import uuid
from functools import lru_cache

from celery import Celery

from backend.celery_config import celery_config
from backend.contracts import TASK_NAMES, JobKind
from backend.settings import Settings


@lru_cache(maxsize=4)
def _client(settings: Settings) -> Celery:
    app = Celery("kneeboard-api")
    app.conf.update(celery_config(settings))
    return app


def enqueue_job(settings: Settings, kind: JobKind, job_id: uuid.UUID) -> None:
    """Send the job's task. Call only after the job row is committed, so a fast worker finds it."""
    _client(settings).send_task(TASK_NAMES[kind], args=[str(job_id)], queue=settings.queue_name)
