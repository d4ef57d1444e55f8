"""Models the product makes (a recovery job's recovered model) are inspected like an upload: the job that
makes one inspects its file (inputs, outputs, layers, MACs and the display graph, as the inspect job does)
and records that inspection as the model's own succeeded inspect job, holding the graph under
RESULT_MODEL_GRAPH. GET /models/{id}/graph then finds it as it finds an upload's, and the graph outlives the
making job (deleting a recovery job keeps the model it made, so the graph must not be one of its results)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from backend.contracts import RESULT_MODEL_GRAPH, JobKind
from backend.db.models import Job, JobResult, JobStatus, Model
from backend.db.models.base import utcnow
from backend.services.jobs import new_job
from worker.engine.types import ModelFormat
from worker.runtime import json_safe


@dataclass(frozen=True)
class MadeInspection:
    """A made model's inspection (the model row's `inspection`) and display graph, and how long they took."""

    inspection: dict[str, Any]
    graph: dict[str, Any]
    seconds: float


def inspect_made_model(path: Path, fmt: ModelFormat) -> MadeInspection:
    """Inspect a model file the product made, exactly as the inspect job inspects an upload."""
    from worker.engine.inspection import inspect_with_graph

    start = time.monotonic()
    inspection, graph = inspect_with_graph(path, fmt)
    return MadeInspection(
        json_safe(inspection.to_dict()), json_safe(graph.to_dict()), time.monotonic() - start
    )


def add_made_model(session: Session, model: Model, made: MadeInspection, made_by: uuid.UUID) -> Job:
    """Add `model` (ready, with its inspection) and its inspect job (succeeded, holding the graph); the job
    is launched by whoever launched `made_by`. Same transaction as the making job's results."""
    maker = session.get(Job, made_by)
    job = new_job(
        model.project_id,
        JobKind.inspect,
        {"model_id": str(model.id)},
        maker.created_by if maker is not None else None,
    )
    finished = utcnow()
    job.status = JobStatus.succeeded.value
    job.progress = 1.0
    job.progress_message = f"inspected by the {maker.kind if maker else ''} job {made_by} that made the model"
    job.started_at = finished - timedelta(seconds=made.seconds)
    job.finished_at = finished
    model.inspection = made.inspection
    model.inspect_job_id = job.id
    session.add_all([job, model])
    session.flush()
    session.add(JobResult(job_id=job.id, key=RESULT_MODEL_GRAPH, payload=made.graph))
    return job
