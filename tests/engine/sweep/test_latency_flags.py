"""The "slower than a bigger point" flag of the sweep merge, on hand-made latency reports: beyond 5 % and
above the bigger point's p90 at the same batch size, the bigger point with the largest ratio named; noise,
equal sizes, missing timings and other batch sizes never flag."""

from __future__ import annotations

from typing import Any

import pytest

from worker.engine.sweep.latency_flags import slower_than_bigger


def _point(label: str, size: int | None, *batches: tuple[int, float, float]) -> dict[str, Any]:
    latency = {"batches": [{"batch_size": b, "p50_ms": p50, "p90_ms": p90} for b, p50, p90 in batches]}
    return {"label": label, "file_size_bytes": size, "latency": latency if batches else None}


def test_a_smaller_file_slower_beyond_noise_names_the_bigger_point() -> None:
    flags = slower_than_bigger(
        [
            _point("fp32", 4000, (1, 1.0, 1.02), (32, 10.0, 10.5)),
            _point("w8", 1000, (1, 0.9, 0.95), (32, 9.0, 9.2)),
            _point("w4-g32", 600, (1, 1.5, 1.6), (32, 9.5, 9.9)),
        ]
    )
    assert flags[0] is None and flags[1] is None
    flag = flags[2]
    assert flag is not None
    # candidates: fp32 at batch 1 (1.5), w8 at batch 1 (1.667), w8 at batch 32 (1.056, above its p90 9.2);
    # fp32 at batch 32 is faster. The largest ratio is named.
    assert flag["than"] == "w8" and flag["batch_size"] == 1
    assert flag["ratio"] == pytest.approx(1.5 / 0.9)
    assert (flag["file_size_bytes"], flag["than_file_size_bytes"]) == (600, 1000)


@pytest.mark.parametrize(
    ("small", "big"),
    [
        ((1, 1.04, 1.1), (1, 1.0, 1.01)),  # within 5 %
        ((1, 1.2, 1.3), (1, 1.0, 1.25)),  # 20 % slower, but inside the bigger point's own p50..p90 spread
        ((32, 2.0, 2.1), (1, 1.0, 1.01)),  # timed at different batch sizes: nothing to compare
    ],
)
def test_noise_and_unmatched_batches_never_flag(
    small: tuple[int, float, float], big: tuple[int, float, float]
) -> None:
    assert slower_than_bigger([_point("big", 2000, big), _point("small", 1000, small)]) == [None, None]


def test_equal_sizes_and_untimed_points_never_flag() -> None:
    flags = slower_than_bigger(
        [
            _point("a", 1000, (1, 1.0, 1.0)),
            _point("b", 1000, (1, 5.0, 5.0)),  # same size: not "bigger"
            _point("c", None, (1, 0.1, 0.1)),  # no export
            _point("d", 500),  # not timed
        ]
    )
    assert flags == [None, None, None, None]
