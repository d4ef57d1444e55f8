"""One sample's task predictions (issue 30: boxes of both models drawn over the image, transcripts with their
differences marked, label maps over the image, an image output's pictures and their difference, a signal's
waveforms played as WAV). The worker stores the first samples' predictions of a task that can show them
(`fidelity.task_samples`, worker/engine/tasks/interface.py `ShowsSamples`); backend/services/task_samples.py
reads one sample's entry."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Response
from pydantic import TypeAdapter
from sqlalchemy.orm import Session

from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.result_schemas.task_samples import TaskSampleOut
from backend.api.routes.lookup import succeeded_job
from backend.api.routes.sample_inspector import png_url
from backend.contracts import JobKind
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.services.task_samples import task_sample_entry
from backend.task_views import image_view, segmentation_view, signal_view, wav_bytes, waveforms

router = APIRouter(tags=["fidelity"])

Index = Annotated[int, Path(ge=0, le=2**31 - 1)]
_SAMPLE = TypeAdapter(TaskSampleOut)


@router.get(
    "/jobs/{job_id}/samples/{index}/task",
    operation_id="getSampleTaskPredictions",
    responses=error_responses(NotFound, Conflict, InvalidRequest),
    summary="One sample's task predictions: a detector's boxes (both models and the truth), a speech "
    "model's transcripts (both models and the reference), a segmenter's label maps (both models and the mask), "
    "an image output's pictures (both models and their difference) or a signal's waveforms (both models and "
    "the clean one, as WAV URLs); the first samples of the job are kept",
)
def get_sample_task_predictions(
    job_id: uuid.UUID, index: Index, session: SessionDep, caller: CallerDep
) -> TaskSampleOut:
    """404 for a job whose task keeps no predictions (or that ran before they were kept), and for a sample
    past the kept ones (the message says how many are)."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    return task_sample(job_id, index, task_sample_entry(session, job_id, index))


def task_sample(job_id: uuid.UUID, index: int, entry: dict[str, Any]) -> TaskSampleOut:
    """The typed answer for a stored entry (boxes and label maps get the picture they are drawn over)."""
    task = entry.get("task")
    shown: dict[str, Any] = dict(entry)
    if task in ("detection", "segmentation"):
        shown["picture"] = png_url(job_id, index, None)
    if task == "segmentation":
        shown |= segmentation_view(entry)
    elif task == "image":
        shown |= image_view(entry)
    elif task == "signal":
        audio = f"/api/v1/jobs/{job_id}/samples/{index}/task/audio"
        shown = {"task": task, **signal_view(entry, int(entry["sample_rate"]), audio)}
    return _SAMPLE.validate_python({"job_id": job_id, "index": index, **shown})


@router.get(
    "/jobs/{job_id}/samples/{index}/task/audio/{which}",
    operation_id="getSampleTaskAudio",
    responses={
        **error_responses(NotFound, Conflict, InvalidRequest),
        200: {"content": {"audio/wav": {}}, "description": "16-bit PCM WAV"},
    },
    response_class=Response,
    summary="One kept sample's waveform of a signal job as a 16-bit PCM WAV at the job's sample_rate "
    "(golden, compressed, or the dataset's clean reference)",
)
def get_sample_task_audio(
    job_id: uuid.UUID,
    index: Index,
    which: Literal["golden", "compressed", "clean"],
    session: SessionDep,
    caller: CallerDep,
) -> Response:
    """404 for a job that is not a signal job with kept waveforms, a sample past the kept ones, or `clean`
    without a clean reference. The three WAVs of a sample share one gain (see `task_views.wav_gain`)."""
    succeeded_job(session, job_id, JobKind.fidelity, caller)
    return Response(content=sample_wav(session, job_id, index, which), media_type="audio/wav")


def sample_wav(session: Session, job_id: uuid.UUID, index: int, which: str) -> bytes:
    entry = task_sample_entry(session, job_id, index)
    if entry["task"] != "signal":
        raise NotFound(f"job {job_id} is a {entry['task']} job: only signal jobs keep waveforms to play")
    waves = waveforms(entry)
    if which not in waves:
        raise NotFound(f"job {job_id} has no {which} waveform: its dataset has no 'clean' array")
    return wav_bytes(waves, which, int(entry["sample_rate"]))
