"""A job's peak resident memory, read in the pool process that runs it (issue 32: "store the job's peak RSS
with its timings").

Linux keeps a process's peak RSS (VmHWM in /proc/self/status) for its whole life, and a pool process runs
job after job, so the peak is reset when a job starts: writing "5" to /proc/self/clear_refs sets VmHWM back
to the current RSS (Linux 4.0+). Where that is refused or /proc is missing, the peak is unknown (None) rather
than another job's.
"""

from __future__ import annotations

from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Start measuring from now; False when this system cannot reset the peak."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mib() -> float | None:
    """The process's peak resident memory in MiB since the last reset, or None where unknown."""
    try:
        lines = _STATUS.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None
