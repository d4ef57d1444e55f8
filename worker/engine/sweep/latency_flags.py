"""Points that are slower than a bigger one: the domain notes' warning that low-bit weights can run slower
than wider ones (dequantization overhead, kernels tuned for another width), made visible on the frontier.

`slower_than_bigger(points)` takes each point's exported file size and its measured latency per batch size
(p50, p90) and flags a point whose p50 exceeds that of a point with a *larger* exported file beyond noise: by
more than `latency.SLOWER_MARGIN` (5 %) relative, and above that point's own p90 (its measured spread), at the
same batch size. The flag names the bigger point with the largest ratio: {"than", "ratio", "batch_size",
"p50_ms", "than_p50_ms", "file_size_bytes", "than_file_size_bytes"}. Plain dicts in, plain dicts out (the
sweep merge calls it on the chunk results)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worker.engine.sweep.latency import SLOWER_MARGIN


def _timings(latency: Mapping[str, Any] | None) -> dict[int, tuple[float, float]]:
    out: dict[int, tuple[float, float]] = {}
    for batch in (latency or {}).get("batches") or []:
        p50, p90 = batch.get("p50_ms"), batch.get("p90_ms")
        if isinstance(p50, int | float) and isinstance(p90, int | float) and p50 > 0:
            out[int(batch["batch_size"])] = (float(p50), float(p90))
    return out


def slower_than_bigger(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
    """points: [{"label", "file_size_bytes" (None: no export), "latency" (measure_latency's report or
    None)}]; returns one flag or None per point, in order (see the module docstring)."""
    timed = [(p, _timings(p.get("latency"))) for p in points]
    flags: list[dict[str, Any] | None] = []
    for point, mine in timed:
        size = point.get("file_size_bytes")
        best: dict[str, Any] | None = None
        if isinstance(size, int | float) and mine:
            for other, theirs in timed:
                bigger = other.get("file_size_bytes")
                if other is point or not isinstance(bigger, int | float) or bigger <= size:
                    continue
                for batch_size, (p50, _) in mine.items():
                    if batch_size not in theirs:
                        continue
                    their_p50, their_p90 = theirs[batch_size]
                    ratio = p50 / their_p50
                    if (
                        ratio > 1.0 + SLOWER_MARGIN
                        and p50 > their_p90
                        and (best is None or ratio > best["ratio"])
                    ):
                        best = {
                            "than": str(other.get("label")),
                            "ratio": ratio,
                            "batch_size": batch_size,
                            "p50_ms": p50,
                            "than_p50_ms": their_p50,
                            "file_size_bytes": int(size),
                            "than_file_size_bytes": int(bigger),
                        }
        flags.append(best)
    return flags
