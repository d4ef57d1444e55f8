"""One sample's task predictions (issue 30: boxes of both models drawn over the image, transcripts with their
differences marked). The worker stores the first samples' predictions of a task that can show them
(`fidelity.task_samples`, worker/engine/tasks/interface.py `ShowsSamples`); backend/services/task_samples.py
reads one sample's entry."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import TypeAdapter

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.task_samples import TaskSampleOut
from backend.api.routes.lookup import succeeded_job
from backend.api.routes.sample_inspector import png_url
from backend.contracts import JobKind
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.services.task_samples import task_sample_entry

router = APIRouter(tags=["fidelity"])

Index = Annotated[int, Path(ge=0, le=2**31 - 1)]
_SAMPLE = TypeAdapter(TaskSampleOut)


@router.get(
    "/jobs/{job_id}/samples/{index}/task",
    operation_id="getSampleTaskPredictions",
    responses=error_responses(NotFound, Conflict, InvalidRequest),
    summary="One sample's task predictions: a detector's boxes (both models and the truth) or a speech "
    "model's transcripts (both models and the reference); the first samples of the job are kept",
)
def get_sample_task_predictions(
    job_id: uuid.UUID, index: Index, session: SessionDep, caller: CallerDep
) -> TaskSampleOut:
    """404 for a job whose task keeps no predictions (or that ran before they were kept), and for a sample
    past the kept ones (the message says how many are)."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    return task_sample(job_id, index, task_sample_entry(session, job_id, index))


def task_sample(job_id: uuid.UUID, index: int, entry: dict[str, Any]) -> TaskSampleOut:
    """The typed answer for a stored entry (a detection's boxes get the picture they are drawn over)."""
    picture = {"picture": png_url(job_id, index, None)} if entry.get("task") == "detection" else {}
    return _SAMPLE.validate_python({"job_id": job_id, "index": index, **picture, **entry})
