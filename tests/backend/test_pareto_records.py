"""What the Pareto functions return and accept: the frontier ordered along the first objective, the
records and array APIs with their names and ids, constraints applied before the frontier (bounds inclusive
and intersecting), bad input an invalid request, empty records.

backend/pareto/: pure numpy, no database."""

from __future__ import annotations

import json

import numpy as np
import pytest

from backend.errors import InvalidRequest
from backend.pareto import Bound, non_dominated, pareto_from_records, pareto_front
from tests.support.pareto_reference import brute_front

# ---------------------------------------------------------------------------------------------------------
# Results: order, ids, records, constraints


def test_frontier_is_ordered_along_the_first_objective() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((500, 3))
    for directions in (["min", "min", "max"], ["max", "min", "min"]):
        result = pareto_front(x, directions)
        firsts = [x[int(i), 0] for i in result.frontier]
        assert firsts == sorted(firsts)
        assert set(result.frontier) == set(np.flatnonzero(brute_front(x, directions)).tolist())
    # Ties on the first objective: then by the second, then input order.
    result = pareto_front([[1, 2, 0], [1, 1, 1], [0, 9, 9], [1, 1, 1]], ["min", "min", "min"])
    assert result.frontier == (2, 1, 3, 0)


def records(rows: list[tuple[str, dict[str, float | None]]]) -> list[dict[str, object]]:
    return [{"id": i, "values": v} for i, v in rows]


SWEEP = records(
    [
        ("fp32", {"kl": 0.0, "size_bytes": 100.0, "top1": 1.0, "p50_ms": 9.0}),
        ("fp16", {"kl": 0.001, "size_bytes": 50.0, "top1": 0.999, "p50_ms": 5.0}),
        ("int8", {"kl": 0.01, "size_bytes": 25.0, "top1": 0.99, "p50_ms": 3.0}),
        ("int8-bad", {"kl": 0.02, "size_bytes": 25.0, "top1": 0.98, "p50_ms": 3.0}),
        ("int4", {"kl": 0.3, "size_bytes": 13.0, "top1": 0.9, "p50_ms": 2.5}),
        ("int2", {"kl": 2.0, "size_bytes": 7.0, "top1": 0.4, "p50_ms": 2.4}),
        ("broken", {"kl": None, "size_bytes": 20.0, "top1": 0.5, "p50_ms": 2.0}),
        ("no-latency", {"kl": 0.05, "size_bytes": 20.0, "top1": 0.95}),
    ]
)


def test_records_api() -> None:
    result = pareto_from_records(SWEEP, {"kl": "min", "size_bytes": "min"})
    assert result.frontier == ("fp32", "fp16", "int8", "no-latency", "int4", "int2")
    assert result.excluded == ("broken",)
    assert result.filtered == 0
    # Normalised over the frontier, KL spans 0-2 nats: 0.05 nats at 20 bytes bends the curve most.
    assert result.knee == "no-latency"
    doc = result.to_dict()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["objectives"] == [
        {"name": "kl", "direction": "min"},
        {"name": "size_bytes", "direction": "min"},
    ]
    assert doc["n_points"] == 8 and doc["n_candidates"] == 7
    # Pairs work as well as a mapping; a "max" objective.
    pairs = pareto_from_records(SWEEP, [("top1", "max"), ("size_bytes", "min")])
    assert set(pairs.frontier) == {"fp32", "fp16", "int8", "no-latency", "int4", "int2"}
    assert pairs.frontier[0] == "int2"  # ascending raw top-1


def test_constraints_filter_before_the_frontier() -> None:
    bounds = [Bound("kl", at_most=0.3), Bound("top1", at_least=0.95)]
    result = pareto_from_records(SWEEP, {"kl": "min", "size_bytes": "min"}, bounds)
    assert result.frontier == ("fp32", "fp16", "int8", "no-latency")  # int4: top1 0.9; int2: kl 2
    assert result.filtered == 2  # int4 (top1 0.9), int2; int8-bad passes the bounds and is dominated
    assert result.excluded == ("broken",)
    # A bound on a value that is not an objective: a point without it is excluded, not filtered.
    fast = pareto_from_records(SWEEP, {"kl": "min", "size_bytes": "min"}, [Bound("p50_ms", at_most=3.0)])
    assert fast.frontier == ("int8", "int4", "int2")
    assert fast.excluded == ("broken", "no-latency")
    assert fast.filtered == 2  # fp32, fp16
    assert fast.to_dict()["constraints"] == [{"objective": "p50_ms", "at_least": None, "at_most": 3.0}]


def test_bounds_are_inclusive_and_intersect() -> None:
    x = np.arange(10, dtype=float)[:, None]
    result = pareto_front(
        x, ["max"], constraints=[Bound("f0", at_least=2, at_most=7), Bound("f0", at_most=5)]
    )
    assert result.frontier == (5,)
    assert result.filtered == 6
    everything_out = pareto_front(x, ["max"], constraints=[Bound("f0", at_least=100)])
    assert everything_out.frontier == () and everything_out.knee is None
    assert everything_out.knee_method == "none" and everything_out.filtered == 10


def test_array_api_names_and_ids() -> None:
    x = [[0.1, 10], [0.2, 5], [0.3, 20]]
    result = pareto_front(
        x,
        ["min", "min"],
        ids=["a", "b", "c"],
        objectives=["kl", "size"],
        constraints=[Bound("size", at_most=15)],
    )
    assert result.frontier == ("a", "b") and result.filtered == 1
    assert result.objectives == ("kl", "size")
    assert pareto_front(x, ["min", "min"], ids=np.array([7, 8, 9])).frontier == (7, 8)


@pytest.mark.parametrize(
    "call",
    [
        lambda: non_dominated([[1, 2]], ["min"]),  # directions do not match the columns
        lambda: non_dominated([[1, 2]], ["min", "largest"]),
        lambda: non_dominated([[1, 2]], "mm"),
        lambda: non_dominated([1, 2, 3], ["min"]),  # not 2-D
        lambda: non_dominated(np.zeros((3, 0)), []),
        lambda: pareto_front([[1]], ["min"], ids=["a", "b"]),
        lambda: pareto_front([[1], [2]], ["min"], ids=["a", "a"]),
        lambda: pareto_front([[1]], ["min"], constraints=[Bound("kl", at_most=1)]),
        lambda: pareto_front([[1, 2]], ["min", "min"], objectives=["a", "a"]),
        lambda: Bound("kl", at_least=2, at_most=1),
        lambda: Bound("kl", at_most=float("nan")),
        lambda: pareto_from_records([{"id": "a"}], {"kl": "min"}),
        lambda: pareto_from_records([{"id": "a", "values": {"kl": "high"}}], {"kl": "min"}),
        lambda: pareto_from_records([{"id": "a", "values": {"kl": [1, 2]}}], {"kl": "min"}),
        lambda: pareto_from_records([], {}),
        lambda: pareto_from_records(records([("a", {"kl": 1.0}), ("a", {"kl": 2.0})]), {"kl": "min"}),
    ],
)
def test_bad_input_is_an_invalid_request(call: object) -> None:
    with pytest.raises(InvalidRequest):
        call()  # type: ignore[operator]


def test_empty_records() -> None:
    result = pareto_from_records([], {"kl": "min", "size": "min"})
    assert result.frontier == () and result.knee is None and result.n_points == 0
