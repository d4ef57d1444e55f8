"""Jobs that fan out over the worker pool: chunk rows and their compare-and-set transitions.

A fan-out job runs in three steps, each on whichever worker takes the message:

    plan    the job's own task claims the job (job_lifecycle.claim), works out the chunks, and `fan_out`
            writes them and releases the job's claim in one transaction; a chunk message per chunk follows.
    chunk   `claim_chunk` -> heartbeats -> `finish_chunk` (or `fail_chunk`, which fails the job). A chunk
            runs only while its job is running: cancelling the job stops every chunk at its next heartbeat.
    merge   whoever finishes a chunk then tries `claim_merge`: it succeeds for exactly one caller, once
            every chunk has succeeded, and returns an ordinary job Claim, so the merge writes the job's
            results and finishes it with job_lifecycle.finish like a one-piece job.

Lost workers: `reap_lost_chunks` puts a chunk whose heartbeat stopped back in the queue (or fails the job
after max_attempts), re-sends chunk messages that waited too long, and re-sends the merge of a job whose
chunks are all done but whose merge never finished. A killed worker costs only the chunk it was running.
A job that fails cancels its chunks that no worker has taken. The worker's transitions are retried while
the database is unreachable (backend.db_retry): each is one self-contained transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, insert, select, update
from sqlalchemy.orm import Session

from backend.db.models import Job, JobChunk, JobStatus, utcnow
from backend.db_retry import retried
from backend.job_lifecycle import Claim, cancel_untaken_chunks, changed, resend_due


@dataclass(frozen=True)
class ChunkClaim:
    job_id: uuid.UUID
    index: int
    token: str
    attempt: int


def _job_running(job_id: uuid.UUID) -> ColumnElement[bool]:
    return exists().where(Job.id == job_id, Job.status == JobStatus.running.value)


@retried
def fan_out(session: Session, claim: Claim, specs: Sequence[dict[str, Any]]) -> bool:
    """Write the job's chunks (queued) and release the planner's claim, in one transaction. False (and
    nothing written) when the claim no longer owns the job."""
    now = utcnow()
    released = session.execute(
        update(Job)
        .where(
            Job.id == claim.job_id, Job.attempt_token == claim.token, Job.status == JobStatus.running.value
        )
        .values(
            chunks_total=len(specs),
            attempt_token=None,
            heartbeat_at=now,
            progress=0.0,
            progress_message=f"0 of {len(specs)} chunks done",
        )
    )
    if changed(released) != 1:
        session.rollback()
        return False
    session.execute(
        insert(JobChunk),
        [
            {
                "job_id": claim.job_id,
                "index": i,
                "spec": spec,
                "status": JobStatus.queued.value,
                "enqueued_at": now,
            }
            for i, spec in enumerate(specs)
        ],
    )
    session.commit()
    return True


@retried
def claim_chunk(session: Session, job_id: uuid.UUID, index: int, worker_id: str) -> ChunkClaim | None:
    """queued -> running for this worker, while the job runs. None when the chunk is not queued (taken,
    done, or a duplicate message) or its job stopped (cancelled, failed, deleted)."""
    token = str(uuid.uuid4())
    now = utcnow()
    result = session.execute(
        update(JobChunk)
        .where(
            JobChunk.job_id == job_id,
            JobChunk.index == index,
            JobChunk.status == JobStatus.queued.value,
            _job_running(job_id),
        )
        .values(
            status=JobStatus.running.value,
            attempt_token=token,
            attempts=JobChunk.attempts + 1,
            worker_id=worker_id,
            started_at=now,
            heartbeat_at=now,
            error=None,
        )
    )
    session.commit()
    if changed(result) != 1:
        return None
    attempt = session.execute(
        select(JobChunk.attempts).where(JobChunk.job_id == job_id, JobChunk.index == index)
    ).scalar_one()
    return ChunkClaim(job_id=job_id, index=index, token=token, attempt=attempt)


def chunk_spec(session: Session, job_id: uuid.UUID, index: int) -> dict[str, Any]:
    return dict(
        session.execute(
            select(JobChunk.spec).where(JobChunk.job_id == job_id, JobChunk.index == index)
        ).scalar_one()
    )


def _owned(c: ChunkClaim) -> list[ColumnElement[bool]]:
    return [
        JobChunk.job_id == c.job_id,
        JobChunk.index == c.index,
        JobChunk.attempt_token == c.token,
        JobChunk.status == JobStatus.running.value,
        _job_running(c.job_id),
    ]


@retried
def chunk_heartbeat(session: Session, c: ChunkClaim) -> bool:
    """Record that the chunk's worker is alive. False when the chunk is no longer ours or its job stopped."""
    result = session.execute(update(JobChunk).where(*_owned(c)).values(heartbeat_at=utcnow()))
    session.commit()
    return changed(result) == 1


