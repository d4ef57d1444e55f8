"""The API's background loop that finds jobs whose worker died and requeues or fails them, and re-sends
messages that may have been lost (see docs/design-notes.md, "Blips").

It runs in every API process; the compare-and-set updates in job_lifecycle make concurrent reapers harmless.
A round that fails (the database or the broker is down) is logged and the next one runs as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import datetime

from starlette.concurrency import run_in_threadpool

from backend import chunk_reaping, job_lifecycle
from backend.contracts import JobKind
from backend.db.models import utcnow
from backend.db.session import session_factory
from backend.liveness import REAPER_ROUNDS
from backend.queue import BrokerWatch, enqueue_chunk, enqueue_job, enqueue_merge
from backend.settings import Settings

log = logging.getLogger(__name__)


def reap_once(settings: Settings, sent_before: datetime | None = None) -> job_lifecycle.ReapOutcome:
    """One round. `sent_before`: the broker lost its messages at about this time, so every job and chunk
    still queued that was sent before it is sent again now (otherwise re-sends back off, see
    job_lifecycle.resend_due)."""

    def enqueue(job_id: uuid.UUID, kind: str) -> None:
        enqueue_job(settings, JobKind(kind), job_id)

    outcome = job_lifecycle.run_reaper_once(
        session_factory(settings.resolved_database_url),
        settings.heartbeat_timeout_s,
        settings.max_attempts,
        enqueue,
        resend_after_s=settings.queued_resend_s,
        resend_max_s=settings.queued_resend_max_s,
        sent_before=sent_before,
    )
    if outcome.requeued or outcome.failed:
        log.warning("reaper: requeued or sent again %s, failed %s", outcome.requeued, outcome.failed)
    with session_factory(settings.resolved_database_url)() as session:
        chunks = chunk_reaping.reap_lost_chunks(
            session,
            settings.heartbeat_timeout_s,
            settings.max_attempts,
            settings.queued_resend_s,
            wait_s=settings.chunk_wait_s,
            resend_max_s=settings.queued_resend_max_s,
            sent_before=sent_before,
        )
    for sent, (job_id, index, queue) in enumerate(chunks.resend_chunks):
        try:
            enqueue_chunk(settings, job_id, index, queue)
        except Exception:  # the broker is down: the next round tries the unsent ones again
            with session_factory(settings.resolved_database_url)() as session:
                unsent = [(job, i) for job, i, _queue in chunks.resend_chunks[sent:]]
                chunk_reaping.mark_chunks_unsent(session, unsent)
            raise
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


class Reaper:
    """Rounds of reap_once, with the broker watched for lost messages in between."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.broker = BrokerWatch(settings)
        self.sent_before: datetime | None = None
        """The broker lost its messages: re-send what was sent before this; kept until a round succeeds."""

    def round(self) -> job_lifecycle.ReapOutcome:
        fresh_since = self.broker.lost()
        if fresh_since is not None:
            self.sent_before = fresh_since
        elif self.sent_before is not None:
            # A round that saw the loss failed (e.g. the broker answered before a worker had declared its
            # queue again): it may have marked messages as re-sent without sending them; send everything.
            self.sent_before = utcnow()
        outcome = reap_once(self.settings, sent_before=self.sent_before)
        self.sent_before = None
        return outcome


async def reaper_loop(settings: Settings) -> None:
    reaper = Reaper(settings)
    while True:
        await asyncio.sleep(settings.reaper_interval_s)
        try:
            await run_in_threadpool(reaper.round)
            REAPER_ROUNDS.succeeded()
        except Exception as exc:  # keep reaping whatever one round did (database or broker down, a bug)
            REAPER_ROUNDS.failed()
            log.error(
                "reaper round failed: %s: %s", type(exc).__name__, (str(exc).splitlines() or [""])[0][:300]
            )
            log.debug("reaper round failed", exc_info=True)


@contextlib.asynccontextmanager
async def running_reaper(settings: Settings):
    task = asyncio.create_task(reaper_loop(settings))
    REAPER_ROUNDS.running = True  # GET /api/v1/health reports the rounds (backend/liveness.py)
    try:
        yield
    finally:
        REAPER_ROUNDS.running = False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
