"""The sweep merge's "slower than a bigger point" flags read each chunk's exported file size (its manifest)
and its timed latency, as run_chunk stores them; a chunk without an export is never flagged."""

from __future__ import annotations

from typing import Any

import pytest

from worker.jobs.sweep import _slower_flags


def _chunk(label: str, size: int | None, p50: float, p90: float) -> tuple[dict[str, Any], dict[str, Any]]:
    export = None
    if size is not None:
        latency = {"batches": [{"batch_size": 1, "p50_ms": p50, "p90_ms": p90}]}
        export = {"sha256": "x", "manifest": {"file_size_bytes": size}, "latency": latency}
    return {"label": label, "index": 0}, {"label": label, "point": {}, "export": export}


def test_the_merge_flags_the_small_slow_point_against_the_bigger_file() -> None:
    flags = _slower_flags(
        [
            _chunk("fp32", 4000, 1.0, 1.1)[1],
            _chunk("w4-sym-g32", 1000, 2.0, 2.2)[1],
            _chunk("noise", None, 9.0, 9.0)[1],
        ]
    )
    assert flags[0] is None and flags[2] is None
    assert flags[1] is not None and flags[1]["than"] == "fp32"
    assert flags[1]["ratio"] == pytest.approx(2.0)