@retried
def finish_chunk(session: Session, c: ChunkClaim, result: dict[str, Any]) -> bool:
    """running -> succeeded with its result; the job's progress counts the chunks done. False when the
    chunk was taken from us (reaped) or the job stopped: then nothing is written."""
    now = utcnow()
    done = session.execute(
        update(JobChunk)
        .where(*_owned(c))
        .values(status=JobStatus.succeeded.value, result=result, finished_at=now, heartbeat_at=now)
    )
    if changed(done) != 1:
        session.rollback()
        return False
    total, succeeded = chunk_counts(session, c.job_id)
    session.execute(
        update(Job)
        .where(Job.id == c.job_id, Job.status == JobStatus.running.value)
        .values(
            heartbeat_at=now,
            progress=succeeded / max(total, 1),
            progress_message=f"{succeeded} of {total} chunks done",
        )
    )
    session.commit()
    return True


def chunk_counts(session: Session, job_id: uuid.UUID) -> tuple[int, int]:
    """(chunks, chunks succeeded) of a job."""
    row = session.execute(
        select(func.count(), func.count().filter(JobChunk.status == JobStatus.succeeded.value)).where(
            JobChunk.job_id == job_id
        )
    ).one()
    return int(row[0]), int(row[1])


@retried
def fail_chunk(session: Session, c: ChunkClaim, error: str) -> bool:
    """The chunk failed for a reason that another attempt would not change (bad input, a model that does
    not run): the chunk and its job fail with that reason. False when the chunk was no longer ours."""
    now = utcnow()
    failed = session.execute(
        update(JobChunk).where(*_owned(c)).values(status=JobStatus.failed.value, error=error, finished_at=now)
    )
    if changed(failed) != 1:
        session.rollback()
        return False
    _fail_job(session, c.job_id, error, now)
    session.commit()
    return True


def fail_chunks_held_by(session: Session, job_id: uuid.UUID, worker_id: str, error: str) -> bool:
    """A running chunk of the job held by `worker_id` fails, and its job with it ("chunk <i>: <error>"):
    for a worker's main process whose pool process was killed (time limit) or died holding the chunk; the
    holder's id names that process. False when it held no running chunk of the job (or the job stopped)."""
    held = session.execute(
        select(JobChunk.index).where(
            JobChunk.job_id == job_id,
            JobChunk.status == JobStatus.running.value,
            JobChunk.worker_id == worker_id,
        )
    ).scalars()
    now = utcnow()
    for index in held.all():
        failed = session.execute(
            update(JobChunk)
            .where(
                JobChunk.job_id == job_id,
                JobChunk.index == index,
                JobChunk.status == JobStatus.running.value,
                JobChunk.worker_id == worker_id,
                _job_running(job_id),
            )
            .values(status=JobStatus.failed.value, error=f"chunk {index}: {error}", finished_at=now)
        )
        if changed(failed) == 1:
            _fail_job(session, job_id, f"chunk {index}: {error}", now)
            session.commit()
            return True
    session.rollback()
    return False


