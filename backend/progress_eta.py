"""How long a running job has left, from how far it is and how long it has run: a straight-line estimate
(remaining = elapsed × (1 − p) / p), given only once both are large enough for the line to mean anything."""

from __future__ import annotations

from datetime import datetime

MIN_FRACTION = 0.05
"""Below 5 % done the first steps (loading the models, reading the dataset) dominate the elapsed time and
a straight line from them overstates the rest many times over."""

MIN_ELAPSED_S = 5.0
"""Under 5 s of running the elapsed time is mostly the claim and the model load: no estimate yet."""


def eta_seconds(progress: float, started_at: datetime | None, now: datetime) -> float | None:
    """Seconds left for a job `progress` (0..1) done that started at `started_at` (aware UTC), seen at
    `now`; None before the estimate means anything (not started, under MIN_FRACTION done or MIN_ELAPSED_S
    run) and once the job is done (progress 1)."""
    if started_at is None or started_at.tzinfo is None or now.tzinfo is None:
        return None
    if not MIN_FRACTION <= progress < 1.0:
        return None
    elapsed = (now - started_at).total_seconds()
    if elapsed < MIN_ELAPSED_S:
        return None
    return elapsed * (1.0 - progress) / progress
