"""What `kneeboard up` starts, watched: a child that dies is restarted, one that keeps dying is given up on.

Before this (issue 32) `up` started its worker and demo seeder and never looked at them again: a worker
killed by a broker error stayed a defunct child while jobs waited for ever, and the finished seeder stayed
a zombie until shutdown. Here a thread polls every child (``Popen.poll`` also reaps it, so nothing stays a
zombie for longer than one poll): a child that exited is logged with its reason (exit code or signal
name), whatever is left of its process group is killed (a Celery worker's pool processes outlive a killed
main process), and it is started again after ``restart_delay_s`` unless

- it may exit when done (``restart_on_success=False``, the seeder) and exited 0: it is only reaped;
- it died ``max_deaths`` times within ``window_s``: restarting it is pointless (a broken install, a port
  in use), so that is logged as an error with the last reason, and the API goes on serving.

Each child runs in its own process group (session), so that stopping `up` stops a child and everything it
started, even when the child itself is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger("kneeboard.supervisor")


@dataclass(frozen=True)
class ChildSpec:
    name: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    restart_on_success: bool = True
    """False for a child that is done when it exits 0 (the demo seeder): it is reaped, not restarted."""


def exit_reason(returncode: int) -> str:
    """'exit code 3' or 'killed by signal SIGKILL' (Popen's negative return codes)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"killed by signal {name}"
    return f"exit code {returncode}"


@dataclass
class _Child:
    spec: ChildSpec
    popen: subprocess.Popen[bytes] | None = None
    deaths: deque[float] = field(default_factory=deque)
    restart_at: float | None = None
    done: bool = False


class Supervisor:
    def __init__(
        self,
        specs: Sequence[ChildSpec],
        restart_delay_s: float = 1.0,
        max_deaths: int = 5,
        window_s: float = 60.0,
        poll_s: float = 0.5,
    ) -> None:
        self.children = [_Child(spec) for spec in specs]
        self.restart_delay_s = restart_delay_s
        self.max_deaths = max_deaths
        self.window_s = window_s
        self.poll_s = poll_s
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="kneeboard-supervisor", daemon=True)

    def start(self) -> None:
        with self._lock:
            for child in self.children:
                self._spawn(child)
        self._thread.start()

    def pid(self, name: str) -> int | None:
        """The pid of the named child now (None while it is down or given up on)."""
        with self._lock:
            for child in self.children:
                if child.spec.name == name and child.popen is not None and child.popen.returncode is None:
                    return child.popen.pid
        return None

    def _spawn(self, child: _Child) -> None:
        env = dict(child.spec.env) if child.spec.env is not None else None
        child.popen = subprocess.Popen(list(child.spec.argv), env=env, start_new_session=True)
        child.restart_at = None
        log.info("started %s (pid %d)", child.spec.name, child.popen.pid)

    def _watch(self) -> None:
        while not self._stopping.wait(self.poll_s):
            with self._lock:
                if self._stopping.is_set():
                    return
                for child in self.children:
                    self._check(child, time.monotonic())

    def _check(self, child: _Child, now: float) -> None:
        if child.done:
            return
        if child.popen is None:
            if child.restart_at is not None and now >= child.restart_at:
                self._spawn(child)
            return
        returncode = child.popen.poll()  # reaps an exited child: no zombie
        if returncode is None:
            return
        pid, reason = child.popen.pid, exit_reason(returncode)
        _kill_group(pid)  # what it started (a worker's pool processes) goes with it
        child.popen = None
        if returncode == 0 and not child.spec.restart_on_success:
            child.done = True
            log.info("%s (pid %d) finished", child.spec.name, pid)
            return
        child.deaths.append(now)
        while child.deaths and now - child.deaths[0] > self.window_s:
            child.deaths.popleft()
        if len(child.deaths) >= self.max_deaths:
            child.done = True
            log.error(
                "%s (pid %d) died: %s. Not restarting it: it died %d times within %.0f s. The API keeps "
                "serving; fix the cause (see the lines above) and restart `kneeboard up`%s.",
                child.spec.name, pid, reason, len(child.deaths), self.window_s,
                " (jobs wait until a worker runs)" if "worker" in child.spec.name else "",
            )  # fmt: skip
            return
        child.restart_at = now + self.restart_delay_s
        log.warning(
            "%s (pid %d) died: %s; restarting it in %g s (%d death(s) within %.0f s; given up on at %d)",
            child.spec.name, pid, reason, self.restart_delay_s, len(child.deaths), self.window_s,
            self.max_deaths,
        )  # fmt: skip

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop watching, SIGTERM each child's process group (a Celery worker finishes its task within
        grace_s), then SIGKILL whatever is left of the groups: nothing outlives the supervisor."""
        self._stopping.set()
        with self._lock:
            running = [c.popen for c in self.children if c.popen is not None]
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for popen in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for popen in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        for popen in running:
            _kill_group(popen.pid)
            popen.wait()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