@retried
def claim_merge(session: Session, job_id: uuid.UUID, worker_id: str) -> Claim | None:
    """Take the job for its merge step: only when every chunk has succeeded and nobody else holds the job.
    Exactly one of several concurrent callers gets the Claim (the others see attempt_token set)."""
    token = str(uuid.uuid4())
    pending = exists().where(JobChunk.job_id == job_id, JobChunk.status != JobStatus.succeeded.value)
    result = session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.status == JobStatus.running.value,
            Job.chunks_total.is_not(None),
            Job.attempt_token.is_(None),
            ~pending,
        )
        .values(
            attempt_token=token, worker_id=worker_id, heartbeat_at=utcnow(), progress_message="merging chunks"
        )
    )
    session.commit()
    if changed(result) != 1:
        return None
    attempts = session.execute(select(Job.attempts).where(Job.id == job_id)).scalar_one()
    return Claim(job_id=job_id, token=token, attempt=attempts)


def chunk_results(session: Session, job_id: uuid.UUID) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(spec, result) of every chunk, in chunk order (for the merge, once all have succeeded)."""
    rows = session.execute(
        select(JobChunk.spec, JobChunk.result).where(JobChunk.job_id == job_id).order_by(JobChunk.index)
    ).all()
    return [(dict(spec), dict(result or {})) for spec, result in rows]


@dataclass(frozen=True)
class ChunkReapOutcome:
    resend_chunks: list[tuple[uuid.UUID, int, str | None]]
    """(job id, chunk index, the queue its spec names or None for the pool's)."""
    resend_merges: list[uuid.UUID]
    failed_jobs: list[uuid.UUID]


def _fail_job(session: Session, job_id: uuid.UUID, error: str, now: datetime) -> None:
    failed = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.running.value)
        .values(status=JobStatus.failed.value, error=error, finished_at=now, attempt_token=None)
    )
    if changed(failed) == 1:
        cancel_untaken_chunks(session, job_id, f"not run: the job failed ({error})", now)


def mark_chunks_unsent(session: Session, chunks: Sequence[tuple[uuid.UUID, int]]) -> None:
    """Queued chunks marked as sent whose message could not be sent (the broker is down): enqueued_at goes
    back to their creation, so the next reaper round tries again (job_lifecycle.mark_unsent for jobs)."""
    for job_id, index in chunks:
        session.execute(
            update(JobChunk)
            .where(
                JobChunk.job_id == job_id, JobChunk.index == index, JobChunk.status == JobStatus.queued.value
            )
            .values(enqueued_at=func.coalesce(JobChunk.created_at, JobChunk.enqueued_at))
        )
    session.commit()


