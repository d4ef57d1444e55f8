"""Job state transitions on the real Postgres database and on a SQLite file (the embedded mode): claims, heartbeats, cancellation, the reaper."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from backend import job_lifecycle as lc
from backend.db.models import Job, JobStatus, utcnow
from backend.db.session import session_factory
from tests.support.jobs import queued_job


@pytest.fixture
def session(session_on_each_database: Session) -> Session:
    """Every test here runs on Postgres and on SQLite."""
    return session_on_each_database


def _status(session: Session, job: Job) -> Job:
    session.expire_all()
    return session.get_one(Job, job.id)


def test_only_one_claim_wins(session: Session) -> None:
    job = queued_job(session)
    first = lc.claim(session, job.id, "w1")
    assert first is not None and first.attempt == 1
    assert lc.claim(session, job.id, "w2") is None, "a duplicate delivery must not run the job twice"
    assert _status(session, job).worker_id == "w1"


def test_finish_by_a_stale_claim_is_ignored(session: Session) -> None:
    job = queued_job(session)
    stale = lc.claim(session, job.id, "w1")
    assert stale is not None
    session.execute(update(Job).where(Job.id == job.id).values(heartbeat_at=utcnow() - timedelta(minutes=10)))
    session.commit()
    outcome = lc.reap_lost_jobs(session, heartbeat_timeout_s=60, max_attempts=2)
    assert outcome.requeued == [(job.id, "fidelity")]
    fresh = lc.claim(session, job.id, "w2")
    assert fresh is not None and fresh.attempt == 2
    assert not lc.finish(session, stale, JobStatus.succeeded), "the zombie worker must not finish the job"
    assert not lc.heartbeat(session, stale)
    assert lc.finish(session, fresh, JobStatus.succeeded)
    assert _status(session, job).status == "succeeded"


def test_reaper_fails_a_job_after_max_attempts_with_a_reason(session: Session) -> None:
    job = queued_job(session)
    assert lc.claim(session, job.id, "w1") is not None
    later = utcnow() + timedelta(seconds=120)
    outcome = lc.reap_lost_jobs(session, heartbeat_timeout_s=60, max_attempts=1, now=later)
    assert outcome.failed == [job.id] and outcome.requeued == []
    row = _status(session, job)
    assert row.status == "failed" and "stopped sending heartbeats" in (row.error or "")


def test_reaper_leaves_live_jobs_alone(session: Session) -> None:
    job = queued_job(session)
    c = lc.claim(session, job.id, "w1")
    assert c is not None and lc.heartbeat(session, c, progress=0.5, message="half")
    outcome = lc.reap_lost_jobs(session, heartbeat_timeout_s=60, max_attempts=2)
    assert outcome.requeued == [] and outcome.failed == []
    row = _status(session, job)
    assert row.status == "running" and row.progress == 0.5 and row.progress_message == "half"


def test_cancel_stops_heartbeats_and_finishing(session: Session) -> None:
    job = queued_job(session)
    c = lc.claim(session, job.id, "w1")
    assert c is not None
    assert lc.cancel(session, job.id)
    assert not lc.heartbeat(session, c), "the worker learns of the cancellation at its next heartbeat"
    assert not lc.finish(session, c, JobStatus.succeeded)
    assert _status(session, job).status == "cancelled"
    assert not lc.cancel(session, job.id)


def test_queued_jobs_waiting_too_long_are_resent_once(session: Session) -> None:
    job = queued_job(session)
    lc.mark_enqueued(session, job.id)
    assert lc.stale_queued_jobs(session, resend_after_s=60) == [], "just sent: leave it"
    later = utcnow() + timedelta(seconds=120)
    assert lc.stale_queued_jobs(session, resend_after_s=60, now=later) == [(job.id, "fidelity")]
    assert lc.stale_queued_jobs(session, resend_after_s=60, now=later) == [], "the resend moved enqueued_at"
    assert lc.claim(session, job.id, "w1") is not None
    much_later = later + timedelta(seconds=600)
    assert lc.stale_queued_jobs(session, resend_after_s=60, now=much_later) == [], (
        "running jobs are not resent"
    )


@pytest.mark.parametrize(
    ("queued_before_send_s", "since_send_s", "cap_s", "due"),
    [
        (0, 29, None, False),  # first send: the base wait (30 s)
        (0, 30, None, True),
        (100, 99, None, False),  # queued 100 s when last sent: wait 100 s
        (100, 100, None, True),
        (10_000, 899, 900, False),  # the cap bounds the wait
        (10_000, 900, 900, True),
    ],
)
def test_resend_waits_double_with_each_resend_up_to_the_cap(
    queued_before_send_s: float, since_send_s: float, cap_s: float | None, due: bool
) -> None:
    created = utcnow()
    sent = created + timedelta(seconds=queued_before_send_s)
    now = sent + timedelta(seconds=since_send_s)
    assert lc.resend_due(created, sent, now, resend_after_s=30, resend_max_s=cap_s) is due


def test_a_job_queued_behind_long_work_gets_few_duplicate_messages(session: Session) -> None:
    """A job that waits an hour on a busy pool is sent again about log2(3600 / 30) times, not every round."""
    job = queued_job(session)
    created = session.get_one(Job, job.id).created_at
    session.execute(update(Job).where(Job.id == job.id).values(enqueued_at=created))
    session.commit()
    resends = 0
    for second in range(0, 3600, 10):  # a reaper round every 10 s
        now = created + timedelta(seconds=second)
        resends += len(lc.stale_queued_jobs(session, resend_after_s=30, now=now, resend_max_s=900))
    assert 5 <= resends <= 8, resends  # at 30, 60, 120, 240, 480, 960 s, then every 900 s (the cap)


def test_a_lost_broker_resends_every_job_queued_before_the_loss(session: Session) -> None:
    job = queued_job(session)
    lc.mark_enqueued(session, job.id)
    lost_at = utcnow() + timedelta(seconds=1)
    assert lc.stale_queued_jobs(session, resend_after_s=60, now=lost_at) == []
    assert lc.stale_queued_jobs(session, resend_after_s=60, now=lost_at, sent_before=lost_at) == [
        (job.id, "fidelity")
    ]


def test_a_resend_the_broker_refused_is_tried_again_next_round(each_db_url: str, session: Session) -> None:
    job = queued_job(session)
    created = session.get_one(Job, job.id).created_at
    session.execute(update(Job).where(Job.id == job.id).values(enqueued_at=created))
    session.commit()
    sent: list[uuid.UUID] = []

    def broker_down(_job_id: uuid.UUID, _kind: str) -> None:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    with pytest.raises(ConnectionError):
        lc.run_reaper_once(session_factory(each_db_url), 60, 2, broker_down, resend_after_s=0.001)
    session.expire_all()
    assert session.get_one(Job, job.id).enqueued_at == created, "not marked as sent"
    lc.run_reaper_once(
        session_factory(each_db_url), 60, 2, lambda j, _k: sent.append(j), resend_after_s=0.001
    )
    assert sent == [job.id]
