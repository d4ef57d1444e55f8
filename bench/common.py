"""Timing helpers: best-of-N wall time, and ratios against a baseline measured in the same run."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of `repeats` runs, in seconds (the least disturbed by a noisy machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def report(name: str, seconds: float, baseline_name: str, baseline_seconds: float) -> None:
    print(f"{name:<46} {seconds * 1000:10.1f} ms   {seconds / baseline_seconds:6.2f}x {baseline_name}")