def reap_lost_chunks(
    session: Session,
    heartbeat_timeout_s: float,
    max_attempts: int,
    resend_after_s: float | None = None,
    now: datetime | None = None,
    wait_s: float | None = None,
    resend_max_s: float | None = None,
    sent_before: datetime | None = None,
) -> ChunkReapOutcome:
    """For running fan-out jobs: chunks whose heartbeat stopped go back to the queue (or fail the job after
    max_attempts); queued chunks whose message waited longer than resend_after_s are sent again; a chunk that
    no worker took within wait_s of its creation fails its job (nobody serves its queue); a job whose chunks
    all succeeded but whose merge went quiet is released and its merge sent again. Re-sends back off as
    job_lifecycle.resend_due says, up to resend_max_s; `sent_before` (the broker lost its messages then)
    re-sends every queued chunk sent before that moment at once."""
    now = now or utcnow()
    cutoff = now - timedelta(seconds=heartbeat_timeout_s)
    job_running = and_(Job.id == JobChunk.job_id, Job.status == JobStatus.running.value)
    resend: list[tuple[uuid.UUID, int, str | None]] = []
    failed_jobs: list[uuid.UUID] = []
    if wait_s is not None:
        untaken = session.execute(
            select(JobChunk.job_id, JobChunk.index, JobChunk.spec)
            .join(Job, job_running)
            .where(
                JobChunk.status == JobStatus.queued.value,
                JobChunk.attempts == 0,
                JobChunk.created_at < now - timedelta(seconds=wait_s),
            )
        ).all()
        for job_id, index, spec in untaken:
            queue = (spec or {}).get("queue")
            where = f"queue {queue!r}" if queue else "the worker pool's queue"
            _fail_job(
                session,
                job_id,
                f"chunk {index} waited {wait_s:g} s and no worker took it from {where}; start a worker for it "
                "(for a device: kneeboard worker --device NAME) and run the job again",
                now,
            )
            failed_jobs.append(job_id)
    stale = session.execute(
        select(
            JobChunk.job_id,
            JobChunk.index,
            JobChunk.attempts,
            JobChunk.attempt_token,
            JobChunk.worker_id,
            JobChunk.spec,
        )
        .join(Job, job_running)
        .where(JobChunk.status == JobStatus.running.value, JobChunk.heartbeat_at < cutoff)
    ).all()
    for job_id, index, attempts, token, worker, spec in stale:
        lost = (
            f"chunk {index}: worker {worker} stopped sending heartbeats for more than "
            f"{heartbeat_timeout_s:g} s (killed or crashed)"
        )
        guard = [JobChunk.job_id == job_id, JobChunk.index == index, JobChunk.attempt_token == token]
        if attempts < max_attempts:
            values: dict[str, object] = {
                "status": JobStatus.queued.value,
                "attempt_token": None,
                "worker_id": None,
                "enqueued_at": now,
                "error": f"{lost}; queued again (attempt {attempts + 1} of {max_attempts})",
            }
            if changed(session.execute(update(JobChunk).where(*guard).values(**values))) == 1:
                resend.append((job_id, index, (spec or {}).get("queue")))
            continue
        error = f"{lost}; gave up after {attempts} attempt(s). The worker may be running out of memory."
        failed = (
            update(JobChunk).where(*guard).values(status=JobStatus.failed.value, error=error, finished_at=now)
        )
        if changed(session.execute(failed)) == 1:
            _fail_job(session, job_id, error, now)
            failed_jobs.append(job_id)
    if resend_after_s is not None:
        waited = sent_before or now - timedelta(seconds=resend_after_s)
        queued = session.execute(
            select(JobChunk.job_id, JobChunk.index, JobChunk.enqueued_at, JobChunk.spec, JobChunk.created_at)
            .join(Job, job_running)
            .where(JobChunk.status == JobStatus.queued.value, JobChunk.enqueued_at < waited)
        ).all()
        for job_id, index, sent_at, spec, created_at in queued:
            if sent_before is None and not resend_due(created_at, sent_at, now, resend_after_s, resend_max_s):
                continue
            guard = [JobChunk.job_id == job_id, JobChunk.index == index, JobChunk.enqueued_at == sent_at]
            if changed(session.execute(update(JobChunk).where(*guard).values(enqueued_at=now))) == 1:
                resend.append((job_id, index, (spec or {}).get("queue")))
    pending = exists().where(JobChunk.job_id == Job.id, JobChunk.status != JobStatus.succeeded.value)
    merges = session.execute(
        select(Job.id, Job.heartbeat_at).where(
            Job.status == JobStatus.running.value,
            Job.chunks_total.is_not(None),
            Job.heartbeat_at < cutoff,
            ~pending,
        )
    ).all()
    resend_merges = []
    for job_id, beat in merges:
        guard = [Job.id == job_id, Job.status == JobStatus.running.value, Job.heartbeat_at == beat]
        if (
            changed(session.execute(update(Job).where(*guard).values(attempt_token=None, heartbeat_at=now)))
            == 1
        ):
            resend_merges.append(job_id)
    session.commit()
    return ChunkReapOutcome(resend_chunks=resend, resend_merges=resend_merges, failed_jobs=failed_jobs)
