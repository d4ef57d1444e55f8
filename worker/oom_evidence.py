"""Whether the kernel's out-of-memory killer killed a process: only what the kernel says, never a guess.

A pool process that died of SIGKILL may have been killed by the OOM killer, by a person (`kill -9`), by an
orchestrator, or by the hard time limit. Two witnesses can tell: the kernel log ("Out of memory: Killed
process <pid> (...)", "Memory cgroup out of memory: Killed process <pid>", readable with `dmesg` only when
kernel.dmesg_restrict allows it) and the oom_kill counter of the memory cgroup the worker runs in (cgroup v2
memory.events, cgroup v1 memory.oom_control), compared with its value when the worker started. When neither
can be read, or neither says so, the kill reason does not name the OOM killer.
"""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")


def kernel_log_oom_line(pid: int) -> str | None:
    """The kernel log's line saying the OOM killer killed `pid`; None when it says nothing or is unreadable."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:  # e.g. "read kernel buffer failed: Operation not permitted"
        return None
    killed = re.compile(rf"(Killed process|oom_reaper: reaped process) {pid}\b")
    for line in reversed(out.stdout.splitlines()):
        if killed.search(line):
            return line.strip()
    return None


def _cgroup_counter_files(proc_cgroup: str) -> list[Path]:
    files = []
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        path = path.lstrip("/")
        if hierarchy == "0" and controllers == "":  # cgroup v2
            files.append(CGROUP_ROOT / path / "memory.events")
        elif "memory" in controllers.split(","):  # cgroup v1
            files.append(CGROUP_ROOT / "memory" / path / "memory.oom_control")
    return files


def cgroup_oom_kills() -> int | None:
    """The oom_kill counter of this process's memory cgroup; None when no cgroup file says it."""
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
    except OSError:
        return None
    for file in _cgroup_counter_files(proc_cgroup):
        try:
            text = file.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


class OomWitness:
    """Remembers the cgroup's oom_kill counter, so that a later kill can be attributed (or not)."""

    def __init__(self) -> None:
        self.seen = cgroup_oom_kills()

    def evidence(self, pid: int) -> str | None:
        """What says that the OOM killer killed `pid`; None when nothing does."""
        line = kernel_log_oom_line(pid)
        if line is not None:
            return f"kernel log: {line!r}"
        now = cgroup_oom_kills()
        before, self.seen = self.seen, now
        if now is not None and before is not None and now > before:
            return f"the worker's memory cgroup counted {now - before} out-of-memory kill(s) (oom_kill {now})"
        return None


_witness: OomWitness | None = None


def oom_evidence(pid: int) -> str | None:
    """For the worker's main process: evidence that pool process `pid` was killed by the OOM killer."""
    global _witness
    if _witness is None:  # first use: counts from now on (worker.celery_app calls start_watching at start)
        _witness = OomWitness()
    return _witness.evidence(pid)


def start_watching() -> None:
    """Record the cgroup's oom_kill counter now (the worker's main process, at start)."""
    global _witness
    _witness = OomWitness()
