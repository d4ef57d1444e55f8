"""State transitions of a job row, each one a single conditional UPDATE (compare-and-set).

The job row is the source of truth; the queue only delivers ids. Every transition names the state it
expects, so a duplicate delivery, a late zombie worker or two reapers racing cannot corrupt a job:

    queued ──claim──> running ──finish──> succeeded | failed
       ^                 │ ├─fail_held_by─> failed (its pool process was killed at the time limit, or died)
       │                 │ └──cancel──> cancelled (the worker notices at its next progress report)
       └──── reap ───────┘ (no heartbeat for heartbeat_timeout_s; after max_attempts: failed)

The worker's transitions (claim, heartbeat) are retried while the database is unreachable
(backend.db_retry); `finish` is not, because it commits rows its caller added: the caller retries the
whole transaction (worker.runtime.write_and_finish).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session

from backend.db.models import Job, JobChunk, JobStatus, utcnow
from backend.db_retry import retried

ACTIVE = (JobStatus.queued.value, JobStatus.running.value)


def changed(result: Any) -> int:
    """Rows an UPDATE changed (Result.rowcount, which the typed Result does not declare)."""
    return int(result.rowcount)


@dataclass(frozen=True)
class Claim:
    job_id: uuid.UUID
    token: str
    attempt: int


@retried
def claim(session: Session, job_id: uuid.UUID, worker_id: str) -> Claim | None:
    """queued -> running for this worker. None when the job is not queued (done, cancelled, taken, deleted)."""
    token = str(uuid.uuid4())
    now = utcnow()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.queued.value)
        .values(
            status=JobStatus.running.value,
            worker_id=worker_id,
            attempt_token=token,
            attempts=Job.attempts + 1,
            started_at=now,
            heartbeat_at=now,
            progress=0.0,
            error=None,
        )
    )
    session.commit()
    if result.rowcount != 1:  # type: ignore[attr-defined]
        return None
    attempt = session.execute(select(Job.attempts).where(Job.id == job_id)).scalar_one()
    return Claim(job_id=job_id, token=token, attempt=attempt)


def _owned(c: Claim) -> list[ColumnElement[bool]]:
    return [Job.id == c.job_id, Job.attempt_token == c.token, Job.status == JobStatus.running.value]


@retried
def heartbeat(session: Session, c: Claim, progress: float | None = None, message: str | None = None) -> bool:
    """Record that the claim's worker is alive (and its progress). False when the job is no longer ours:
    cancelled by a user, or reaped after we were presumed dead."""
    values: dict[str, object] = {"heartbeat_at": utcnow()}
    if progress is not None:
        values["progress"] = max(0.0, min(1.0, progress))
    if message is not None:
        values["progress_message"] = message
    result = session.execute(update(Job).where(*_owned(c)).values(**values))
    session.commit()
    return result.rowcount == 1  # type: ignore[attr-defined]


def finish(session: Session, c: Claim, status: JobStatus, error: str | None = None) -> bool:
    """running -> succeeded/failed, only if the claim still owns the job. The caller's session may hold the
    job's result rows: they commit together with the status, or not at all."""
    values: dict[str, object] = {"status": status.value, "finished_at": utcnow(), "error": error}
    if status == JobStatus.succeeded:
        values |= {"progress": 1.0, "progress_message": "done"}
    result = session.execute(update(Job).where(*_owned(c)).values(**values))
    if result.rowcount != 1:  # type: ignore[attr-defined]
        session.rollback()
        return False
    session.commit()
    return True


def fail_held_by(session: Session, job_id: uuid.UUID, worker_id: str, error: str) -> bool:
    """running -> failed, only while `worker_id` holds a claim on the job. For a worker's main process whose
    pool process was killed (time limit) or died (a crash) holding the job: it never learnt the claim's
    token, but the holder's id names that very process. The caller's session may hold rows to change with
    the failure (e.g. the model an inspection failed on): they commit together, or not at all. False when
    the process held nothing (it finished, or was reaped and the job taken by another)."""
    result = session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.status == JobStatus.running.value,
            Job.worker_id == worker_id,
            Job.attempt_token.is_not(None),
        )
        .values(status=JobStatus.failed.value, finished_at=utcnow(), error=error)
    )
    if changed(result) != 1:
        session.rollback()
        return False
    session.commit()
    return True


def cancel(session: Session, job_id: uuid.UUID) -> bool:
    """queued/running -> cancelled. A running worker stops at its next progress report; chunks that no
    worker has taken yet are cancelled with the job."""
    now = utcnow()
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status.in_(ACTIVE))
        .values(status=JobStatus.cancelled.value, finished_at=now, progress_message="cancelled by user")
    )
    if changed(result) == 1:
        cancel_untaken_chunks(session, job_id, "the job was cancelled", now)
    session.commit()
    return changed(result) == 1


def cancel_untaken_chunks(session: Session, job_id: uuid.UUID, why: str, now: datetime) -> None:
    """Chunks of a job that stopped (failed, cancelled) which no worker has taken: cancelled, so that no
    chunk stays "queued" for ever (a message for one of them is skipped by claim_chunk anyway)."""
    session.execute(
        update(JobChunk)
        .where(JobChunk.job_id == job_id, JobChunk.status == JobStatus.queued.value)
        .values(status=JobStatus.cancelled.value, finished_at=now, error=why)
    )


@dataclass(frozen=True)
class ReapOutcome:
    requeued: list[tuple[uuid.UUID, str]]  # (job id, kind) to send to the queue again
    failed: list[uuid.UUID]


