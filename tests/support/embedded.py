"""`kneeboard up` as a real process in a fresh data dir (the embedded default: SQLite, the embedded broker, a
supervised Celery worker, the demo seeder), for the end-to-end tests of the embedded mode."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from backend.client import KneeboardClient
from tests.support.services import Process, free_port, processes_with_env


@contextlib.contextmanager
def embedded_instance(
    tmp: Path, settings: Mapping[str, str] | None = None
) -> Iterator[tuple[str, Path, Process]]:
    """(base URL, data dir, the `up` process); `settings` are extra KNEEBOARD_* variables. On exit, `up` is
    stopped and nothing it started may outlive it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    env |= {"KNEEBOARD_DATA_DIR": str(tmp / "data"), "KNEEBOARD_PORT": str(port), "PYTHONUNBUFFERED": "1"}
    env |= dict(settings or {})
    proc = Process([sys.executable, "-m", "backend.cli", "up"], env, tmp / "up.log")
    base = f"http://127.0.0.1:{port}"
    try:
        KneeboardClient(base).wait_healthy(timeout=120)
        yield base, tmp / "data", proc
    finally:
        proc.stop()
        # Stopping `up` stops its worker, the worker's pool and the seeder too: nothing outlives it.
        deadline = time.monotonic() + 15
        while (
            left := processes_with_env("KNEEBOARD_DATA_DIR", str(tmp / "data"))
        ) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not left, f"processes left running after `up` stopped: {left}"


def children(pid: int) -> list[tuple[int, str, str]]:
    """(pid, state, command line) of each live child of `pid` (read from /proc; Linux only)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append((int(entry.name), fields[0], cmdline))
    return found


def worker_pid(up: Process) -> int | None:
    workers = [
        p for p, state, cmd in children(up.popen.pid) if "celery" in cmd and " worker" in cmd and state != "Z"
    ]
    return workers[0] if workers else None
