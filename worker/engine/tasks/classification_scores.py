"""A classifier's task scores from confusion counts: accuracy, precision, recall and F1 per class, macro and
weighted (issue 30; seed "Task-Specific Fidelity Metrics": a drop in agreement, especially on borderline
cases), and top-1 agreement on the golden model's borderline samples.

Scores are computed twice by the fidelity job: against the dataset's labels when it has them (for each
model, and their difference), and label-free, with the golden model's predictions taken as the truth (the
compressed model's precision for class k is then the share of its class-k predictions the golden model
also made), so a team without labels still gets task truth.

Definitions follow scikit-learn's `precision_recall_fscore_support` with `zero_division=0`: the classes
scored are those that occur as truth or as prediction; precision_k = tp / predicted_k and recall_k = tp /
true_k (0 when the denominator is 0), F1_k = 2 tp / (2 tp + fp + fn); macro is the unweighted mean over the
scored classes, weighted the mean weighted by each class's true count (support).

Borderline samples: the golden model's margin is its top-1 minus its top-2 probability; the borderline set
is the `BORDERLINE_FRACTION` of samples with the smallest margins (ceil, ties broken by sample order), where
compression flips predictions first. Memory is O(N) for the margins (8 + 1 bytes a sample).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

BORDERLINE_FRACTION = 0.1
"""The lowest-margin decile of the golden model, as issue 30 asks."""


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def scores_from_confusion(confusion: np.ndarray) -> dict[str, Any]:
    """Scores of a confusion matrix (rows: true class, columns: predicted class, counts)."""
    confusion = np.asarray(confusion, dtype=np.int64)
    tp = np.diag(confusion).astype(np.float64)
    true_count = confusion.sum(axis=1).astype(np.float64)
    predicted_count = confusion.sum(axis=0).astype(np.float64)
    scored = np.flatnonzero((true_count + predicted_count) > 0)
    precision = _ratio(tp, predicted_count)
    recall = _ratio(tp, true_count)
    f1 = _ratio(2.0 * tp, 2.0 * tp + (predicted_count - tp) + (true_count - tp))
    total = float(true_count.sum())
    support = true_count[scored]

    def macro(values: np.ndarray) -> float | None:
        return float(values[scored].mean()) if scored.size else None

    def weighted(values: np.ndarray) -> float | None:
        return float((values[scored] * support).sum() / total) if total > 0 else None

    return {
        "n_samples": int(total),
        "accuracy": float(tp.sum() / total) if total > 0 else None,
        "precision_macro": macro(precision),
        "recall_macro": macro(recall),
        "f1_macro": macro(f1),
        "precision_weighted": weighted(precision),
        "recall_weighted": weighted(recall),
        "f1_weighted": weighted(f1),
        "per_class": [
            {
                "class_index": int(k),
                "support": int(true_count[k]),
                "precision": float(precision[k]),
                "recall": float(recall[k]),
                "f1": float(f1[k]),
            }
            for k in scored
        ],
    }


def score_delta(golden: dict[str, Any], compressed: dict[str, Any]) -> dict[str, float | None]:
    """Compressed minus golden for each summary score (negative: the compressed model does worse)."""
    keys = ("accuracy", "precision_macro", "recall_macro", "f1_macro", "f1_weighted")
    return {
        key: (compressed[key] - golden[key])
        if golden[key] is not None and compressed[key] is not None
        else None
        for key in keys
    }


def golden_margins(lp: np.ndarray) -> np.ndarray:
    """Top-1 minus top-2 probability of each sample under the golden model, from log-probabilities
    (n, C); a single-class output has margin 1."""
    if lp.shape[1] < 2:
        return np.ones(lp.shape[0], dtype=np.float64)
    top2 = np.partition(lp, lp.shape[1] - 2, axis=1)[:, -2:]
    probs = np.exp(top2.astype(np.float64))
    return probs[:, 1] - probs[:, 0]


def borderline_agreement(
    margins: np.ndarray, agree: np.ndarray, fraction: float = BORDERLINE_FRACTION
) -> dict[str, Any]:
    """Top-1 agreement on the `fraction` of samples with the smallest golden margins, and on the rest."""
    n = int(margins.shape[0])
    if n == 0:
        return {
            "fraction": fraction,
            "n": 0,
            "margin_max": None,
            "top1_agreement": None,
            "top1_agreement_rest": None,
        }
    k = max(1, math.ceil(fraction * n))
    order = np.argsort(margins, kind="stable")
    low, rest = order[:k], order[k:]
    return {
        "fraction": fraction,
        "n": k,
        "margin_max": float(margins[low].max()),
        "top1_agreement": float(agree[low].mean()),
        "top1_agreement_rest": float(agree[rest].mean()) if rest.size else None,
    }


def task_summary(task: dict[str, Any]) -> dict[str, float | None]:
    """The task scores a fidelity summary carries for budgets, `kneeboard check` and compare: flat numbers,
    named so the check's direction rule reads them right (`_drop_pp`: lower is better; F1 and agreement:
    higher is better). The full scores stay in the per-class document."""
    against_golden = task["against_golden"] or {}
    labelled = task["against_labels"]
    summary: dict[str, float | None] = {
        "f1_macro_vs_golden": against_golden.get("f1_macro"),
        "borderline_agreement": task["borderline"]["top1_agreement"],
        "golden_f1_macro": None,
        "compressed_f1_macro": None,
        "f1_macro_drop_pp": None,
    }
    if labelled is not None:
        golden, compressed = labelled["golden"]["f1_macro"], labelled["compressed"]["f1_macro"]
        summary["golden_f1_macro"], summary["compressed_f1_macro"] = golden, compressed
        if golden is not None and compressed is not None:
            summary["f1_macro_drop_pp"] = 100.0 * (golden - compressed)
    return summary
