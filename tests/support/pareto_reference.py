"""Pareto frontiers written from the definition, independently of backend/pareto/: a brute-force
O(N²) filter over numpy rows, the same in plain Python, and random mixed directions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


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
