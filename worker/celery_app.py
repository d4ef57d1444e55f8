"""The Celery application of the workers: `celery -A worker.celery_app worker`."""

from __future__ import annotations

from celery import Celery
from celery.signals import worker_process_init

from backend.celery_config import celery_config
from backend.settings import get_settings

app = Celery("kneeboard", include=["worker.tasks"])
app.conf.update(celery_config(get_settings()))


@worker_process_init.connect
def _import_the_engine(**_: object) -> None:
    """Import torch, onnxruntime and the engine when a pool process starts, not inside the first job
    (about a second, which a job that fans out would otherwise pay on every worker)."""
    import worker.engine.compression
    import worker.engine.fidelity
    import worker.engine.loaders
    import worker.engine.sensitivity  # noqa: F401
