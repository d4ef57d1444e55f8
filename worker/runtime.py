"""Running one job on a worker: claim it, keep its heartbeat, report progress, store results, finish it.

Every write goes through backend.job_lifecycle's compare-and-set transitions, so a redelivered message,
a job cancelled by its user, or a worker that was presumed dead and reaped can never overwrite the job:
results are committed in the same transaction as the "succeeded" status, and only by the claim that owns
the job.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from backend import job_lifecycle
from backend.db.models import Job, JobResult, JobStatus, SampleDivergence, SweepPoint
from backend.db.session import session_factory
from backend.settings import Settings, get_settings
from backend.storage import ArtifactStore, store_from_uri
from worker.engine.errors import EngineError, JobCancelled

log = logging.getLogger(__name__)

ResultWriter = Callable[[Session], None]
"""Adds a job's result rows to a session; committed together with the job's success, or not at all."""


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


Beat = Callable[[Session], bool]
"""Records that a worker is alive on a job (or a chunk of one); False once the work is no longer ours."""

Report = Callable[[Session, float, str], bool]
"""Records progress (fraction, message); False once the work is no longer ours."""


class Heartbeat(threading.Thread):
    """Proves the worker is alive every ``interval`` seconds; notices when the work stops being ours."""

    def __init__(self, sessions: sessionmaker[Session], beat: Beat, interval: float, name: str) -> None:
        super().__init__(name=f"heartbeat-{name}", daemon=True)
        self.sessions, self.beat, self.interval = sessions, beat, interval
        self.lost = threading.Event()
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                with self.sessions() as session:
                    if not self.beat(session):
                        self.lost.set()
                        return
            except Exception:  # a transient DB error must not kill the heartbeat
                log.exception("heartbeat %s failed", self.name)

    def stop(self) -> None:
        self._stop.set()


@dataclass
class JobContext:
    """What a handler gets: the job's parameters, the store, and a progress reporter that also cancels."""

    job_id: uuid.UUID
    params: dict[str, Any]
    attempt: int
    settings: Settings
    store: ArtifactStore
    sessions: sessionmaker[Session]
    _report: Report
    _heartbeat: Heartbeat
    _last_write: float = 0.0
    min_write_interval_s: float = 0.5

    def progress(self, fraction: float, message: str) -> None:
        """Report progress; raises JobCancelled when the user cancelled the job or it was taken from us."""
        if self._heartbeat.lost.is_set():
            raise JobCancelled("the job was cancelled")
        now = time.monotonic()
        if now - self._last_write < self.min_write_interval_s and fraction < 1.0:
            return
        self._last_write = now
        with self.sessions() as session:
            if not self._report(session, fraction, message):
                raise JobCancelled("the job was cancelled")


class FailureHook(Protocol):
    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        """Extra rows to change when the job fails (e.g. mark its model invalid); same transaction."""
        ...


class JobHandler(FailureHook, Protocol):
    def run(self, ctx: JobContext) -> ResultWriter: ...


def clear_results(session: Session, job_id: uuid.UUID) -> None:
    """Remove what an earlier attempt of this job may have stored: writes are idempotent per job."""
    session.execute(delete(SampleDivergence).where(SampleDivergence.job_id == job_id))
    session.execute(delete(SweepPoint).where(SweepPoint.job_id == job_id))
    session.execute(delete(JobResult).where(JobResult.job_id == job_id))


def json_safe(value: Any) -> Any:
    """JSON has no NaN or infinity: replace them by None (the summaries say what None means)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return json_safe(value.item())
    return value


def fail_job(
    sessions: sessionmaker[Session],
    handler: FailureHook,
    ctx: JobContext,
    claim: job_lifecycle.Claim,
    message: str,
) -> None:
    with sessions() as session:
        clear_results(session, ctx.job_id)
        handler.on_failure(session, ctx, message)
        job_lifecycle.finish(session, claim, JobStatus.failed, error=message)


def job_context(
    settings: Settings, sessions: sessionmaker[Session], claim: job_lifecycle.Claim, params: dict[str, Any]
) -> JobContext:
    """A context whose heartbeat and progress go to the job row, under the claim."""

    def beat(session: Session) -> bool:
        return job_lifecycle.heartbeat(session, claim)

    def report(session: Session, fraction: float, message: str) -> bool:
        return job_lifecycle.heartbeat(session, claim, progress=fraction, message=message)

    heartbeat = Heartbeat(sessions, beat, settings.heartbeat_interval_s, f"job-{claim.job_id}")
    return JobContext(
        claim.job_id, params, claim.attempt, settings, artifact_store(settings), sessions, report, heartbeat
    )


def artifact_store(settings: Settings) -> ArtifactStore:
    return store_from_uri(
        settings.resolved_artifact_uri, settings.data_dir / "artifact-cache", settings.s3_endpoint_url
    )


def write_and_finish(
    sessions: sessionmaker[Session], claim: job_lifecycle.Claim, writer: ResultWriter
) -> str:
    """Replace the job's results by the writer's, and mark it succeeded, in one transaction."""
    with sessions() as session:
        clear_results(session, claim.job_id)
        writer(session)
        if job_lifecycle.finish(session, claim, JobStatus.succeeded):
            return JobStatus.succeeded.value
        return "skipped"


def run_guarded(job_id: uuid.UUID, body: Callable[[], str], on_error: Callable[[str], None]) -> str:
    """Run a step of a job; an engine error (bad input: the user's to fix) or a crash (ours) becomes the
    job's failure with a message a user can act on; a cancellation just stops."""
    try:
        return body()
    except JobCancelled:
        log.info("job %s stopped: cancelled", job_id)
        return JobStatus.cancelled.value
    except EngineError as exc:
        on_error(str(exc))
        return JobStatus.failed.value
    except Exception as exc:
        log.error("job %s crashed:\n%s", job_id, traceback.format_exc())
        on_error(f"internal error ({type(exc).__name__}: {exc}); please report it")
        return JobStatus.failed.value


@dataclass(frozen=True)
class ClaimedJob:
    sessions: sessionmaker[Session]
    claim: job_lifecycle.Claim
    ctx: JobContext


def claim_job(job_id: str, settings: Settings) -> ClaimedJob | None:
    """queued -> running for this worker, with a context for the handler; None when the job is not queued
    any more (done, cancelled, deleted, or taken by another delivery of its message)."""
    sessions = session_factory(settings.resolved_database_url)
    with sessions() as session:
        claim = job_lifecycle.claim(session, uuid.UUID(job_id), worker_id())
        if claim is None:
            log.info("job %s is not queued any more (done, cancelled, deleted or taken): skipping", job_id)
            return None
        params = dict(session.get_one(Job, claim.job_id).params)
    return ClaimedJob(sessions, claim, job_context(settings, sessions, claim, params))


def execute_job(job_id: str, handler: JobHandler, settings: Settings | None = None) -> str:
    """Run a job to its end. Returns what happened (for logs and tests): the job's final status or 'skipped'."""
    claimed = claim_job(job_id, settings or get_settings())
    if claimed is None:
        return "skipped"
    sessions, claim, ctx = claimed.sessions, claimed.claim, claimed.ctx
    jid = claim.job_id
    ctx._heartbeat.start()
    try:
        return run_guarded(
            jid,
            lambda: write_and_finish(sessions, claim, handler.run(ctx)),
            lambda message: fail_job(sessions, handler, ctx, claim, message),
        )
    finally:
        ctx._heartbeat.stop()
