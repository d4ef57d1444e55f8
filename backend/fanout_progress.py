"""A fan-out job's bar: whole chunks done plus the running chunks' own fractions, each chunk one equal
share (a sensitivity scan's chunks are balanced by estimated cost, worker/jobs/sensitivity_chunks.py; a
sweep's chunk is one point). Counting only whole chunks left a 1-chunk scan at 0 % through all its cells,
then 100 % (issue 35)."""

from __future__ import annotations


def fan_out_fraction(total: int, succeeded: int, running: float) -> float:
    """The job's fraction done: (chunks succeeded + the sum of the running chunks' fractions) / chunks."""
    if total <= 0:
        return 0.0
    return max(0.0, min(1.0, (succeeded + max(running, 0.0)) / total))


def fan_out_message(total: int, succeeded: int, index: int | None = None, message: str = "") -> str:
    """ "2 of 4 chunks done", with the chunk that reports and its own message when there is one:
    "1 of 4 chunks done; chunk 3: 12 of 40 cells"."""
    head = f"{succeeded} of {total} chunks done"
    return f"{head}; chunk {index + 1}: {message}" if index is not None and message else head
