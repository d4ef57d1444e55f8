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


def task_sample_entry(session: Session, job_id: uuid.UUID, index: int) -> dict[str, Any]:
    """{"task", "image_size" (detection), and the sample's own keys}; NotFound for a job that kept none and
    for a sample past the kept ones (saying how many are).

    One JSON path when the entry names its task: the column is JSON (text) on Postgres, parsed again by each
    path, and a document of pictures or waveforms can be megabytes (measured on a 9 MB row: 332 ms a sample
    with 8 paths, 194 ms with 3). So the tasks that keep those put their name and what their answer needs in
    each sample's entry (image size, sample rate...); only detection's and CTC's small documents, whose
    entries do not name the task, and a missing sample are read a second time."""
    payload = JobResult.payload
    found = (JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_TASK_SAMPLES)
    entry = session.execute(select(payload[("samples", index)]).where(*found)).scalar_one_or_none()
    if isinstance(entry, dict) and "task" in entry:
        return entry
    row = session.execute(
        select(payload[("task",)], payload[("n_samples",)], payload[("image_size",)]).where(*found)
    ).one_or_none()
    if row is None:
        raise NotFound(
            f"job {job_id} kept no task predictions: its task is not one the inspector draws (detection, "
            "ctc, segmentation, image, signal), or it ran before they were kept"
        )
    task, kept, image_size = row
    if index >= int(kept) or entry is None:
        raise NotFound(
            f"no task predictions for sample {index}: job {job_id} kept them for its first {int(kept)} samples"
        )
    extra = {"image_size": image_size} if task == "detection" else {}
    return {"task": task, **extra, **entry}
