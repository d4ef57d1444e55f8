"""Fan-out jobs on the real Postgres database and on a SQLite file (the embedded mode): chunks, their claims and heartbeats, the single merge, and
the reaper's handling of chunks whose worker died."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from backend import chunk_lifecycle as cl
from backend import chunk_reaping as cr
from backend import job_lifecycle as jl
from backend.db.models import Job, JobChunk, JobStatus, utcnow
from backend.db.session import session_factory
from tests.support.jobs import queued_job


@pytest.fixture
def session(session_on_each_database: Session) -> Session:
    """Every test here runs on Postgres and on SQLite."""
    return session_on_each_database


def _fanned_out(session: Session, n: int = 3) -> tuple[Job, jl.Claim]:
    job = queued_job(session, "sensitivity")
    claim = jl.claim(session, job.id, "planner")
    assert claim is not None
    assert cl.fan_out(session, claim, [{"layers": [f"l{i}"]} for i in range(n)])
    return job, claim


def _job(session: Session, job: Job) -> Job:
    session.expire_all()
    return session.get_one(Job, job.id)


def _chunk(session: Session, job: Job, index: int) -> JobChunk:
    session.expire_all()
    return session.execute(
        select(JobChunk).where(JobChunk.job_id == job.id, JobChunk.index == index)
    ).scalar_one()


def test_fan_out_releases_the_planner_and_queues_every_chunk(session: Session) -> None:
    job, claim = _fanned_out(session, 3)
    row = _job(session, job)
    assert row.status == "running" and row.chunks_total == 3 and row.attempt_token is None
    assert [c.status for c in session.scalars(select(JobChunk).order_by(JobChunk.index))] == ["queued"] * 3
    assert cl.chunk_spec(session, job.id, 2) == {"layers": ["l2"]}
    # The planner's claim is spent: a second fan-out (a duplicate planner) writes nothing.
    assert not cl.fan_out(session, claim, [{"layers": []}])
    assert session.scalar(
        select(JobChunk.id).where(JobChunk.job_id == job.id).order_by(JobChunk.id.desc())
    ) == (_chunk(session, job, 2).id)


def test_each_chunk_is_claimed_once_and_counts_towards_progress(session: Session) -> None:
    job, _ = _fanned_out(session, 2)
    first = cl.claim_chunk(session, job.id, 0, "w1")
    assert first is not None and cl.claim_chunk(session, job.id, 0, "w2") is None  # duplicate message
    assert cl.finish_chunk(session, first, {"rows": [1]})
    row = _job(session, job)
    assert row.progress == 0.5 and row.progress_message == "1 of 2 chunks done"
    assert cl.claim_merge(session, job.id, "w1") is None  # chunk 1 not done yet
    assert not cl.finish_chunk(session, first, {"rows": [2]})  # a finished chunk cannot be finished again
    assert _chunk(session, job, 0).result == {"rows": [1]}


def test_exactly_one_of_many_concurrent_mergers_wins(each_db_url: str, session: Session) -> None:
    job, _ = _fanned_out(session, 2)
    for index in (0, 1):
        c = cl.claim_chunk(session, job.id, index, "w")
        assert c is not None and cl.finish_chunk(session, c, {"index": index})
    wins: list[jl.Claim] = []
    barrier = threading.Barrier(8)

    def merge(i: int) -> None:
        with session_factory(each_db_url)() as s:
            barrier.wait()
            claim = cl.claim_merge(s, job.id, f"m{i}")
            if claim is not None:
                wins.append(claim)

    threads = [threading.Thread(target=merge, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert cl.chunk_results(session, job.id) == [
        ({"layers": ["l0"]}, {"index": 0}),
        ({"layers": ["l1"]}, {"index": 1}),
    ]
    assert jl.finish(session, wins[0], JobStatus.succeeded)
    assert _job(session, job).status == "succeeded"


def test_a_failed_chunk_fails_the_job_and_stops_the_others(session: Session) -> None:
    job, _ = _fanned_out(session, 3)
    a = cl.claim_chunk(session, job.id, 0, "w1")
    b = cl.claim_chunk(session, job.id, 1, "w2")
    assert a is not None and b is not None
    assert cl.fail_chunk(session, a, "chunk 0: the model does not run")
    row = _job(session, job)
    assert row.status == "failed" and row.error == "chunk 0: the model does not run"
    assert not cl.chunk_heartbeat(session, b)  # the other worker notices and stops
    assert not cl.finish_chunk(session, b, {})
    assert cl.claim_chunk(session, job.id, 2, "w3") is None  # nothing more starts


def test_cancelling_the_job_stops_its_chunks(session: Session) -> None:
    job, _ = _fanned_out(session, 2)
    c = cl.claim_chunk(session, job.id, 0, "w1")
    assert c is not None and cl.chunk_heartbeat(session, c)
    assert jl.cancel(session, job.id)
    assert not cl.chunk_heartbeat(session, c)
    assert cl.claim_chunk(session, job.id, 1, "w2") is None


def _age_chunk(session: Session, job: Job, index: int, seconds: float) -> None:
    session.execute(
        update(JobChunk)
        .where(JobChunk.job_id == job.id, JobChunk.index == index)
        .values(heartbeat_at=utcnow() - timedelta(seconds=seconds))
    )
    session.commit()


def test_a_chunk_whose_worker_died_is_queued_again_then_fails_the_job(session: Session) -> None:
    job, _ = _fanned_out(session, 2)
    dead = cl.claim_chunk(session, job.id, 1, "killed")
    assert dead is not None
    _age_chunk(session, job, 1, 120)
    # The job-level reaper leaves fanned-out jobs alone, however old their own heartbeat.
    session.execute(
        update(Job).where(Job.id == job.id).values(heartbeat_at=utcnow() - timedelta(seconds=600))
    )
    session.commit()
    assert jl.reap_lost_jobs(session, 30, 2).requeued == []

    outcome = cr.reap_lost_chunks(session, heartbeat_timeout_s=30, max_attempts=2)
    assert outcome.resend_chunks == [(job.id, 1, None)] and outcome.failed_jobs == []
    assert _chunk(session, job, 1).status == "queued" and "killed" in (_chunk(session, job, 1).error or "")
    assert not cl.finish_chunk(session, dead, {"late": True})  # the zombie's result is refused

    again = cl.claim_chunk(session, job.id, 1, "w2")
    assert again is not None and again.attempt == 2
    _age_chunk(session, job, 1, 120)
    outcome = cr.reap_lost_chunks(session, heartbeat_timeout_s=30, max_attempts=2)
    assert outcome.failed_jobs == [job.id]
    row = _job(session, job)
    assert row.status == "failed" and "chunk 1" in (row.error or "") and "2 attempt" in (row.error or "")


def test_a_queued_chunk_whose_message_was_lost_is_sent_again_once(session: Session) -> None:
    job, _ = _fanned_out(session, 1)
    assert cr.reap_lost_chunks(session, 30, 3, resend_after_s=60).resend_chunks == []
    session.execute(update(JobChunk).values(enqueued_at=utcnow() - timedelta(seconds=300)))
    session.commit()
    assert cr.reap_lost_chunks(session, 30, 3, resend_after_s=60).resend_chunks == [(job.id, 0, None)]
    assert cr.reap_lost_chunks(session, 30, 3, resend_after_s=60).resend_chunks == []


def test_a_merge_that_never_finished_is_released_and_sent_again(session: Session) -> None:
    job, _ = _fanned_out(session, 1)
    c = cl.claim_chunk(session, job.id, 0, "w1")
    assert c is not None and cl.finish_chunk(session, c, {})
    merger = cl.claim_merge(session, job.id, "killed-while-merging")
    assert merger is not None
    assert cr.reap_lost_chunks(session, 30, 3).resend_merges == []  # fresh heartbeat: still merging
    session.execute(
        update(Job).where(Job.id == job.id).values(heartbeat_at=utcnow() - timedelta(seconds=120))
    )
    session.commit()
    assert cr.reap_lost_chunks(session, 30, 3).resend_merges == [job.id]
    assert not jl.finish(session, merger, JobStatus.succeeded)  # the lost merger's claim is void
    assert cl.claim_merge(session, job.id, "w2") is not None


def test_a_chunk_no_worker_takes_fails_its_job_with_the_queue_named(session: Session) -> None:
    job, _ = _fanned_out(session, 1)
    session.execute(update(JobChunk).values(spec={"queue": "kneeboard.device.rpi5"}))
    session.commit()
    assert cr.reap_lost_chunks(session, 30, 3, wait_s=60).failed_jobs == []  # just created
    session.execute(update(JobChunk).values(created_at=utcnow() - timedelta(seconds=120)))
    session.commit()
    assert cr.reap_lost_chunks(session, 30, 3, wait_s=60).failed_jobs == [job.id]
    row = _job(session, job)
    assert row.status == "failed" and "kneeboard.device.rpi5" in (row.error or "")
    assert "--device" in (row.error or "")


def test_a_failed_job_cancels_its_untaken_chunks(session: Session) -> None:
    job, _ = _fanned_out(session, 3)
    running = cl.claim_chunk(session, job.id, 0, "w1")
    assert running is not None and cl.fail_chunk(session, running, "chunk 0: bad input")
    assert _job(session, job).status == "failed"
    assert _chunk(session, job, 0).status == "failed"
    for index in (1, 2):
        untaken = _chunk(session, job, index)
        assert untaken.status == "cancelled" and "bad input" in (untaken.error or ""), untaken.error
        assert untaken.finished_at is not None


def test_a_cancelled_job_cancels_its_untaken_chunks_but_not_finished_ones(session: Session) -> None:
    job, _ = _fanned_out(session, 2)
    done = cl.claim_chunk(session, job.id, 0, "w1")
    assert done is not None and cl.finish_chunk(session, done, {"ok": 1})
    assert jl.cancel(session, job.id)
    assert [_chunk(session, job, i).status for i in (0, 1)] == ["succeeded", "cancelled"]


def test_chunk_resends_back_off_and_a_lost_broker_resends_at_once(session: Session) -> None:
    job, _ = _fanned_out(session, 1)
    created = utcnow() - timedelta(seconds=1000)
    session.execute(update(JobChunk).values(created_at=created, enqueued_at=created + timedelta(seconds=400)))
    session.commit()
    sent = created + timedelta(seconds=400)
    # Queued 400 s when last sent: the next re-send waits 400 s (not 60), capped by resend_max_s.
    at_300 = sent + timedelta(seconds=300)
    assert cr.reap_lost_chunks(session, 30, 3, resend_after_s=60, now=at_300).resend_chunks == []
    capped = cr.reap_lost_chunks(session, 30, 3, resend_after_s=60, now=at_300, resend_max_s=200)
    assert capped.resend_chunks == [(job.id, 0, None)]
    # The broker lost its messages after that re-send: everything sent before is sent again at once.
    lost_at = at_300 + timedelta(seconds=1)
    assert cr.reap_lost_chunks(session, 30, 3, resend_after_s=60, now=lost_at).resend_chunks == []
    again = cr.reap_lost_chunks(session, 30, 3, resend_after_s=60, now=lost_at, sent_before=lost_at)
    assert again.resend_chunks == [(job.id, 0, None)]


def test_chunks_whose_resend_failed_are_due_again(session: Session) -> None:
    job, _ = _fanned_out(session, 2)
    long_ago = utcnow() - timedelta(seconds=120)
    session.execute(update(JobChunk).values(created_at=long_ago, enqueued_at=long_ago))
    session.commit()
    marked = cr.reap_lost_chunks(session, 30, 3, resend_after_s=60).resend_chunks
    assert sorted(index for _job, index, _queue in marked) == [0, 1]
    cr.mark_chunks_unsent(session, [(job.id, 1)])  # chunk 0 went out, then the broker refused chunk 1
    unsent, out = _chunk(session, job, 1), _chunk(session, job, 0)
    assert unsent.enqueued_at == unsent.created_at and out.enqueued_at != out.created_at
    later = utcnow() + timedelta(seconds=1)  # chunk 0 was just sent; chunk 1 was not
    again = cr.reap_lost_chunks(session, 30, 3, resend_after_s=60, now=later).resend_chunks
    assert again == [(job.id, 1, None)]
