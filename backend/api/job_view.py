"""A job as the API shows it (JobOut): shared by the job routes and the routes that launch jobs of their own
kind (recovery), so that neither route module imports the other."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from sqlalchemy.orm import object_session

from backend.api.schemas import JobOut
from backend.db.models import Job, JobStatus, User
from backend.db.models.base import utcnow
from backend.progress_eta import eta_seconds


def job_out(job: Job, usernames: Mapping[uuid.UUID, str] | None = None) -> JobOut:
    """The job as the API shows it; the launcher's username from `usernames` (a list fetches them at once),
    else looked up."""
    out = JobOut.model_validate(job)
    if job.created_by is not None:
        if usernames is not None:
            out.created_by_name = usernames.get(job.created_by)
        elif (session := object_session(job)) is not None:
            user = session.get(User, job.created_by)
            out.created_by_name = user.username if user else None
    if out.started_at and out.finished_at:
        out.duration_s = (out.finished_at - out.started_at).total_seconds()
    if out.status == JobStatus.running.value:
        out.eta_s = eta_seconds(out.progress, out.started_at, utcnow())
    return out
