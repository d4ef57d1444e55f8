"""The per-sample table of the primary output, and how concentrated its divergence is."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from worker.engine.fidelity.params import CONCENTRATION_RULE, CONCENTRATION_SHARE
from worker.engine.metrics import numerical

PER_SAMPLE_KEYS = (
    "kl",
    "cosine",
    "mse",
    "sqnr_db",
    "top1_match",
    "golden_class",
    "compressed_class",
    "label",
    "finite",
    "flagged",
)


def _empty_table(n: int) -> dict[str, np.ndarray]:
    return {
        "kl": np.full(n, np.nan),
        "cosine": np.full(n, np.nan),
        "mse": np.full(n, np.nan),
        "sqnr_db": np.full(n, np.nan),
        "top1_match": np.zeros(n, dtype=np.bool_),
        "golden_class": np.full(n, -1, dtype=np.int64),
        "compressed_class": np.full(n, -1, dtype=np.int64),
        "label": np.full(n, -1, dtype=np.int64),
        "finite": np.zeros(n, dtype=np.bool_),
        "flagged": np.zeros(n, dtype=np.bool_),
    }


def _fill_table(
    table: dict[str, np.ndarray],
    start: int,
    finite: np.ndarray,
    cls: dict[str, np.ndarray],
    ps: numerical.NumericalPerSample,
) -> None:
    rows = start + np.flatnonzero(finite)
    table["finite"][start : start + finite.shape[0]] = finite
    table["cosine"][rows] = ps.cosine
    table["mse"][rows] = ps.mse
    table["sqnr_db"][rows] = ps.sqnr_db
    if cls:
        for key in ("kl", "golden_class", "compressed_class", "top1_match"):
            table[key][rows] = cls[key]
    else:
        table["top1_match"][rows] = True  # no class to flip


def _finish_table(table: dict[str, np.ndarray], threshold: float | None, classification: bool) -> None:
    """flagged = non-finite, or a top-1 flip, or KL above the threshold (classification only)."""
    flagged = ~table["finite"]
    if classification:
        flagged |= table["finite"] & ~table["top1_match"]
        if threshold is not None:
            flagged |= np.nan_to_num(table["kl"], nan=0.0) > threshold
    table["flagged"] = flagged


def concentration(values: npt.ArrayLike, measure: str) -> dict[str, Any]:
    """Share of the total divergence carried by the worst 1% and worst 10% of samples, and a verdict.

    Worst p% = the ceil(p/100·n) samples (at least 1) with the largest values. The verdict is
    "concentrated" when the worst 10% carry more than 50% of the total, else "uniform" (also when the
    total is 0, where the shares are None). A uniform spread gives shares of about 1% and 10%.
    """
    v = np.asarray(values, dtype=np.float64)
    v = np.maximum(v[np.isfinite(v)], 0.0)
    total = float(v.sum())
    out: dict[str, Any] = {"measure": measure, "n": int(v.shape[0]), "rule": CONCENTRATION_RULE}
    if v.shape[0] == 0 or total <= 0.0:
        return out | {"worst_1pct_share": None, "worst_10pct_share": None, "verdict": "uniform"}
    desc = np.sort(v)[::-1]
    shares = {}
    for pct in (1, 10):
        k = max(1, math.ceil(pct / 100 * v.shape[0]))
        shares[pct] = float(desc[:k].sum() / total)
    verdict = "concentrated" if shares[10] > CONCENTRATION_SHARE else "uniform"
    return out | {"worst_1pct_share": shares[1], "worst_10pct_share": shares[10], "verdict": verdict}
