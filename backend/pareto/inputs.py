"""Validation of a Pareto analysis's inputs, and orientation: every "max" column negated so lower is better."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from backend.errors import InvalidRequest
from backend.pareto.definitions import Direction, FloatArray, PointId, Points


def as_points(points: Points) -> FloatArray:
    try:
        x = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest("Points must be numbers (an N × M array; None counts as missing).") from exc
    if x.ndim != 2 or x.shape[1] < 1:
        raise InvalidRequest(f"Points must be an N × M array with M ≥ 1 objectives; got shape {x.shape}.")
    return x


def check_directions(directions: Sequence[str], m: int) -> tuple[Direction, ...]:
    if isinstance(directions, str):
        raise InvalidRequest('Give one direction per objective, e.g. ["min", "max"].')
    out: list[Direction] = []
    for d in directions:
        if d == "min":
            out.append("min")
        elif d == "max":
            out.append("max")
        else:
            raise InvalidRequest(f'An objective\'s direction must be "min" or "max", not {d!r}.')
    if len(out) != m:
        raise InvalidRequest(f"Give one direction per objective: {m} objectives, {len(out)} directions.")
    return tuple(out)


def orient(x: FloatArray, directions: Sequence[Direction]) -> FloatArray:
    """Negate the "max" columns so that lower is better everywhere."""
    if all(d == "min" for d in directions):
        return x
    sign = np.array([-1.0 if d == "max" else 1.0 for d in directions])
    return np.asarray(x * sign)


def oriented(points: Points, directions: Sequence[str]) -> FloatArray:
    x = as_points(points)
    return orient(x, check_directions(directions, x.shape[1]))


def check_ids(ids: Sequence[PointId] | NDArray[np.integer[Any]] | None, n: int) -> list[PointId]:
    if ids is None:
        return list(range(n))
    out: list[Any] = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
    if len(out) != n:
        raise InvalidRequest(f"Give one id per point: {n} points, {len(out)} ids.")
    if not set(map(type, out)) <= {str, int}:  # the common case costs one pass
        for k, i in enumerate(out):
            if isinstance(i, np.integer):
                out[k] = int(i)
            elif isinstance(i, bool) or not isinstance(i, str | int):
                raise InvalidRequest(f"A point id must be a string or an integer, not {i!r}.")
    if len(set(out)) != n:
        seen: set[PointId] = set()
        for i in out:
            if i in seen:
                raise InvalidRequest(f"Point ids must be unique; {i!r} appears more than once.")
            seen.add(i)
    return out


def first_non_number(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    for r in rows:
        for name in columns:
            value = r["values"].get(name)
            if value is None:
                continue
            try:
                float(value)
            except (TypeError, ValueError):
                return f"Point {r['id']!r}: {name} must be a number, not {value!r}."
    return "Every value must be a number or null."
