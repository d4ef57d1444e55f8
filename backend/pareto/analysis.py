"""Whole Pareto analyses (frontier, knee, exclusions, bounds) over an array, records or named columns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from backend.errors import InvalidRequest
from backend.pareto.definitions import Bound, Direction, FloatArray, ParetoResult, PointId, Points
from backend.pareto.dominance import lex_order, non_dominated_oriented
from backend.pareto.inputs import as_points, check_directions, check_ids, first_non_number, orient
from backend.pareto.knee import knee_index


def pareto_front(
    points: Points,
    directions: Sequence[str],
    *,
    ids: Sequence[PointId] | NDArray[np.integer[Any]] | None = None,
    objectives: Sequence[str] | None = None,
    constraints: Iterable[Bound] = (),
) -> ParetoResult:
    """Frontier, knee, exclusions and filtering of N × M `points` (one column per objective).

    `ids` name the rows (default 0..N-1), `objectives` name the columns (default "f0", "f1", ...); bounds
    refer to those names.
    """
    values = as_points(points)
    n, m = values.shape
    names = tuple(objectives) if objectives is not None else tuple(f"f{c}" for c in range(m))
    if len(names) != m or len(set(names)) != m:
        raise InvalidRequest(f"Give {m} distinct objective names, one per column; got {list(names)}.")
    row_ids = check_ids(ids, n)
    bounds = tuple(constraints)
    column = {name: c for c, name in enumerate(names)}
    for bound in bounds:
        if bound.objective not in column:
            raise InvalidRequest(f"A bound names {bound.objective!r}, which is not one of {list(names)}.")
    return analyse(values, check_directions(directions, m), names, row_ids, bounds, values, column)


def pareto_from_records(
    records: Iterable[Mapping[str, Any]],
    objectives: Mapping[str, str] | Sequence[tuple[str, str]],
    constraints: Iterable[Bound] = (),
) -> ParetoResult:
    """The same over records as a REST layer holds them: {"id": ..., "values": {objective: value}}.

    `objectives` maps the objective names to judge on, in order, to "min" or "max". A bound may also name a
    value that is not an objective (e.g. filter on latency, judge on KL and size). A missing or None value
    counts as NaN (the point is excluded); values are converted with float().
    """
    pairs = list(objectives.items()) if isinstance(objectives, Mapping) else list(objectives)
    if not pairs:
        raise InvalidRequest("Choose at least one objective.")
    names = tuple(str(name) for name, _ in pairs)
    if len(set(names)) != len(names):
        raise InvalidRequest(f"Objective names must be distinct; got {list(names)}.")
    directions = check_directions([direction for _, direction in pairs], len(pairs))
    bounds = tuple(constraints)
    extra = [b.objective for b in bounds if b.objective not in names]
    columns = list(names) + list(dict.fromkeys(extra))
    rows = records if isinstance(records, Sequence) else list(records)
    try:
        ids = [r["id"] for r in rows]
        table = [list(map(r["values"].get, columns)) for r in rows]
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidRequest(
            'Every point must look like {"id": ..., "values": {objective: number}}.'
        ) from exc
    try:
        everything = np.array(table, dtype=np.float64).reshape(len(rows), len(columns))
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(first_non_number(rows, columns)) from exc
    row_ids = check_ids(ids, len(ids))
    column = {name: c for c, name in enumerate(columns)}
    values = everything[:, : len(names)]
    return analyse(values, directions, names, row_ids, bounds, everything, column)


def pareto_from_columns(
    columns: Mapping[str, ArrayLike],
    ids: Sequence[PointId],
    objectives: Sequence[tuple[str, str]],
    constraints: Iterable[Bound] = (),
) -> ParetoResult:
    """The same over named columns of N values each (NaN: missing), e.g. a sweep's packed objectives:
    no per-point dictionaries. `columns` must hold every objective and every bound's name."""
    if not objectives:
        raise InvalidRequest("Choose at least one objective.")
    names = tuple(name for name, _ in objectives)
    if len(set(names)) != len(names):
        raise InvalidRequest(f"Objective names must be distinct; got {list(names)}.")
    directions = check_directions([direction for _, direction in objectives], len(names))
    bounds = tuple(constraints)
    used = list(names) + list(dict.fromkeys(b.objective for b in bounds if b.objective not in names))
    missing = [name for name in used if name not in columns]
    if missing:
        raise InvalidRequest(f"No values for {missing}.")
    n = len(ids)
    everything = np.empty((n, len(used)))
    for c, name in enumerate(used):
        column = np.asarray(columns[name], dtype=np.float64)
        if column.shape != (n,):
            raise InvalidRequest(f"Column {name!r} holds {column.shape} values, not one per point ({n}).")
        everything[:, c] = column
    row_ids = check_ids(ids, n)
    index = {name: c for c, name in enumerate(used)}
    return analyse(everything[:, : len(names)], directions, names, row_ids, bounds, everything, index)


def analyse(
    values: FloatArray,
    directions: tuple[Direction, ...],
    names: tuple[str, ...],
    ids: list[PointId],
    bounds: tuple[Bound, ...],
    everything: FloatArray,
    column: Mapping[str, int],
) -> ParetoResult:
    """`values`: the objective columns; `everything`: those plus constrained values, named by `column`."""
    n = len(values)
    used = sorted({*range(values.shape[1]), *(column[b.objective] for b in bounds)})
    finite = np.isfinite(everything[:, used]).all(axis=1)
    accepted = finite.copy()
    for bound in bounds:
        accepted &= bound.accepts(everything[:, column[bound.objective]])
    candidates = np.flatnonzero(accepted)
    oriented = orient(values[candidates], directions)
    on_front = candidates[non_dominated_oriented(oriented)]
    # Along the first objective: raw values, column 0 first, then input order (lexsort is stable).
    on_front = on_front[lex_order(values[on_front])]
    knee, method = knee_index(values[on_front], directions)
    return ParetoResult(
        objectives=names,
        directions=directions,
        frontier=tuple([ids[i] for i in on_front.tolist()]),
        knee=None if knee is None else ids[int(on_front[knee])],
        knee_method=method,
        excluded=tuple([ids[i] for i in np.flatnonzero(~finite).tolist()]),
        filtered=int(finite.sum() - len(candidates)),
        n_points=n,
        constraints=bounds,
    )
