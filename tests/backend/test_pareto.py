"""Pareto frontier, knee and filtering (backend/pareto/): pure numpy, no database.

The frontier is checked against a brute-force O(N²) filter written here from the definition, on random
clouds (many seeds, 1-5 objectives, mixed directions) and on adversarial sets: ties, duplicates, constant
objectives, single points, collinear points, integer grids, signed zeros, missing values.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from backend.errors import InvalidRequest
from backend.pareto import Bound, knee_index, non_dominated, pareto_from_records, pareto_front
from tests.support.services import REPO_ROOT

# ---------------------------------------------------------------------------------------------------------
# References written from the definition, independently of the implementation


def brute_front(points: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    """Row i is on the frontier when it is finite and no finite row j is >= on all and > on one."""
    x = np.asarray(points, dtype=float)
    n = len(x)
    finite = np.isfinite(x).all(axis=1) if n else np.zeros(0, bool)
    out = np.zeros(n, dtype=bool)
    for i in range(n):
        if not finite[i]:
            continue
        good = np.ones(n, dtype=bool)  # j at least as good as i everywhere
        strict = np.zeros(n, dtype=bool)  # j strictly better than i somewhere
        for c, d in enumerate(directions):
            if d == "min":
                good &= x[:, c] <= x[i, c]
                strict |= x[:, c] < x[i, c]
            else:
                good &= x[:, c] >= x[i, c]
                strict |= x[:, c] > x[i, c]
        out[i] = not (good & strict & finite).any()
    return out


def pure_python_front(points: list[list[float]], directions: Sequence[str]) -> list[int]:
    """The same in plain Python, for small sets."""

    def better_or_equal(a: float, b: float, d: str) -> bool:
        return a <= b if d == "min" else a >= b

    def dominates(p: list[float], q: list[float]) -> bool:
        return all(better_or_equal(a, b, d) for a, b, d in zip(p, q, directions, strict=True)) and any(
            a != b for a, b in zip(p, q, strict=True)
        )

    ok = [all(math.isfinite(v) for v in p) for p in points]
    return [
        i
        for i, p in enumerate(points)
        if ok[i] and not any(ok[j] and dominates(q, p) for j, q in enumerate(points) if j != i)
    ]


def random_directions(rng: np.random.Generator, m: int) -> list[str]:
    return [str(d) for d in rng.choice(["min", "max"], size=m)]


# ---------------------------------------------------------------------------------------------------------
# The frontier against the references


@pytest.mark.parametrize("m", [2, 3])
def test_random_clouds_match_brute_force(m: int) -> None:
    for seed in range(150):
        rng = np.random.default_rng(seed * 10 + m)
        n = int(rng.integers(0, 400))
        kind = seed % 3
        if kind == 0:
            x = rng.random((n, m))
        elif kind == 1:
            x = rng.normal(size=(n, m)) * rng.uniform(1e-3, 1e6, size=m)  # wildly different scales
        else:
            x = rng.integers(0, 6, size=(n, m)).astype(float)  # a grid: many ties and duplicates
        directions = random_directions(rng, m)
        got = non_dominated(x, directions)
        np.testing.assert_array_equal(got, brute_front(x, directions), err_msg=f"seed {seed}, {kind=}")


@pytest.mark.parametrize("m", [1, 4, 5])
def test_other_numbers_of_objectives_match_brute_force(m: int) -> None:
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed * 10 + m)
        n = int(rng.integers(0, 500))
        x = rng.random((n, m)) if seed % 2 else rng.integers(0, 4, size=(n, m)).astype(float)
        directions = random_directions(rng, m)
        np.testing.assert_array_equal(non_dominated(x, directions), brute_front(x, directions))


def test_small_sets_match_plain_python() -> None:
    for seed in range(300):
        rng = np.random.default_rng(5000 + seed)
        m = int(rng.integers(1, 5))
        n = int(rng.integers(0, 25))
        x = rng.integers(0, 3, size=(n, m)).astype(float)
        x[rng.random((n, m)) < 0.05] = np.nan
        directions = random_directions(rng, m)
        got = np.flatnonzero(non_dominated(x, directions)).tolist()
        assert got == pure_python_front(x.tolist(), directions), f"seed {seed}"


@pytest.mark.parametrize("m", [2, 3, 4])
def test_large_clouds_and_full_frontiers(m: int) -> None:
    """Thousands of points, where the pivot pre-filter and the blocks take part."""
    rng = np.random.default_rng(42 + m)
    cloud = rng.random((3000, m))
    sphere = np.abs(rng.normal(size=(3000, m)))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)  # every point on the frontier when minimising
    sphere = -sphere  # ...so negate: on the frontier when minimising, all of them
    mixed = np.vstack([sphere, sphere[:500], rng.random((1000, m)) * 0.5])  # duplicates and dominated
    for x in (cloud, sphere, mixed):
        directions = ["min"] * m
        np.testing.assert_array_equal(non_dominated(x, directions), brute_front(x, directions))
    assert non_dominated(sphere, ["min"] * m).all()


# ---------------------------------------------------------------------------------------------------------
# Adversarial sets


def test_identical_points_are_all_kept() -> None:
    x = np.ones((50, 3))
    assert non_dominated(x, ["min", "max", "min"]).all()
    x = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 2.0], [2.0, 2.0], [2.0, 2.0]])
    np.testing.assert_array_equal(non_dominated(x, ["min", "min"]), [True, True, True, False, False])


def test_ties_on_one_objective() -> None:
    # Same KL, different size: the smaller size dominates; same point twice: both kept.
    x = np.array([[0.1, 5.0], [0.1, 3.0], [0.1, 3.0], [0.0, 9.0], [0.2, 3.0]])
    np.testing.assert_array_equal(non_dominated(x, ["min", "min"]), [False, True, True, True, False])


def test_constant_objective() -> None:
    rng = np.random.default_rng(7)
    for m in (2, 3):
        x = rng.random((200, m))
        x[:, 1] = 4.0
        for directions in (["min"] * m, ["max"] * m):
            np.testing.assert_array_equal(non_dominated(x, directions), brute_front(x, directions))
    # A constant objective adds nothing: the frontier is that of the other objectives.
    x = rng.random((300, 3))
    x[:, 2] = -1.0
    np.testing.assert_array_equal(non_dominated(x, ["min"] * 3), non_dominated(x[:, :2], ["min"] * 2))


def test_single_point_and_empty() -> None:
    for m in (1, 2, 3, 4):
        assert non_dominated(np.full((1, m), 3.0), ["min"] * m).tolist() == [True]
        assert non_dominated(np.zeros((0, m)), ["max"] * m).tolist() == []


def test_collinear_points() -> None:
    t = np.linspace(0, 1, 11)
    tradeoff = np.column_stack([t, 1 - t])  # every point is a tradeoff
    assert non_dominated(tradeoff, ["min", "min"]).all()
    assert non_dominated(tradeoff, ["max", "max"]).all()
    same_way = np.column_stack([t, t])  # one point better on both
    np.testing.assert_array_equal(non_dominated(same_way, ["min", "min"]), t == 0)
    np.testing.assert_array_equal(non_dominated(same_way, ["max", "max"]), t == 1)
    plane = np.column_stack([t, 1 - t, np.full_like(t, 0.5)])
    assert non_dominated(plane, ["min"] * 3).all()


def test_integer_grid_with_many_ties() -> None:
    g = np.array([(a, b, c) for a in range(5) for b in range(5) for c in range(5)], dtype=float)
    x = np.vstack([g, g, g])  # every point three times
    for directions in (["min"] * 3, ["max", "min", "max"]):
        mask = non_dominated(x, directions)
        np.testing.assert_array_equal(mask, brute_front(x, directions))
        assert mask.sum() == 3  # the one best corner, three times
    # The anti-diagonal plane a + b + c = 6 of the grid: all of it is a tradeoff.
    plane = g[g.sum(axis=1) == 6]
    assert non_dominated(plane, ["min"] * 3).all()


def test_signed_zero_is_one_value() -> None:
    x = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [1.0, -0.0]])
    assert non_dominated(x, ["min", "min"]).all()
    x3 = np.array([[0.0, 1.0, 0.0], [-0.0, 1.0, -0.0], [0.0, 1.0, 0.5]])
    np.testing.assert_array_equal(non_dominated(x3, ["min"] * 3), [True, True, False])


def test_non_finite_points_are_excluded_and_reported() -> None:
    x = np.array([[1.0, 1.0], [np.nan, 0.0], [0.0, np.inf], [2.0, 2.0], [-np.inf, 5.0], [3.0, 0.5]])
    np.testing.assert_array_equal(non_dominated(x, ["min", "min"]), [True, False, False, False, False, True])
    result = pareto_front(x, ["min", "min"])
    assert result.excluded == (1, 2, 4)
    assert result.frontier == (0, 5)
    assert result.n_candidates == 3
    # None in a nested list counts as missing too.
    rows: list[list[float | None]] = [[1, None], [2, 3]]
    assert pareto_front(rows, ["min", "min"]).excluded == (0,)


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


# ---------------------------------------------------------------------------------------------------------
# The knee


CONVEX = np.array([[0.0, 10.0], [1.0, 4.0], [2.0, 2.0], [4.0, 1.0], [10.0, 0.0]])


def test_knee_of_a_convex_frontier_is_the_bend() -> None:
    assert knee_index(CONVEX, ["min", "min"]) == (2, "max_distance")
    # Invariant to units and offsets (each objective is normalised over the frontier).
    scaled = CONVEX * [1e-3, 1e9] + [5.0, -3.0]
    assert knee_index(scaled, ["min", "min"]) == (2, "max_distance")
    # Mirrored into "max" objectives: the same point.
    assert knee_index(-CONVEX, ["max", "max"]) == (2, "max_distance")
    assert knee_index(CONVEX * [1, -1], ["min", "max"]) == (2, "max_distance")
    # Through the whole analysis, with points off the frontier that must not matter.
    x = np.vstack([CONVEX, CONVEX + 0.5, [[9.0, 9.0]]])
    result = pareto_front(x, ["min", "min"], ids=[f"p{i}" for i in range(len(x))])
    assert result.frontier == ("p0", "p1", "p2", "p3", "p4")
    assert result.knee == "p2" and result.knee_method == "max_distance"


def test_knee_of_an_accuracy_size_curve() -> None:
    # Agreement (max) against size (min): agreement holds until 8 bits, then collapses.
    bits = [2, 3, 4, 6, 8, 16, 32]
    agreement = [0.30, 0.62, 0.90, 0.975, 0.99, 0.999, 1.0]
    result = pareto_front(np.column_stack([bits, agreement]), ["min", "max"], ids=[f"w{b}" for b in bits])
    assert result.frontier == tuple(f"w{b}" for b in bits)
    assert result.knee == "w6"


def test_knee_in_three_objectives() -> None:
    front = np.array(
        [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.5, 0.5, 0.0],
            [0.0, 0.5, 0.5],
            [0.5, 0.0, 0.5],
            [0.15, 0.15, 0.15],  # well inside the simplex: the bend
            [0.3, 0.3, 0.1],
        ]
    )
    assert non_dominated(front, ["min"] * 3).all()
    assert knee_index(front, ["min"] * 3) == (6, "max_distance")


def test_knee_degenerate_frontiers() -> None:
    assert knee_index(np.zeros((0, 2)), ["min", "min"]) == (None, "none")
    assert knee_index([[3.0, 4.0]], ["min", "min"]) == (0, "single")
    assert knee_index([[3.0, 4.0]] * 4, ["min", "max"]) == (0, "single")  # duplicates of one point
    # Two points: nothing between the ends; normalised they are (0, 1) and (1, 0), equally far from
    # utopia whatever the raw values: the first.
    assert knee_index([[0.0, 1.0], [1.0, 0.0]], ["min", "min"]) == (0, "closest_to_utopia")
    assert knee_index([[0.0, 1.0], [2.0, 0.9]], ["min", "min"]) == (0, "closest_to_utopia")
    # A straight frontier: no bend, the point closest to utopia is the middle.
    t = np.linspace(0, 1, 5)
    assert knee_index(np.column_stack([t, 1 - t]), ["min", "min"]) == (2, "closest_to_utopia")
    # Concave: everything bulges away from utopia; the ends are closest.
    concave = np.array([[0.0, 1.0], [0.8, 0.8], [1.0, 0.0]])
    assert knee_index(concave, ["min", "min"]) == (0, "closest_to_utopia")
    # A constant objective is dropped (range 0): the knee is that of the others, no division by zero.
    with np.errstate(all="raise"):
        const = np.column_stack([CONVEX, np.full(len(CONVEX), 7.0)])
        assert knee_index(const, ["min", "min", "max"]) == (2, "max_distance")
        one_left = np.array([[1.0, 5.0, 5.0], [1.0, 5.0, 5.0], [0.0, 5.0, 5.0]])
        assert knee_index(one_left, ["max", "min", "min"]) == (0, "closest_to_utopia")
    # Three objectives, only two points: extremes coincide, fall back.
    assert knee_index([[0.0, 1.0, 0.5], [1.0, 0.0, 0.2]], ["min"] * 3)[1] == "closest_to_utopia"
    with pytest.raises(InvalidRequest):
        knee_index([[np.nan, 1.0]], ["min", "min"])


def test_extreme_magnitudes() -> None:
    with np.errstate(all="raise"):
        x = np.array([[-1e308, 1e308], [0.0, 0.0], [1e308, -1e308], [1e308, 1e308]])
        np.testing.assert_array_equal(non_dominated(x, ["min", "min"]), [True, True, True, False])
        assert pareto_front(x, ["min", "min"]).knee == 1
        big = np.random.default_rng(0).uniform(-1.0, 1.0, size=(1000, 3)) * 1.7e308
        np.testing.assert_array_equal(non_dominated(big, ["min"] * 3), brute_front(big, ["min"] * 3))
        tiny = CONVEX * 1e-300
        assert knee_index(tiny, ["min", "min"]) == (2, "max_distance")


def test_knee_ties_go_to_the_first_point_along_the_first_objective() -> None:
    symmetric = np.array([[0.0, 1.0], [0.1, 0.3], [0.3, 0.1], [1.0, 0.0]])
    assert knee_index(symmetric, ["min", "min"]) == (1, "max_distance")
    reversed_input = pareto_front(symmetric[::-1], ["min", "min"], ids=["d", "c", "b", "a"])
    assert reversed_input.frontier == ("a", "b", "c", "d")
    assert reversed_input.knee == "b"


def test_knee_is_always_on_the_frontier() -> None:
    for seed in range(100):
        rng = np.random.default_rng(9000 + seed)
        m = int(rng.integers(1, 5))
        x = rng.random((int(rng.integers(1, 200)), m)) if seed % 2 else rng.integers(0, 3, (50, m)) * 1.0
        result = pareto_front(x, random_directions(rng, m))
        assert result.knee in result.frontier


# ---------------------------------------------------------------------------------------------------------


def test_importing_pareto_pulls_in_no_model_runtime() -> None:
    code = (
        "import sys, backend.pareto\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'onnxruntime', 'onnx', 'scipy', 'sklearn', 'worker')]\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
