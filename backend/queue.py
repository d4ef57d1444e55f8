"""Enqueue jobs by task name. The API never imports worker code."""

from __future__ import annotations

import uuid
from functools import lru_cache

from celery import Celery

from backend.celery_config import celery_config
from backend.contracts import CHUNK_TASK, MERGE_TASK, TASK_NAMES, JobKind
from backend.settings import Settings


@lru_cache(maxsize=4)
def _client(settings: Settings) -> Celery:
    app = Celery("kneeboard-api")
    app.conf.update(celery_config(settings))
    return app


def enqueue_job(settings: Settings, kind: JobKind, job_id: uuid.UUID) -> None:
    """Send the job's task. Call only after the job row is committed, so a fast worker finds it."""
    _client(settings).send_task(TASK_NAMES[kind], args=[str(job_id)], queue=settings.queue_name)


def enqueue_chunk(settings: Settings, job_id: uuid.UUID, index: int, queue: str | None = None) -> None:
    """Send one chunk of a fan-out job (its row must be committed), to `queue` (a device's) or the pool's."""
    _client(settings).send_task(CHUNK_TASK, args=[str(job_id), index], queue=queue or settings.queue_name)


def enqueue_merge(settings: Settings, job_id: uuid.UUID) -> None:
    _client(settings).send_task(MERGE_TASK, args=[str(job_id)], queue=settings.queue_name)
