"""The one error of `kneeboard check` that is not a verdict: bad arguments, an unreachable server, a model the
server rejected, a job that failed. The check exits 2 on it, with its message."""

from __future__ import annotations


class CheckError(Exception):
    """Something kept the check from reaching a verdict (exit code 2)."""
