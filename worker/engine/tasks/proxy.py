"""Does the cheap proxy predict the task? (issue 30): per task metric, Spearman's rank correlation between the
primary output's per-sample divergence and the per-sample task loss, and the samples where the two disagree
most.

The proxy is a *divergence* (higher = further from the golden model):
- KL(P‖Q) in nats when the primary output is a classification output (its per-sample KL is finite somewhere);
- otherwise −SQNR in dB. SQNR rather than MSE because it is relative to the sample's own signal energy: a
  loud sample (large logits) does not look more damaged than a quiet one for the same relative error, and
  the task decodes relative values (argmax over classes or tokens). Spearman's rho depends only on ranks, so
  negating SQNR (higher = closer) makes it a divergence without changing anything else. A sample whose
  outputs are identical (SQNR +∞) is kept as the least divergent one (counted as `n_exact`); −∞ (a golden
  output of zeros) and NaN are undefined and excluded.

The task value is turned into a *loss* (higher = worse): kept for a lower-is-better metric (WER, CER, a
`_drop`), negated for a higher-is-better one (IoU, pixel agreement, boundary F1). So a positive rho always
reads "the more the outputs diverge, the more the task loses": divergence predicts task loss. Samples whose
proxy or task value is undefined are excluded and counted (`n_excluded`).

Disagreement: both series are ranked among the samples kept (average ranks for ties, as Spearman does);
a sample's `rank_gap` = task-loss rank − divergence rank. The `top` samples with the largest |gap| are
listed, largest first (ties by sample index): a positive gap is a sample whose task lost more than its
divergence suggests (hidden damage), a negative one a sample that diverged without the task minding.

Pure numpy/scipy: no torch, SQL or HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from task_specs.directions import higher_is_better

PROXY_KL = "kl"
PROXY_SQNR = "sqnr_db"


def with_deltas(task_values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The task's per-sample values, plus `<m>_delta` = compressed − golden for every pair `<m>_golden` /
    `<m>_compressed` (e.g. CTC's per-utterance WER of each model against the transcripts → the per-sample
    change of WER, the task's loss against ground truth). Values become float64 (None → NaN)."""
    out = {key: _as_float(values) for key, values in task_values.items()}
    for key in list(out):
        base = key.removesuffix("_golden")
        if key.endswith("_golden") and f"{base}_compressed" in out and f"{base}_delta" not in out:
            out[f"{base}_delta"] = out[f"{base}_compressed"] - out[key]
    return out


def _as_float(values: Any) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in np.asarray(values).tolist()], dtype=np.float64)


def choose_proxy(per_sample: Mapping[str, np.ndarray]) -> tuple[str, np.ndarray]:
    """(proxy name, per-sample divergence: higher = further; NaN where undefined) from the primary output's
    per-sample table (`FidelityReport.per_sample`): KL where it is defined, else −SQNR (+∞ SQNR → −∞)."""
    kl = np.asarray(per_sample[PROXY_KL], dtype=np.float64)
    if np.isfinite(kl).any():
        return PROXY_KL, np.where(np.isfinite(kl), kl, np.nan)
    sqnr = np.asarray(per_sample[PROXY_SQNR], dtype=np.float64)
    divergence = -sqnr
    divergence[np.isnan(sqnr) | (sqnr == -np.inf)] = np.nan  # undefined; +∞ SQNR stays −∞: least divergent
    return PROXY_SQNR, divergence


def correlation(divergence: np.ndarray, loss: np.ndarray, top: int = 20) -> dict[str, Any]:
    """Spearman's rho of divergence against loss (both higher = worse) over the samples where both are
    defined (divergence may be −∞: an exact sample), its two-sided p-value, and the `top` samples whose
    ranks differ most. rho and p are None (with `undefined`, the reason) for fewer than 3 samples or a
    constant series."""
    from scipy.stats import rankdata, spearmanr

    divergence = np.asarray(divergence, dtype=np.float64)
    loss = np.asarray(loss, dtype=np.float64)
    if divergence.shape != loss.shape or divergence.ndim != 1:
        raise ValueError(f"per-sample arrays of different shapes: {divergence.shape} and {loss.shape}")
    kept = ~np.isnan(divergence) & (divergence != np.inf) & np.isfinite(loss)
    index = np.flatnonzero(kept)
    d, t = divergence[kept], loss[kept]
    result: dict[str, Any] = {
        "n": int(index.size),
        "n_excluded": int(divergence.size - index.size),
        "n_exact": int(np.sum(d == -np.inf)),
        "spearman_rho": None,
        "p_value": None,
        "undefined": None,
        "disagreements": [],
    }
    if index.size < 3:
        result["undefined"] = f"{index.size} sample(s) with both values defined; Spearman needs at least 3"
        return result
    constant = [name for name, x in (("divergence", d), ("task value", t)) if np.all(x == x[0])]
    if constant:
        result["undefined"] = f"the {' and the '.join(constant)} is the same for every sample"
        return result
    rho, p = spearmanr(d, t)
    result["spearman_rho"], result["p_value"] = float(rho), float(p)
    d_rank, t_rank = rankdata(d), rankdata(t)
    gap = t_rank - d_rank
    order = np.lexsort((index, -np.abs(gap)))[:top]  # largest |gap| first, ties by sample index
    result["disagreements"] = [
        {
            "sample_index": int(index[i]),
            "divergence_rank": float(d_rank[i]),
            "loss_rank": float(t_rank[i]),
            "rank_gap": float(gap[i]),
        }
        for i in order
    ]
    return result


def proxy_document(
    per_sample: Mapping[str, np.ndarray],
    task_values: Mapping[str, np.ndarray],
    *,
    task: str,
    task_output: str,
    proxy_output: str,
    top: int = 20,
) -> dict[str, Any]:
    """The stored "does divergence predict the task?" document: the proxy, and per task metric (the
    adapter's per-sample values with their deltas, `with_deltas`) its direction and `correlation`.
    Each disagreeing sample also carries its proxy value (KL, or SQNR in dB) and task value."""
    name, divergence = choose_proxy(per_sample)
    shown = np.asarray(per_sample[name], dtype=np.float64)
    metrics = []
    for metric, values in with_deltas(task_values).items():
        if values.shape != divergence.shape:
            raise ValueError(
                f"task {task!r} gave {values.shape[0]} per-sample values of {metric!r} for {divergence.size} samples"
            )
        better_high = higher_is_better(metric)
        found = correlation(divergence, -values if better_high else values, top)
        for row in found["disagreements"]:
            row["proxy"] = _number(shown[row["sample_index"]])
            row["value"] = _number(values[row["sample_index"]])
        metrics.append({"metric": metric, "higher_is_better": better_high, **found})
    return {
        "task": task,
        "task_output": task_output,
        "proxy": name,
        "proxy_output": proxy_output,
        "n_samples": int(divergence.size),
        "metrics": metrics,
    }


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
