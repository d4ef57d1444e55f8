"""A recovery job's bar and message: each stage ("before", each method, the export, the per-layer
before/after) owns an equal share of the bar and moves through it with its own count; a layer-wise
method's message says that count ("AdaRound: fc, 2 of 8 layers done") where it named only the layer."""

from __future__ import annotations

LAYER_METHODS = frozenset({"adaround", "bias_correction"})
"""Methods that report once per layer (worker/engine/recovery): their count is in layers."""

LAST = 0.99
"""The most a stage reports before the job's own finish writes 1.0."""


def recovery_fraction(position: int, stages: int, done: int, total: int) -> float:
    """The job's fraction when stage `position` (0-based) of `stages` has done `done` of its `total`."""
    part = min(max(done, 0), max(total, 1)) / max(total, 1)
    return min((position + part) / max(stages, 1), LAST)


def counted_message(method: str, done: int, total: int, message: str) -> str:
    """The engine's message with the count the bar is drawn from, for the methods whose message does not
    carry it (the training methods' "distill step 3/100: ..." does, and the live loss curve parses it as
    is)."""
    if method in LAYER_METHODS and done < total:
        return f"{message}, {done} of {total} layers done"
    return message
