"""One sample's entry of a job's stored task predictions (`fidelity.task_samples`), read with JSON paths
(PostgreSQL ``#>``, SQLite ``json_extract``) so a request reads that sample, not the whole document."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_TASK_SAMPLES
from backend.db.models import JobResult
from backend.errors import NotFound

DOCUMENT_KEYS: dict[str, tuple[str, ...]] = {
    "detection": ("image_size",),
    "segmentation": ("image_size", "ignore_index"),
    "image": ("output", "data_range"),
    "signal": ("sample_rate",),
}
"""Keys of the whole document a task's sample answer needs beside the sample's own entry."""
_READ = ("image_size", "ignore_index", "output", "data_range", "sample_rate")


def task_sample_entry(session: Session, job_id: uuid.UUID, index: int) -> dict[str, Any]:
    """{"task", its DOCUMENT_KEYS, and the sample's own keys}; NotFound for a job that kept none and for a
    sample past the kept ones (saying how many are)."""
    payload = JobResult.payload
    found = (JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_TASK_SAMPLES)
    row = session.execute(
        select(payload[("task",)], payload[("n_samples",)], *(payload[(k,)] for k in _READ)).where(*found)
    ).one_or_none()
    if row is None:
        raise NotFound(
            f"job {job_id} kept no task predictions: its task is not one the inspector draws (detection, "
            "ctc, segmentation, image, signal), or it ran before they were kept"
        )
    task, kept, *document = row
    if index >= int(kept):
        raise NotFound(
            f"no task predictions for sample {index}: job {job_id} kept them for its first {int(kept)} samples"
        )
    entry: dict[str, Any] = session.execute(select(payload[("samples", index)]).where(*found)).scalar_one()
    extra = {k: v for k, v in zip(_READ, document, strict=True) if k in DOCUMENT_KEYS.get(task, ())}
    return {"task": task, **extra, **entry}
