"""The Celery application of the workers: `celery -A worker.celery_app worker`."""

from __future__ import annotations

from celery import Celery

from backend.celery_config import celery_config
from backend.settings import get_settings

app = Celery("kneeboard", include=["worker.tasks"])
app.conf.update(celery_config(get_settings()))
