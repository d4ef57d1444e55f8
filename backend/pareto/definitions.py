"""The types of a Pareto analysis: directions, point ids, bounds (`Bound`) and the result (`ParetoResult`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
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
