"""Pareto frontier and knee point of a sweep: N configurations × M objectives, in pure Python + numpy.

Runs in the API process, so it imports nothing but numpy (never torch, onnxruntime or scipy).

Definitions:

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

The package, one job a module: `definitions` (the result and bound types), `inputs` (validation and
orientation), `dominance` and `sweeps` (the non-dominated sets), `knee` (the knee point), `analysis` (whole
analyses over arrays, records and columns).
"""

from backend.pareto.analysis import pareto_from_columns, pareto_from_records, pareto_front
from backend.pareto.definitions import (
    DIRECTIONS,
    Bound,
    Direction,
    KneeMethod,
    ParetoResult,
    PointId,
    Points,
)
from backend.pareto.dominance import non_dominated
from backend.pareto.knee import knee_index

__all__ = [
    "DIRECTIONS",
    "Bound",
    "Direction",
    "KneeMethod",
    "ParetoResult",
    "PointId",
    "Points",
    "knee_index",
    "non_dominated",
    "pareto_from_columns",
    "pareto_from_records",
    "pareto_front",
]
