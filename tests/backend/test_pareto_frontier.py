"""The Pareto frontier is exactly the definition's: it matches a brute-force O(N²) filter on random
clouds (many seeds, 1-5 objectives, mixed directions, large and full frontiers) and on adversarial sets
(ties, duplicates, constant objectives, single points, collinear points, integer grids, signed zeros,
non-finite values, which are excluded and reported); importing it pulls in no model runtime.

backend/pareto/: pure numpy, no database."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from backend.pareto import non_dominated, pareto_front
from tests.support.pareto_reference import brute_front, pure_python_front, random_directions
from tests.support.services import REPO_ROOT

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
