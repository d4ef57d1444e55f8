"""A job created while the broker is unreachable is not failed: it stays queued, and the reaper's re-send
sends it once the broker answers."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from backend import job_lifecycle
from backend.contracts import JobKind
from backend.db.models import Job, utcnow
from backend.services.jobs import dispatch, new_job
from backend.settings import Settings
from tests.support.jobs import new_project


def test_a_job_created_while_the_broker_is_down_waits_queued_for_the_resend(
    session: Session, settings: Settings
) -> None:
    job = new_job(new_project(session).id, JobKind.fidelity, {}, None)
    session.add(job)
    session.commit()
    down = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})  # nothing listens on port 1

    dispatch(session, down, job)

    session.expire_all()
    row = session.get_one(Job, job.id)
    assert row.status == "queued" and row.error is None
    assert "broker is unreachable" in (row.progress_message or "")
    later = utcnow() + timedelta(seconds=31)
    assert job_lifecycle.stale_queued_jobs(session, resend_after_s=30, now=later) == [(job.id, "fidelity")]
