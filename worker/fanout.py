"""Jobs that fan out over the worker pool: plan, chunks, merge (see backend/chunk_lifecycle.py).

A FanOutHandler splits its job into chunks (`plan`), computes one chunk (`run_chunk`, returning a JSON
document stored on the chunk row), and turns every chunk's result into the job's results (`merge`). Each
step runs on whichever worker takes its message, so N workers share one job.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from backend import chunk_lifecycle, job_lifecycle
from backend.db.models import Job
from backend.db.session import session_factory
from backend.queue import enqueue_chunk
from backend.settings import Settings, get_settings
from worker.engine.errors import EngineError
from worker.runtime import (
    Heartbeat,
    JobContext,
    ResultWriter,
    artifact_store,
    claim_job,
    fail_job,
    job_context,
    json_safe,
    run_guarded,
    worker_id,
    write_and_finish,
)

log = logging.getLogger(__name__)

ChunkResults = list[tuple[dict[str, Any], dict[str, Any]]]
"""(spec, result) of every chunk, in chunk order."""


def dispatch_order(costs: list[float]) -> list[int]:
    """Chunk indices in the order their messages are sent: largest expected cost first (a spec's optional
    "cost"; ties and specs without one in index order). Longest-processing-time-first: a worker that frees
    up late takes a small chunk, not the biggest one (worker/jobs/sensitivity_chunks.py says what the
    sensitivity costs are)."""
    return sorted(range(len(costs)), key=lambda i: (-costs[i], i))


class FanOutHandler(Protocol):
    def plan(self, ctx: JobContext) -> list[dict[str, Any]]:
        """The chunks' specs (JSON documents), at least one. Raise EngineError for bad input."""
        ...

    def run_chunk(self, ctx: JobContext, spec: dict[str, Any]) -> dict[str, Any]:
        """One chunk's result (a JSON document). ctx.progress reports within the chunk and raises
        JobCancelled once the job stopped."""
        ...

    def merge(self, ctx: JobContext, chunks: ChunkResults) -> ResultWriter: ...

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None: ...


def execute_fanout_job(job_id: str, handler: FanOutHandler, settings: Settings | None = None) -> str:
    """The job's own message: claim the job, plan its chunks, write them and send a message for each."""
    settings = settings or get_settings()
    claimed = claim_job(job_id, settings)
    if claimed is None:
        return "skipped"
    sessions, claim, ctx = claimed.sessions, claimed.claim, claimed.ctx
    jid = claim.job_id

    def plan() -> str:
        specs = [json_safe(spec) for spec in handler.plan(ctx)]
        if not specs:
            raise EngineError("the job has nothing to compute")
        with sessions() as session:
            if not chunk_lifecycle.fan_out(session, claim, specs):
                return "skipped"
        for index in dispatch_order([float(spec.get("cost") or 0.0) for spec in specs]):
            enqueue_chunk(settings, jid, index, specs[index].get("queue"))
        return "fanned out"

    ctx._heartbeat.start()
    try:
        return run_guarded(jid, plan, lambda message: fail_job(sessions, handler, ctx, claim, message))
    finally:
        ctx._heartbeat.stop()


def execute_chunk(job_id: str, index: int, handler: FanOutHandler, settings: Settings | None = None) -> str:
    """One chunk's message: claim the chunk, compute it, store its result; then try the merge."""
    settings = settings or get_settings()
    sessions = session_factory(settings.resolved_database_url)
    jid = uuid.UUID(job_id)
    with sessions() as session:
        claim = chunk_lifecycle.claim_chunk(session, jid, index, worker_id())
        if claim is None:
            log.info("chunk %s of job %s is not queued or its job stopped: skipping", index, job_id)
            return "skipped"
        params = dict(session.get_one(Job, jid).params)
        spec = chunk_lifecycle.chunk_spec(session, jid, index)
    ctx = _chunk_context(settings, sessions, claim, params)

    def compute() -> str:
        result = json_safe(handler.run_chunk(ctx, spec))
        with sessions() as session:
            if not chunk_lifecycle.finish_chunk(session, claim, result):
                return "skipped"
        return "chunk done"

    def fail(message: str) -> None:
        with sessions() as session:
            chunk_lifecycle.fail_chunk(session, claim, f"chunk {index}: {message}")

    ctx._heartbeat.start()
    try:
        outcome = run_guarded(jid, compute, fail)
    finally:
        ctx._heartbeat.stop()
    if outcome == "chunk done":
        return execute_merge(job_id, handler, settings)
    return outcome


def execute_merge(job_id: str, handler: FanOutHandler, settings: Settings | None = None) -> str:
    """Merge the chunks into the job's results, if every chunk is done and nobody else is merging."""
    settings = settings or get_settings()
    sessions = session_factory(settings.resolved_database_url)
    jid = uuid.UUID(job_id)
    with sessions() as session:
        claim = chunk_lifecycle.claim_merge(session, jid, worker_id())
        if claim is None:
            return "chunk done"  # chunks still running, or another worker merges
        params = dict(session.get_one(Job, jid).params)
        chunks = chunk_lifecycle.chunk_results(session, jid)
    ctx = job_context(settings, sessions, claim, params)
    # The bar counts the chunks (all done by now, 100 %): the merge's own steps (e.g. the mixed-precision
    # plans, which report from 0) change only the message. Before, a 1-chunk scan's bar fell back to 0 %
    # while its chunk table said "1 of 1 done".
    ctx._report = lambda session, _fraction, message: job_lifecycle.heartbeat(
        session, claim, message=f"merging chunks: {message}"
    )
    ctx._heartbeat.start()
    try:
        return run_guarded(
            jid,
            lambda: write_and_finish(sessions, claim, handler.merge(ctx, chunks)),
            lambda message: fail_job(sessions, handler, ctx, claim, message),
        )
    finally:
        ctx._heartbeat.stop()


def _chunk_context(
    settings: Settings,
    sessions: sessionmaker[Session],
    claim: chunk_lifecycle.ChunkClaim,
    params: dict[str, Any],
) -> JobContext:
    """A context whose heartbeat goes to the chunk row; progress within a chunk is the chunk's own, and the
    job's bar counts it as its share of a chunk (chunk_lifecycle.chunk_progress)."""

    def beat(session: Session) -> bool:
        return chunk_lifecycle.chunk_heartbeat(session, claim)

    def report(session: Session, fraction: float, message: str) -> bool:
        return chunk_lifecycle.chunk_progress(session, claim, fraction, message)

    heartbeat = Heartbeat(
        sessions, beat, settings.heartbeat_interval_s, f"job-{claim.job_id}-chunk-{claim.index}"
    )
    return JobContext(
        claim.job_id, params, claim.attempt, settings, artifact_store(settings), sessions, report, heartbeat
    )
