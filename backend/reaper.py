"""The API's background loop that finds jobs whose worker died and requeues or fails them.

It runs in every API process; the compare-and-set updates in job_lifecycle make concurrent reapers harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from starlette.concurrency import run_in_threadpool

from backend import chunk_lifecycle, job_lifecycle
from backend.contracts import JobKind
from backend.db.session import session_factory
from backend.queue import enqueue_chunk, enqueue_job, enqueue_merge
from backend.settings import Settings

log = logging.getLogger(__name__)


def reap_once(settings: Settings) -> job_lifecycle.ReapOutcome:
    def enqueue(job_id: uuid.UUID, kind: str) -> None:
        enqueue_job(settings, JobKind(kind), job_id)

    outcome = job_lifecycle.run_reaper_once(
        session_factory(settings.resolved_database_url),
        settings.heartbeat_timeout_s,
        settings.max_attempts,
        enqueue,
        resend_after_s=settings.queued_resend_s,
    )
    if outcome.requeued or outcome.failed:
        log.warning("reaper: requeued %s, failed %s", outcome.requeued, outcome.failed)
    with session_factory(settings.resolved_database_url)() as session:
        chunks = chunk_lifecycle.reap_lost_chunks(
            session,
            settings.heartbeat_timeout_s,
            settings.max_attempts,
            settings.queued_resend_s,
            wait_s=settings.chunk_wait_s,
        )
    for job_id, index, queue in chunks.resend_chunks:
        enqueue_chunk(settings, job_id, index, queue)
    for job_id in chunks.resend_merges:
        enqueue_merge(settings, job_id)
    if chunks.resend_chunks or chunks.resend_merges or chunks.failed_jobs:
        log.warning(
            "reaper: chunks sent again %s, merges sent again %s, jobs failed %s",
            chunks.resend_chunks,
            chunks.resend_merges,
            chunks.failed_jobs,
        )
    return job_lifecycle.ReapOutcome(requeued=outcome.requeued, failed=outcome.failed + chunks.failed_jobs)


async def reaper_loop(settings: Settings) -> None:
    while True:
        await asyncio.sleep(settings.reaper_interval_s)
        try:
            await run_in_threadpool(reap_once, settings)
        except Exception:  # keep reaping whatever one round did
            log.exception("reaper round failed")


@contextlib.asynccontextmanager
async def running_reaper(settings: Settings):
    task = asyncio.create_task(reaper_loop(settings))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
