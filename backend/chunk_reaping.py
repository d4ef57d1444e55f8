"""The reaper's side of jobs that fan out (see backend/chunk_lifecycle.py for the workers' side): chunks whose
worker died go back to the queue or fail their job, chunk messages that may have been lost are sent again,
a merge that went quiet is released and sent again, and a chunk no worker takes fails its job."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, func, select, update
from sqlalchemy.orm import Session

from backend.chunk_lifecycle import fail_fanned_out_job
from backend.db.models import Job, JobChunk, JobStatus, utcnow
from backend.job_lifecycle import changed, resend_due


@dataclass(frozen=True)
class ChunkReapOutcome:
    resend_chunks: list[tuple[uuid.UUID, int, str | None]]
    """(job id, chunk index, the queue its spec names or None for the pool's)."""
    resend_merges: list[uuid.UUID]
    failed_jobs: list[uuid.UUID]


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
            fail_fanned_out_job(
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
            fail_fanned_out_job(session, job_id, error, now)
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
