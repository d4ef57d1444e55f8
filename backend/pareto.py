"""Pareto frontier and knee point of a sweep: N configurations × M objectives, in pure Python + numpy.

Runs in the API process, so it imports nothing but numpy (never torch, onnxruntime or scipy).

Definitions (the same as DESIGN.md):

- Every objective has a direction, "min" (KL, size, latency) or "max" (top-1 agreement). Internally each
  "max" column is negated so that lower is better everywhere.
- Point a *dominates* point b when a is at least as good as b on every objective and strictly better on one.
  A point is on the frontier when no other point dominates it.
- **Duplicates**: identical points do not dominate each other, so when a point is on the frontier every
  copy of it is on the frontier too (all are kept, each under its own id). -0.0 and 0.0 are the same value.
- **Missing values**: a point with a NaN, ±inf or missing (None) value in any objective it is judged on
  (including an objective that only appears in a constraint) is *excluded*: it is neither on nor off the
  frontier, and its id is reported in `ParetoResult.excluded`.
- **Constraints** (`Bound`) are inclusive bounds applied before the frontier; a point outside any bound is
  *filtered*, and `ParetoResult.filtered` counts them. So the frontier is the best among the acceptable.

Algorithms. One objective: the minimum. Two or more: first a vectorised pre-filter (the 32 points with
the smallest sums of range-normalised values act as pivots, and every point a pivot dominates is dropped —
most of a random cloud, O(N·M)); the survivors are sorted lexicographically and duplicates merged
(O(N log N)). In that order a point can only be dominated by an earlier one, and column 0 need not be
compared again. Two objectives: a running minimum of column 1 (vectorised, O(N log N) with the sort).
Three: Kung's sweep keeping the 2D staircase of columns 1-2 in bisected lists (O(N log N) comparisons,
one Python step per survivor). Four or more: blocks of survivors, each compared at once with the frontier
found so far and with itself (vectorised, O(N·F·M) for a frontier of F points). 10,000 × 3: about 2 ms for a
random cloud, about 12 ms when every point is on the frontier (bench/bench_pareto.py).

Knee point (`knee_index`): over the frontier only, each objective is oriented so lower is better and
normalised to [0, 1] by its range over the frontier; objectives that are constant over the frontier
(range 0) carry no information and are dropped, so nothing is ever divided by zero. For each remaining
objective c the *extreme point* is the frontier point lying most along axis c: the smallest maximum over
the other normalised objectives (ties: the smaller value on c, then the earlier point; as in NSGA-III's
achievement scalarising function; in 2D these are the two ends of the frontier). When those extreme points
are distinct and span a hyperplane whose normal is strictly positive in every objective (it faces the
utopia point, the origin), the knee is the point farthest from that hyperplane on the utopia side (in 2D:
farthest below the line through the two ends of the frontier — where the tradeoff bends most). Otherwise — a frontier
of 1 or 2 points, collinear/coplanar points, a concave frontier with nothing on the utopia side, coincident
or dependent extreme points — the knee is the point closest (Euclidean) to the utopia point. Ties (within
1e-12) go to the earliest point, which in `ParetoResult` means the first along the first objective — so a
2-point frontier in 2D (normalised to (0, 1) and (1, 0), always a tie) has its first point as the knee.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from backend.errors import InvalidRequest

Direction: TypeAlias = Literal["min", "max"]
PointId: TypeAlias = str | int
# An N × M array, or nested lists in which None stands for a missing value.
Points: TypeAlias = ArrayLike | Sequence[Sequence[float | None]]
KneeMethod: TypeAlias = Literal["max_distance", "closest_to_utopia", "single", "none"]
FloatArray: TypeAlias = NDArray[np.float64]
BoolArray: TypeAlias = NDArray[np.bool_]
IntArray: TypeAlias = NDArray[np.intp]

DIRECTIONS: tuple[Direction, ...] = ("min", "max")

# Points per block in the 4+ objective pass; the comparison matrix against the frontier is capped at about
# _BLOCK_CELLS booleans so that a long frontier does not blow the cache.
_MAX_BLOCK = 1024
_MIN_BLOCK = 64
_BLOCK_CELLS = 1 << 18
_PIVOTS = 32
_TIE = 1e-12  # knee ties and "nothing beyond the hyperplane", in normalised units


@dataclass(frozen=True)
class Bound:
    """An inclusive bound on one objective, e.g. Bound("kl", at_most=0.05), Bound("top1", at_least=0.98).

    A point is kept when at_least <= value <= at_most (either side optional). Bounds are in the objective's
    own units and do not depend on its direction.
    """

    objective: str
    at_least: float | None = None
    at_most: float | None = None

    def __post_init__(self) -> None:
        for side in (self.at_least, self.at_most):
            if side is not None and (isinstance(side, bool) or not math.isfinite(side)):
                raise InvalidRequest(
                    f"The bound on {self.objective!r} must be a finite number, not {side!r}."
                )
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise InvalidRequest(
                f"The bound on {self.objective!r} is empty: at_least={self.at_least} > at_most={self.at_most}."
            )

    def accepts(self, values: FloatArray) -> BoolArray:
        keep = np.ones(values.shape, dtype=bool)
        if self.at_least is not None:
            keep &= values >= self.at_least
        if self.at_most is not None:
            keep &= values <= self.at_most
        return keep

    def to_dict(self) -> dict[str, Any]:
        return {"objective": self.objective, "at_least": self.at_least, "at_most": self.at_most}


@dataclass(frozen=True)
class ParetoResult:
    """The frontier of a set of points after exclusion (non-finite values) and filtering (bounds).

    `frontier` is ordered along the first objective: ascending raw value of the first objective, then of
    the others in order, then input order (the order in which a chart's x axis meets them).
    """

    objectives: tuple[str, ...]
    directions: tuple[Direction, ...]
    frontier: tuple[PointId, ...]
    knee: PointId | None
    knee_method: KneeMethod
    excluded: tuple[PointId, ...]  # a NaN, ±inf or missing value in an objective or constrained value
    filtered: int  # finite, but outside a bound
    n_points: int  # every point given
    constraints: tuple[Bound, ...] = ()

    @property
    def n_candidates(self) -> int:
        """Points that entered the frontier computation (neither excluded nor filtered)."""
        return self.n_points - len(self.excluded) - self.filtered

    def to_dict(self) -> dict[str, Any]:
        return {
            "objectives": [
                {"name": name, "direction": direction}
                for name, direction in zip(self.objectives, self.directions, strict=True)
            ],
            "frontier": list(self.frontier),
            "knee": self.knee,
            "knee_method": self.knee_method,
            "excluded": list(self.excluded),
            "filtered": self.filtered,
            "n_points": self.n_points,
            "n_candidates": self.n_candidates,
            "constraints": [bound.to_dict() for bound in self.constraints],
        }


# --------------------------------------------------------------------------------------------------------
# The frontier


def non_dominated(points: Points, directions: Sequence[str]) -> BoolArray:
    """Boolean mask over the N rows of `points` (N × M): True where no other row dominates it.

    Rows with a NaN or ±inf value are False (neither on nor off the frontier; `pareto_front` reports them).
    Identical rows are all True or all False. `np.flatnonzero(mask)` gives the indices.
    """
    oriented = _oriented(points, directions)
    finite = np.isfinite(oriented).all(axis=1)
    if finite.all():
        return _non_dominated(oriented)
    mask = np.zeros(len(oriented), dtype=bool)
    rows = np.flatnonzero(finite)
    mask[rows] = _non_dominated(oriented[rows])
    return mask


def _non_dominated(x: FloatArray) -> BoolArray:
    """Non-dominated mask of finite points where lower is better in every column."""
    n, m = x.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    if m == 1:
        return np.asarray(x[:, 0] == x[:, 0].min())
    x = x + 0.0  # -0.0 -> 0.0, so that the two compare and group as one value
    mask = np.zeros(n, dtype=bool)
    rows = _prefilter(x)
    mask[rows] = _exact(x[rows])
    return mask


def _prefilter(x: FloatArray) -> IntArray:
    """Rows that none of a few pivots dominates: one vectorised pass that removes most of a random cloud.

    The pivots are the rows with the smallest sums of range-normalised values, which on average dominate
    the most. Whatever a pivot dominates is off the frontier, and everything on it survives.
    """
    n = len(x)
    if n <= 8 * _PIVOTS:
        return np.arange(n)
    cols = list(np.ascontiguousarray(x.T))  # column-wise: reductions over a narrow axis 0 are slow
    score = np.zeros(n)
    for col in cols:
        scale = np.abs(col).max()  # first, so that the range cannot overflow (±1e308)
        if scale > 0:
            unit = col / scale
            lo, hi = unit.min(), unit.max()
            if hi > lo:
                score += (unit - lo) / (hi - lo)
    pivots = np.argpartition(score, _PIVOTS)[:_PIVOTS]
    no_worse = np.ones((_PIVOTS, n), dtype=bool)
    better = np.zeros((_PIVOTS, n), dtype=bool)
    for col in cols:
        pivot = col[pivots][:, None]
        no_worse &= pivot <= col
        better |= pivot < col
    return np.flatnonzero(~(no_worse & better).any(axis=0))


def _exact(x: FloatArray) -> BoolArray:
    n, m = x.shape
    order = _lex_order(x)
    xs = x[order]
    first = np.ones(n, dtype=bool)  # the first row of each group of identical rows
    first[1:] = np.any(xs[1:] != xs[:-1], axis=1)
    group = np.cumsum(first) - 1
    unique = xs[first]
    # In lexicographic order, with duplicates merged, row j dominates row i exactly when j comes before i
    # and is no worse in columns 1..M-1 (column 0 is then no worse by the sort, and the rows differ).
    if m == 2:
        keep = _sweep_2d(unique)
    elif m == 3:
        keep = _staircase_3d(unique)
    else:
        keep = _blockwise(unique)
    mask = np.empty(n, dtype=bool)
    mask[order] = keep[group]
    return mask


def _lex_order(x: FloatArray) -> IntArray:
    """Row order by column 0, then 1, ...; a plain argsort of column 0 when it has no ties (faster)."""
    order = np.argsort(x[:, 0])
    first = x[order, 0]
    if np.all(first[1:] != first[:-1]):
        return order
    return np.lexsort(x.T[::-1])


def _sweep_2d(unique: FloatArray) -> BoolArray:
    """Two objectives: a row is kept when every earlier row is worse in column 1. O(N)."""
    y = unique[:, 1]
    best_before = np.minimum.accumulate(y)
    keep = np.ones(len(y), dtype=bool)
    keep[1:] = best_before[:-1] > y[1:]
    return keep


def _staircase_3d(unique: FloatArray) -> BoolArray:
    """Three objectives (Kung et al.): sweep in order, keeping the 2D frontier of columns (1, 2) so far.

    The staircase holds y ascending and z descending; a row is dominated when the staircase point with the
    largest y <= its y has z <= its z. Bisection per row; the list updates are memmoves.
    """
    keep = np.zeros(len(unique), dtype=bool)
    ys: list[float] = []
    neg_zs: list[float] = []  # -z, ascending, so that bisect works on it
    for i, (y, z) in enumerate(zip(unique[:, 1].tolist(), unique[:, 2].tolist(), strict=True)):
        p = bisect_right(ys, y)
        if p and -neg_zs[p - 1] <= z:
            continue
        keep[i] = True
        # Drop the staircase points this row dominates in (y, z): y >= its y and z >= its z.
        q = bisect_left(ys, y, hi=p)
        end = bisect_right(neg_zs, -z, lo=q)
        ys[q:end] = [y]
        neg_zs[q:end] = [-z]
    return keep


def _blockwise(unique: FloatArray) -> BoolArray:
    """Four or more objectives: blocks of rows, each compared at once with the frontier so far and itself."""
    keep = np.zeros(len(unique), dtype=bool)
    rest = [np.ascontiguousarray(unique[:, c]) for c in range(1, unique.shape[1])]
    front = [np.empty(0) for _ in rest]  # the frontier found so far, per column
    start = 0
    while start < len(unique):
        block = max(_MIN_BLOCK, min(_MAX_BLOCK, _BLOCK_CELLS // max(len(front[0]), 1)))
        stop = min(start + block, len(unique))
        blk = [c[start:stop] for c in rest]
        idx = np.arange(stop - start)
        if len(front[0]):
            hit = front[0][:, None] <= blk[0][None, :]
            for fc, bc in zip(front[1:], blk[1:], strict=True):
                hit &= fc[:, None] <= bc[None, :]
            idx = np.flatnonzero(~hit.any(axis=0))
        if len(idx) > 1:
            # Within the block only an earlier row can dominate a later one: hit[j, i] needs j < i.
            hit = np.tri(len(idx), k=-1, dtype=bool).T
            for bc in blk:
                sub = bc[idx]
                hit &= sub[:, None] <= sub[None, :]
            idx = idx[~hit.any(axis=0)]
        keep[start + idx] = True
        front = [np.concatenate([fc, bc[idx]]) for fc, bc in zip(front, blk, strict=True)]
        start = stop
    return keep


# --------------------------------------------------------------------------------------------------------
# The knee


def knee_index(front: Points, directions: Sequence[str]) -> tuple[int | None, KneeMethod]:
    """The knee of a frontier (F × M rows, all finite) as (row index, method); (None, "none") when empty.

    See the module docstring for the definition. The rows are assumed to be mutually non-dominated (it is
    not checked); ties go to the earliest row.
    """
    x = _oriented(front, directions)
    if not np.isfinite(x).all():
        raise InvalidRequest("The knee is defined over finite values only.")
    if len(x) == 0:
        return None, "none"
    scale = np.abs(x).max(axis=0)  # first, so that ranges cannot overflow (±1e308); no effect otherwise
    x = x / np.where(scale > 0, scale, 1.0)
    lo = x.min(axis=0)
    span = x.max(axis=0) - lo
    varying = span > 0
    if len(x) == 1 or not varying.any():
        return 0, "single"
    z = (x[:, varying] - lo[varying]) / span[varying]
    k = z.shape[1]
    if k >= 2:
        anchors = []
        for c in range(k):
            # The point lying most along axis c: the smallest worst value on the other objectives.
            others = np.delete(z, c, axis=1).max(axis=1)
            candidates = np.flatnonzero(others == others.min())
            anchors.append(int(candidates[np.argmin(z[candidates, c])]))
        if len(set(anchors)) == k:
            extremes = z[anchors]
            if np.linalg.cond(extremes) < 1e12:
                normal = np.linalg.solve(extremes, np.ones(k))
                if np.all(np.isfinite(normal)) and np.all(normal > 0):
                    distance = (1.0 - z @ normal) / float(np.linalg.norm(normal))
                    if distance.max() > _TIE:
                        return _first_min(-distance), "max_distance"
    return _first_min(np.sqrt((z * z).sum(axis=1))), "closest_to_utopia"


def _first_min(values: FloatArray) -> int:
    return int(np.flatnonzero(values <= values.min() + _TIE)[0])


# --------------------------------------------------------------------------------------------------------
# Whole analyses: arrays, and records for the REST layer


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
    values = _as_points(points)
    n, m = values.shape
    names = tuple(objectives) if objectives is not None else tuple(f"f{c}" for c in range(m))
    if len(names) != m or len(set(names)) != m:
        raise InvalidRequest(f"Give {m} distinct objective names, one per column; got {list(names)}.")
    row_ids = _check_ids(ids, n)
    bounds = tuple(constraints)
    column = {name: c for c, name in enumerate(names)}
    for bound in bounds:
        if bound.objective not in column:
            raise InvalidRequest(f"A bound names {bound.objective!r}, which is not one of {list(names)}.")
    return _analyse(values, _check_directions(directions, m), names, row_ids, bounds, values, column)


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
    directions = _check_directions([direction for _, direction in pairs], len(pairs))
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
        raise InvalidRequest(_first_non_number(rows, columns)) from exc
    row_ids = _check_ids(ids, len(ids))
    column = {name: c for c, name in enumerate(columns)}
    values = everything[:, : len(names)]
    return _analyse(values, directions, names, row_ids, bounds, everything, column)


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
    directions = _check_directions([direction for _, direction in objectives], len(names))
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
    row_ids = _check_ids(ids, n)
    index = {name: c for c, name in enumerate(used)}
    return _analyse(everything[:, : len(names)], directions, names, row_ids, bounds, everything, index)


def _analyse(
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
    oriented = _orient(values[candidates], directions)
    on_front = candidates[_non_dominated(oriented)]
    # Along the first objective: raw values, column 0 first, then input order (lexsort is stable).
    on_front = on_front[_lex_order(values[on_front])]
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


# --------------------------------------------------------------------------------------------------------
# Validation


def _as_points(points: Points) -> FloatArray:
    try:
        x = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest("Points must be numbers (an N × M array; None counts as missing).") from exc
    if x.ndim != 2 or x.shape[1] < 1:
        raise InvalidRequest(f"Points must be an N × M array with M ≥ 1 objectives; got shape {x.shape}.")
    return x


def _check_directions(directions: Sequence[str], m: int) -> tuple[Direction, ...]:
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


def _orient(x: FloatArray, directions: Sequence[Direction]) -> FloatArray:
    """Negate the "max" columns so that lower is better everywhere."""
    if all(d == "min" for d in directions):
        return x
    sign = np.array([-1.0 if d == "max" else 1.0 for d in directions])
    return np.asarray(x * sign)


def _oriented(points: Points, directions: Sequence[str]) -> FloatArray:
    x = _as_points(points)
    return _orient(x, _check_directions(directions, x.shape[1]))


def _check_ids(ids: Sequence[PointId] | NDArray[np.integer[Any]] | None, n: int) -> list[PointId]:
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


def _first_non_number(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
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
