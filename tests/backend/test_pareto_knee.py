"""The knee of a Pareto frontier: the bend of a convex frontier and of an accuracy-size curve, in three
objectives, on degenerate frontiers and extreme magnitudes, ties to the first point along the first
objective, and always on the frontier.

backend/pareto/: pure numpy, no database."""

from __future__ import annotations

import numpy as np
import pytest

from backend.errors import InvalidRequest
from backend.pareto import knee_index, non_dominated, pareto_front
from tests.support.pareto_reference import brute_front, random_directions

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
