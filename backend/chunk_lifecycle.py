"""Jobs that fan out over the worker pool: chunk rows and their compare-and-set transitions.

A fan-out job runs in three steps, each on whichever worker takes the message:

    plan    the job's own task claims the job (job_lifecycle.claim), works out the chunks, and `fan_out`
            writes them and releases the job's claim in one transaction; a chunk message per chunk follows.
    chunk   `claim_chunk` -> heartbeats -> `finish_chunk` (or `fail_chunk`, which fails the job). A chunk
            runs only while its job is running: cancelling the job stops every chunk at its next heartbeat.
    merge   whoever finishes a chunk then tries `claim_merge`: it succeeds for exactly one caller, once
            every chunk has succeeded, and returns an ordinary job Claim, so the merge writes the job's
            results and finishes it with job_lifecycle.finish like a one-piece job.

Lost workers (backend/chunk_reaping.py): `reap_lost_chunks` puts a chunk whose heartbeat stopped back in
the queue (or fails the job after max_attempts), re-sends chunk messages that waited too long, and re-sends
the merge of a job whose chunks are all done but whose merge never finished. A killed worker costs only the chunk it was running.
A job that fails cancels its chunks that no worker has taken. The worker's transitions are retried while
the database is unreachable (backend.db_retry): each is one self-contained transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, exists, func, insert, select, update
from sqlalchemy.orm import Session

from backend.db.models import Job, JobChunk, JobStatus, utcnow
from backend.db_retry import retried
from backend.fanout_progress import fan_out_fraction, fan_out_message
from backend.job_lifecycle import Claim, cancel_untaken_chunks, changed


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
            progress=0.0,  # a chunk queued again starts its count again
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
    """running -> succeeded with its result; the job's progress counts the chunks done (and the running
    ones' shares: backend.fanout_progress). False when the
    chunk was taken from us (reaped) or the job stopped: then nothing is written."""
    now = utcnow()
    done = session.execute(
        update(JobChunk)
        .where(*_owned(c))
        .values(
            status=JobStatus.succeeded.value, result=result, finished_at=now, heartbeat_at=now, progress=1.0
        )
    )
    if changed(done) != 1:
        session.rollback()
        return False
    total, succeeded, running = _progress_counts(session, c.job_id)
    session.execute(
        update(Job)
        .where(Job.id == c.job_id, Job.status == JobStatus.running.value)
        .values(
            heartbeat_at=now,
            progress=fan_out_fraction(total, succeeded, running),
            progress_message=fan_out_message(total, succeeded),
        )
    )
    session.commit()
    return True


@retried
def chunk_progress(session: Session, c: ChunkClaim, fraction: float, message: str) -> bool:
    """A running chunk's own progress (and a heartbeat): the job's bar counts it as a share of a chunk
    (backend.fanout_progress). False when the chunk is no longer ours or its job stopped."""
    now = utcnow()
    result = session.execute(
        update(JobChunk).where(*_owned(c)).values(heartbeat_at=now, progress=max(0.0, min(1.0, fraction)))
    )
    if changed(result) != 1:
        session.rollback()
        return False
    total, succeeded, running = _progress_counts(session, c.job_id)
    session.execute(
        update(Job)
        .where(Job.id == c.job_id, Job.status == JobStatus.running.value, Job.attempt_token.is_(None))
        .values(
            heartbeat_at=now,
            progress=fan_out_fraction(total, succeeded, running),
            progress_message=fan_out_message(total, succeeded, c.index, message),
        )
    )
    session.commit()
    return True


def _progress_counts(session: Session, job_id: uuid.UUID) -> tuple[int, int, float]:
    """(chunks, chunks succeeded, the sum of the running chunks' fractions) of a job."""
    row = session.execute(
        select(
            func.count(),
            func.count().filter(JobChunk.status == JobStatus.succeeded.value),
            func.coalesce(
                func.sum(JobChunk.progress).filter(JobChunk.status == JobStatus.running.value), 0.0
            ),
        ).where(JobChunk.job_id == job_id)
    ).one()
    return int(row[0]), int(row[1]), float(row[2])


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
    fail_fanned_out_job(session, c.job_id, error, now)
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
            fail_fanned_out_job(session, job_id, f"chunk {index}: {error}", now)
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


def fail_fanned_out_job(session: Session, job_id: uuid.UUID, error: str, now: datetime) -> None:
    """A running fan-out job fails with `error`; its chunks that no worker took are cancelled. In the
    caller's transaction."""
    failed = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.running.value)
        .values(status=JobStatus.failed.value, error=error, finished_at=now, attempt_token=None)
    )
    if changed(failed) == 1:
        cancel_untaken_chunks(session, job_id, f"not run: the job failed ({error})", now)
