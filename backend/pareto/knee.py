"""The knee point of a Pareto frontier.

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

from collections.abc import Sequence

import numpy as np

from backend.errors import InvalidRequest
from backend.pareto.definitions import FloatArray, KneeMethod, Points
from backend.pareto.inputs import oriented

_TIE = 1e-12  # knee ties and "nothing beyond the hyperplane", in normalised units


def knee_index(front: Points, directions: Sequence[str]) -> tuple[int | None, KneeMethod]:
    """The knee of a frontier (F × M rows, all finite) as (row index, method); (None, "none") when empty.

    See the module docstring for the definition. The rows are assumed to be mutually non-dominated (it is
    not checked); ties go to the earliest row.
    """
    x = oriented(front, directions)
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
