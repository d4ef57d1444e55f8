"""The Celery application of the workers: `celery -A worker.celery_app worker`.

Containing runaway models (see docs/design-notes.md, "Containing hostile models"): every task runs under a
soft and a hard time limit, and every pool process under an address-space limit. When the hard limit kills
a pool process, or a pool process dies under a task (a crash in a runtime, the out-of-memory killer), the
worker's main process fails the job with the reason, once, instead of leaving it to the reaper (which would
run it again); Celery replaces the pool process and the worker goes on.
"""

from __future__ import annotations

import logging
import os
import re
import resource
from typing import Any

from billiard.einfo import ExceptionWithTraceback
from billiard.exceptions import WorkerLostError
from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown
from celery.worker import state as worker_state
from celery.worker.request import Request

from backend.celery_config import celery_config
from backend.settings import get_settings
from worker.lost_work import LOST_WORK_HOOKS

log = logging.getLogger(__name__)

# How a pool process ended that is not a shutdown of the worker (SIGTERM, SIGINT, SIGQUIT, SIGHUP reach
# the pool processes too when a whole process group is stopped, and those jobs must stay for the reaper).
_CRASH = re.compile(r"signal \d+ \((SIGSEGV|SIGBUS|SIGILL|SIGFPE|SIGABRT|SIGKILL)\)|exitcode [1-9]\d*")


class ContainingRequest(Request):
    """A task request that fails its job when its pool process is killed at the hard time limit or dies."""

    def on_timeout(self, soft: bool, timeout: float) -> None:
        if not soft and not worker_state.should_terminate:
            from worker.runtime import time_limit_reason

            self._fail_job(time_limit_reason(timeout))
        super().on_timeout(soft, timeout)

    def on_failure(self, exc_info: Any, send_failed_event: bool = True, return_ok: bool = False) -> None:
        exc = exc_info.exception
        if isinstance(exc, ExceptionWithTraceback):
            exc = exc.exc
        shutting_down = worker_state.should_terminate or worker_state.should_stop
        if isinstance(exc, WorkerLostError) and not shutting_down:
            status = _CRASH.search(str(exc))
            if status is not None:
                from worker.oom_evidence import oom_evidence
                from worker.runtime import crash_reason

                killed = "SIGKILL" in status.group(0) and self.worker_pid
                evidence = oom_evidence(self.worker_pid) if killed else None
                limit_mb = get_settings().resolved_worker_memory_limit_mb
                self._fail_job(crash_reason(status.group(0), limit_mb, evidence))
        super().on_failure(exc_info, send_failed_event=send_failed_event, return_ok=return_ok)

    def _fail_job(self, reason: str) -> None:
        args = self.args or ()
        if not args or not self.worker_pid:
            return
        try:
            from worker.runtime import fail_lost_work

            fail_lost_work(get_settings(), str(args[0]), self.worker_pid, reason, LOST_WORK_HOOKS)
        except Exception:  # the worker's main loop must survive; the reaper remains the backstop
            log.exception("could not fail job %s after losing its pool process", args[0])


class KneeboardTask(Task):
    Request = ContainingRequest

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        """In a pool process: the soft time limit struck outside a job's guarded body (e.g. while it was
        recording a failure), so the task ended without finishing its job: fail the job here. (The main
        process calls this too on a hard time limit; ContainingRequest has handled that already.)"""
        if isinstance(exc, SoftTimeLimitExceeded) and args:
            from worker.runtime import fail_lost_work, time_limit_reason

            settings = get_settings()
            reason = time_limit_reason(settings.task_time_limit_s)
            fail_lost_work(settings, str(args[0]), os.getpid(), reason, LOST_WORK_HOOKS)


app = Celery("kneeboard", include=["worker.tasks"], task_cls=KneeboardTask)
app.conf.update(celery_config(get_settings()))


def apply_memory_limit(limit_mb: int) -> None:
    """Limit this process's address space (RLIMIT_AS) to `limit_mb` MiB (0: leave it unlimited): an
    allocation beyond it fails (MemoryError, onnxruntime's "Failed to allocate memory", torch's "can't
    allocate memory"), and the job fails with a reason that names the limit, instead of the machine
    swapping or the kernel killing a process that may not be the culprit."""
    if limit_mb <= 0:
        return
    limit = limit_mb << 20
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    used = _address_space_bytes()
    if used and used + (256 << 20) > limit:
        log.error(
            "KNEEBOARD_WORKER_MEMORY_LIMIT_MB=%s is below what a pool process needs: it uses %s MiB of address "
            "space after importing the runtimes; every job will fail for lack of memory",
            limit_mb,
            used >> 20,
        )
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _address_space_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


@worker_init.connect
def _watch_for_oom_kills(**_: object) -> None:
    """The worker's main process notes the memory cgroup's OOM-kill counter, so that a pool process killed
    later is blamed on the OOM killer only if the counter moved (worker.oom_evidence)."""
    from worker.oom_evidence import start_watching

    start_watching()


_liveness: list[Any] = []


@worker_ready.connect
def _start_liveness(sender: Any, **_: object) -> None:
    """The main process writes this worker's heartbeat row every heartbeat interval (backend/liveness.py), so
    GET /api/v1/health (and the dashboard's banner) can say when no worker is running. Started once the pool
    is up."""
    from backend.liveness import WorkerBeat

    settings = get_settings()
    beat = WorkerBeat(
        settings.resolved_database_url, sender.hostname, os.getpid(), settings.heartbeat_interval_s
    )
    beat.start()
    _liveness.append(beat)


@worker_shutdown.connect
def _stop_liveness(**_: object) -> None:
    for beat in _liveness:
        beat.stop()


@worker_process_init.connect
def _prepare_pool_process(**_: object) -> None:
    """Import torch, onnxruntime, onnx and the engine when a pool process starts, not inside the first job
    (about a second, which a job that fans out would otherwise pay on every worker: the engine imports the
    onnx package lazily, and its 0.5 s showed in each fresh worker's first sensitivity chunk); then apply
    the memory limit, which counts what the imports reserved."""
    import onnx.helper
    import onnx.numpy_helper  # noqa: F401

    import worker.engine.compression
    import worker.engine.fidelity.compare
    import worker.engine.loaders
    import worker.engine.sensitivity.scan  # noqa: F401

    apply_memory_limit(get_settings().resolved_worker_memory_limit_mb)
