"""Running one job on a worker: claim it, keep its heartbeat, report progress, store results, finish it.

Every write goes through backend.job_lifecycle's compare-and-set transitions, so a redelivered message,
a job cancelled by its user, or a worker that was presumed dead and reaped can never overwrite the job:
results are committed in the same transaction as the "succeeded" status, and only by the claim that owns
the job. While the database is unreachable those writes are retried (backend.db_retry); an error that
outlasts the retries is raised to the task (worker.tasks), which puts the message back on the queue, instead
of failing the job for a blip.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from backend import chunk_lifecycle, job_lifecycle
from backend.db.models import Job, JobResult, JobStatus, SampleDivergence, SweepPoint
from backend.db.session import make_engine, session_factory
from backend.db_retry import in_transaction, transient_db_error
from backend.queue import broker_error
from backend.settings import Settings, get_settings
from backend.storage import ArtifactStore, store_from_uri
from worker.engine.errors import EngineError, JobCancelled
from worker.engine.jsonable import json_safe as json_safe  # the result writers import it from here

log = logging.getLogger(__name__)

ResultWriter = Callable[[Session], None]
"""Adds a job's result rows to a session; committed together with the job's success, or not at all."""


def worker_id(pid: int | None = None) -> str:
    """The id a process writes as the holder of the work it claims (this process's, or pool process `pid`'s
    as its worker's main process names it)."""
    return f"{socket.gethostname()}:{pid or os.getpid()}"


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


def fail_job(
    sessions: sessionmaker[Session],
    handler: FailureHook,
    ctx: JobContext,
    claim: job_lifecycle.Claim,
    message: str,
) -> None:
    def record(session: Session) -> None:
        clear_results(session, ctx.job_id)
        handler.on_failure(session, ctx, message)
        job_lifecycle.finish(session, claim, JobStatus.failed, error=message)

    in_transaction(sessions, record, f"failing job {ctx.job_id}")


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
    """Replace the job's results by the writer's, and mark it succeeded, in one transaction (replayed from
    the start while the database is unreachable: the writer adds new rows each time)."""

    def commit(session: Session) -> str:
        clear_results(session, claim.job_id)
        writer(session)
        if job_lifecycle.finish(session, claim, JobStatus.succeeded):
            return JobStatus.succeeded.value
        return "skipped"

    return in_transaction(sessions, commit, f"storing the results of job {claim.job_id}")


class ServiceUnavailable(Exception):
    """The database or the broker stayed unreachable past the retries: not the job's fault, so the task
    puts its message back on the queue (worker.tasks) instead of failing the job."""


def service_error(exc: BaseException) -> bool:
    """A database or broker outage (or one an exception was raised from)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ServiceUnavailable) or transient_db_error(seen) or broker_error(seen):
            return True
        seen = seen.__cause__
    return False


def run_guarded(job_id: uuid.UUID, body: Callable[[], str], on_error: Callable[[str], None]) -> str:
    """Run a step of a job; an engine error (bad input: the user's to fix), running out of memory or time,
    or a crash (ours) becomes the job's failure with a message a user can act on; a cancellation just stops.
    A database or broker outage is not the job's fault: it is raised as ServiceUnavailable, the job stays as
    it is (the reaper takes it back if its heartbeat stops), and the task's message goes back to the queue."""
    try:
        return body()
    except JobCancelled:
        log.info("job %s stopped: cancelled", job_id)
        return JobStatus.cancelled.value
    except SoftTimeLimitExceeded:
        log.warning("job %s stopped at the soft time limit", job_id)
        on_error(time_limit_reason(get_settings().task_time_limit_s))
        return JobStatus.failed.value
    except EngineError as exc:
        on_error(out_of_memory_reason(str(exc)) if out_of_memory(exc) else str(exc))
        return JobStatus.failed.value
    except Exception as exc:
        if service_error(exc):
            log.warning("job %s: database or broker unavailable: %s", job_id, exc)
            raise ServiceUnavailable(f"{type(exc).__name__}: {exc}") from exc
        if out_of_memory(exc):
            on_error(out_of_memory_reason(f"{type(exc).__name__}: {exc}"))
            return JobStatus.failed.value
        log.error("job %s crashed:\n%s", job_id, traceback.format_exc())
        on_error(f"internal error ({type(exc).__name__}: {exc}); please report it")
        return JobStatus.failed.value


# ------------------------------------------------------------------------------ runaway models
# A model may hang its runtime (a Loop that never ends) or allocate without bound. The task time limit
# (KNEEBOARD_TASK_TIME_LIMIT_S) and the pool process's memory limit (KNEEBOARD_WORKER_MEMORY_LIMIT_MB)
# contain it to its own pool process; these say why the job failed.

_OUT_OF_MEMORY_SIGNS = (
    "failed to allocate memory",  # onnxruntime's arena
    "bad_alloc",  # std::bad_alloc from any C++ runtime
    "bad allocation",
    "can't allocate memory",  # torch's CPU allocator
    "cannot allocate memory",  # ENOMEM
    "unable to allocate",  # numpy
    "out of memory",
)


def raise_if_stopping(exc: BaseException) -> None:
    """Re-raise a cancellation or soft time limit found in `exc`'s cause chain: an optional step (layer
    profile, robustness slices, attention maps) keeps the report when it fails, but the engine wraps runtime
    failures in its own errors, and a stop inside one must still stop the job."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, SoftTimeLimitExceeded | JobCancelled):
            raise cause from exc
        cause = cause.__cause__


def out_of_memory(exc: BaseException) -> bool:
    """Whether an exception (or one it was raised from) says that an allocation failed."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MemoryError) or any(sign in str(seen).lower() for sign in _OUT_OF_MEMORY_SIGNS):
            return True
        seen = seen.__cause__
    return False


def memory_limit_mb() -> int:
    """The address-space limit of this process in MiB (see apply_memory_limit); 0 when it has none."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return 0 if soft == resource.RLIM_INFINITY else soft >> 20


def memory_advice(limit_mb: int) -> str:
    if limit_mb:
        return (
            f"each worker process may use at most {limit_mb} MiB of memory (address space, "
            "KNEEBOARD_WORKER_MEMORY_LIMIT_MB): use a smaller batch_size, or raise the limit if the model "
            "really needs more"
        )
    return "use a smaller batch_size, or run the job on a worker with more memory"


def out_of_memory_reason(message: str, limit_mb: int | None = None) -> str:
    limit = memory_limit_mb() if limit_mb is None else limit_mb
    return f"the model ran out of memory ({message}); {memory_advice(limit)}"


def time_limit_reason(limit_s: float) -> str:
    return (
        f"exceeded the time limit of {limit_s:g} s per task; raise KNEEBOARD_TASK_TIME_LIMIT_S if the job "
        "needs longer. A model whose runtime never finishes (e.g. a Loop that never ends) stops here: its "
        "worker process was stopped and replaced, and the worker goes on with other jobs"
    )


def crash_reason(exit_status: str, limit_mb: int, oom_evidence: str | None = None) -> str:
    """Why a job failed whose pool process died under it (`exit_status`: "signal 11 (SIGSEGV)", "exitcode 1").
    A SIGKILL is blamed on the kernel's out-of-memory killer only with `oom_evidence` (worker.oom_evidence:
    the kernel log or the memory cgroup says so); otherwise the reason says only what is known."""
    if "SIGKILL" in exit_status:
        if oom_evidence:
            return (
                f"the worker process running the model died: killed by {exit_status}, by the kernel's "
                f"out-of-memory killer ({oom_evidence}); {memory_advice(limit_mb)}"
            )
        return (
            f"the worker process running the model died: killed by {exit_status} from outside the worker (a "
            "person, a supervisor or the kernel; neither the kernel log nor the memory cgroup, where readable, "
            "shows an out-of-memory kill). The worker replaced the process and goes on with other jobs"
        )
    return (
        f"the worker process running the model died ({exit_status}): the model crashed its runtime, or it ran "
        f"out of memory ({memory_advice(limit_mb)}). The worker replaced the process and goes on with other jobs"
    )


LostWorkHook = Callable[[Session, dict[str, Any], str], None]
"""Extra rows to change when a job fails because its pool process was lost: (session, job params, reason)."""


def fail_lost_work(
    settings: Settings, job_id: str, pid: int, reason: str, hooks: dict[str, LostWorkHook] | None = None
) -> bool:
    """Fail what pool process `pid` held of job `job_id` (a chunk and its job, or the job), with `reason`.

    Runs in the worker's main process after the pool process was killed at the hard time limit or died:
    nobody else would finish the job before the reaper, which would only run it (and hang) again. The
    compare-and-set on the holder's id makes it a no-op when the process held nothing any more, and runs it
    once however often Celery reports the loss. `hooks` by job kind change other rows in the same transaction.
    Uses an engine of its own, disposed of afterwards, so that no connection is inherited by the pool
    processes the main process forks later. True when something was failed."""
    holder = worker_id(pid)
    jid = uuid.UUID(job_id)
    engine = make_engine(settings.resolved_database_url)
    try:
        with Session(engine, expire_on_commit=False) as session:
            job = session.get(Job, jid)
            if job is None:
                return False
            kind, params = job.kind, dict(job.params or {})
            if chunk_lifecycle.fail_chunks_held_by(session, jid, holder, reason):
                failed = True
            else:
                hook = (hooks or {}).get(kind)
                if hook is not None:
                    hook(session, params, reason)
                failed = job_lifecycle.fail_held_by(session, jid, holder, reason)
    finally:
        engine.dispose()
    if failed:
        log.error("job %s failed: %s", job_id, reason)
    return failed


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
