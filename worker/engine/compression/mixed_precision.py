"""Mixed-precision bit allocation as an exact 0-1 integer program (scipy.optimize.milp).

Choose one option (bit width) k per layer l, x[l,k] ∈ {0, 1}, to

    minimise   Σ_l Σ_k d[l,k] · x[l,k]                 (predicted divergence: the sum of per-layer KLs)
    subject to Σ_k x[l,k] = 1                           (one option per layer)
               Σ_l Σ_k params[l] · bits[k] / 8 · x[l,k] ≤ budget_bytes
               x[a,k] = x[b,k] for layers a, b that share a tensor (one tensor has one bit width)

where d[l,k] is the layer-wise sensitivity ("only" mode) of layer l at option k. Adding per-layer KLs
assumes their effects are roughly additive: `sensitivity.measure_plan` checks that by measuring the
plan. An unavailable d (None) forbids that option for that layer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from worker.engine.errors import EngineError


class InfeasibleBudgetError(EngineError):
    """No assignment fits the size budget."""


@dataclass(frozen=True)
class Allocation:
    choice: list[int]
    """Index of the chosen option per layer."""
    objective: float
    size_bytes: float


def allocate(
    divergence: Sequence[Sequence[float | None]],
    params: Sequence[int],
    bits: Sequence[int],
    budget_bytes: float,
    ties: Sequence[tuple[int, int]] = (),
) -> Allocation:
    """Solve the program above exactly. `divergence[l][k]`, `params[l]`, `bits[k]`; `ties` are pairs of
    layer indices that must take the same option. Raises InfeasibleBudgetError (with the smallest
    feasible size) when the budget cannot be met."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n_layers, n_options = len(params), len(bits)
    if n_layers == 0 or n_options == 0:
        raise EngineError("mixed precision needs at least one layer and one bit-width option")
    d = np.zeros((n_layers, n_options))
    upper = np.ones((n_layers, n_options))
    for l_index, values in enumerate(divergence):
        for k, value in enumerate(values):
            if value is None or not math.isfinite(value):
                upper[l_index, k] = 0.0
            else:
                d[l_index, k] = value
    if (upper.sum(axis=1) == 0).any():
        bad = [int(i) for i in np.flatnonzero(upper.sum(axis=1) == 0)]
        raise EngineError(f"layers {bad} have no option with a measured divergence")
    size = np.outer(np.asarray(params, dtype=np.float64), np.asarray(bits, dtype=np.float64)) / 8.0
    n = n_layers * n_options
    rows: list[np.ndarray] = []
    lows: list[float] = []
    highs: list[float] = []
    for l_index in range(n_layers):
        row = np.zeros(n)
        row[l_index * n_options : (l_index + 1) * n_options] = 1.0
        rows.append(row)
        lows.append(1.0)
        highs.append(1.0)
    for a, b in ties:
        for k in range(n_options):
            row = np.zeros(n)
            row[a * n_options + k] = 1.0
            row[b * n_options + k] = -1.0
            rows.append(row)
            lows.append(0.0)
            highs.append(0.0)
    rows.append(size.reshape(-1))
    lows.append(-math.inf)
    highs.append(float(budget_bytes))
    result = milp(
        c=d.reshape(-1),
        constraints=LinearConstraint(np.array(rows), np.array(lows), np.array(highs)),
        integrality=np.ones(n),
        bounds=Bounds(np.zeros(n), upper.reshape(-1)),
    )
    if result.status != 0 or result.x is None:
        smallest = float(np.where(upper > 0, size, np.inf).min(axis=1).sum())
        raise InfeasibleBudgetError(
            f"no bit-width assignment fits {budget_bytes:.0f} bytes ({result.message}); "
            f"the smallest possible size of these layers is {smallest:.0f} bytes"
        )
    x = np.round(result.x).reshape(n_layers, n_options)
    choice = [int(np.argmax(row)) for row in x]
    objective = float(sum(d[i, k] for i, k in enumerate(choice)))
    total = float(sum(size[i, k] for i, k in enumerate(choice)))
    return Allocation(choice=choice, objective=objective, size_bytes=total)
