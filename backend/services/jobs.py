"""Creating jobs and handing them to the queue."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy.orm import Session

from backend import job_lifecycle
from backend.contracts import JobKind
from backend.db.models import Job, JobStatus, utcnow
from backend.errors import QueueUnavailable
from backend.queue import broker_error, enqueue_job
from backend.settings import Settings

log = logging.getLogger(__name__)


def new_job(
    project_id: uuid.UUID, kind: JobKind, params: dict[str, Any], created_by: uuid.UUID | None
) -> Job:
    return Job(
        id=uuid.uuid4(),
        project_id=project_id,
        created_by=created_by,
        kind=kind.value,
        params=params,
        status=JobStatus.queued.value,
        progress=0.0,
        progress_message="waiting for a worker",
        attempts=0,
    )


def dispatch(session: Session, settings: Settings, job: Job) -> None:
    """Send a committed job to the queue. While the broker is unreachable (a restart, a blip) the job stays
    queued and the API's reaper sends it once the broker answers (backend/reaper.py); any other error in
    sending fails the job with the reason."""
    try:
        job_lifecycle.mark_enqueued(session, job.id)
        enqueue_job(settings, JobKind(job.kind), job.id)
    except Exception as exc:
        if broker_error(exc):
            log.warning("job %s: the broker is unreachable (%s); the reaper will send it", job.id, exc)
            job.progress_message = (
                "waiting for the job queue (the broker is unreachable); sent when it answers"
            )
            session.commit()
            return
        log.exception("could not enqueue job %s", job.id)
        job.status = JobStatus.failed.value
        job.error = f"could not reach the job queue ({exc}); check that the broker is running, then retry"
        job.finished_at = utcnow()
        session.commit()
        raise QueueUnavailable(job.error) from exc