def reap_lost_jobs(
    session: Session, heartbeat_timeout_s: float, max_attempts: int, now: datetime | None = None
) -> ReapOutcome:
    """Running jobs whose heartbeat stopped: back to the queue, or failed once max_attempts were used.
    Jobs that fanned out into chunks are watched chunk by chunk instead (chunk_reaping.reap_lost_chunks)."""
    now = now or utcnow()
    cutoff = now - timedelta(seconds=heartbeat_timeout_s)
    stale = session.execute(
        select(Job.id, Job.kind, Job.attempts, Job.attempt_token, Job.worker_id).where(
            Job.status == JobStatus.running.value, Job.heartbeat_at < cutoff, Job.chunks_total.is_(None)
        )
    ).all()
    requeued: list[tuple[uuid.UUID, str]] = []
    failed: list[uuid.UUID] = []
    for job_id, kind, attempts, token, worker in stale:
        lost = f"worker {worker} stopped sending heartbeats for more than {heartbeat_timeout_s:g} s (killed or crashed)"
        guard = [Job.id == job_id, Job.status == JobStatus.running.value, Job.attempt_token == token]
        if attempts < max_attempts:
            values: dict[str, object] = {
                "status": JobStatus.queued.value,
                "enqueued_at": now,
                "attempt_token": None,
                "worker_id": None,
                "progress": 0.0,
                "progress_message": f"{lost}; queued again (attempt {attempts + 1} of {max_attempts})",
            }
        else:
            values = {
                "status": JobStatus.failed.value,
                "finished_at": now,
                "error": f"{lost}; gave up after {attempts} attempt(s). Retry the job; if it fails again, "
                "the worker may be running out of memory on this model.",
            }
        if session.execute(update(Job).where(*guard).values(**values)).rowcount == 1:  # type: ignore[attr-defined]
            (requeued.append((job_id, kind)) if attempts < max_attempts else failed.append(job_id))
    session.commit()
    return ReapOutcome(requeued=requeued, failed=failed)


def mark_enqueued(session: Session, job_id: uuid.UUID) -> None:
    session.execute(update(Job).where(Job.id == job_id).values(enqueued_at=utcnow()))
    session.commit()


def resend_due(
    created_at: datetime | None,
    sent_at: datetime,
    now: datetime,
    resend_after_s: float,
    resend_max_s: float | None,
) -> bool:
    """Whether work still queued since its message was sent at `sent_at` gets the message again: after
    resend_after_s, then after waits that double with each re-send (the wait is the time the work had
    already been queued when it was last sent, so a job queued behind hours of work on a busy pool gets
    a handful of duplicates, not one per round), capped at resend_max_s."""
    waited_before = (sent_at - created_at).total_seconds() if created_at is not None else 0.0
    wait = max(resend_after_s, waited_before)
    if resend_max_s is not None:
        wait = min(wait, max(resend_max_s, resend_after_s))
    return (now - sent_at).total_seconds() >= wait


def stale_queued_jobs(
    session: Session,
    resend_after_s: float,
    now: datetime | None = None,
    resend_max_s: float | None = None,
    sent_before: datetime | None = None,
) -> list[tuple[uuid.UUID, str]]:
    """Queued jobs whose message may have been lost: sent longer ago than the backoff of `resend_due`
    allows, or (`sent_before`: the broker lost its messages then) sent before that moment. Each is claimed
    for re-sending by moving its enqueued_at, so concurrent reapers send it once."""
    now = now or utcnow()
    cutoff = sent_before or now - timedelta(seconds=resend_after_s)
    stale = session.execute(
        select(Job.id, Job.kind, Job.enqueued_at, Job.created_at).where(
            Job.status == JobStatus.queued.value, Job.enqueued_at < cutoff
        )
    ).all()
    taken = []
    for job_id, kind, sent_at, created_at in stale:
        if sent_at is None:
            continue
        if sent_before is None and not resend_due(created_at, sent_at, now, resend_after_s, resend_max_s):
            continue
        guard = [Job.id == job_id, Job.status == JobStatus.queued.value, Job.enqueued_at == sent_at]
        if changed(session.execute(update(Job).where(*guard).values(enqueued_at=now))) == 1:
            taken.append((job_id, kind))
    session.commit()
    return taken


def run_reaper_once(
    session_maker: Callable[[], Session],
    heartbeat_timeout_s: float,
    max_attempts: int,
    enqueue: Callable[[uuid.UUID, str], None],
    resend_after_s: float | None = None,
    resend_max_s: float | None = None,
    sent_before: datetime | None = None,
) -> ReapOutcome:
    with session_maker() as session:
        outcome = reap_lost_jobs(session, heartbeat_timeout_s, max_attempts)
        resend = (
            stale_queued_jobs(session, resend_after_s, resend_max_s=resend_max_s, sent_before=sent_before)
            if resend_after_s
            else []
        )
    to_send = outcome.requeued + resend
    for sent, (job_id, kind) in enumerate(to_send):
        try:
            enqueue(job_id, kind)
        except Exception:
            with session_maker() as session:
                mark_unsent(session, [job for job, _kind in to_send[sent:]])
            raise
    return ReapOutcome(requeued=to_send, failed=outcome.failed)


def mark_unsent(session: Session, job_ids: list[uuid.UUID]) -> None:
    """Queued jobs marked as sent whose message could not be sent (the broker is down): their enqueued_at
    goes back to their creation, so the next reaper round tries again (and the re-send backoff starts over)
    instead of waiting as if the message had gone out."""
    if job_ids:
        session.execute(
            update(Job)
            .where(Job.id.in_(job_ids), Job.status == JobStatus.queued.value)
            .values(enqueued_at=Job.created_at)
        )
        session.commit()
