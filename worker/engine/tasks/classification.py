"""Per-class damage of a classification output, streamed batch by batch (issue 13, seed 003).

Samples are grouped by their label when the dataset has labels, else by the golden model's predicted
class (``by`` in the result says which). Per class: sample count, mean KL(P‖Q) in nats, top-1
agreement, and with labels the accuracy of both models and the drop in percentage points. Also the
golden → compressed prediction confusion matrix (rows: golden predicted class, columns: compressed
predicted class, over every sample whatever the grouping), and the confident flips.

A confident flip (seed 003, "label flipping"): with labels, the golden model predicts the label with
probability ≥ threshold and the compressed model predicts another class with probability ≥ threshold;
without labels, both models are that confident and disagree (the golden prediction stands in for the
label). Their sample indexes are kept (at most `max_flips`, with the total count).

Memory is O(C²) for the confusion counts (int64: 8 MB at 1000 classes) plus O(C) sums; no probability
is kept. The stored matrix is sparse (non-zero cells only: at most N of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from worker.engine.tasks.classification_scores import (
    borderline_agreement,
    golden_margins,
    score_delta,
    scores_from_confusion,
)

DEFAULT_FLIP_CONFIDENCE = 0.9
"""Default probability both models must reach for a flip to count as confident (seed 003)."""

MAX_CONFIDENT_FLIPS = 1000
"""At most this many confident flips are listed; the total count is always reported."""

Grouping = Literal["label", "golden_prediction"]


def _nan_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass
class PerClassAccumulator:
    """Running per-class counts and sums; `update` per batch, `to_dict` at the end."""

    num_classes: int
    threshold: float = DEFAULT_FLIP_CONFIDENCE
    max_flips: int = MAX_CONFIDENT_FLIPS
    by: Grouping | None = None
    count: np.ndarray = field(init=False)
    kl_sum: np.ndarray = field(init=False)
    agree: np.ndarray = field(init=False)
    golden_correct: np.ndarray = field(init=False)
    compressed_correct: np.ndarray = field(init=False)
    flips_per_class: np.ndarray = field(init=False)
    confusion: np.ndarray = field(init=False)
    golden_vs_label: np.ndarray = field(init=False)
    compressed_vs_label: np.ndarray = field(init=False)
    margins: list[np.ndarray] = field(default_factory=list)
    agreements: list[np.ndarray] = field(default_factory=list)
    flip_count: int = 0
    flips: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        c = self.num_classes
        self.count = np.zeros(c, dtype=np.int64)
        self.kl_sum = np.zeros(c, dtype=np.float64)
        self.agree = np.zeros(c, dtype=np.int64)
        self.golden_correct = np.zeros(c, dtype=np.int64)
        self.compressed_correct = np.zeros(c, dtype=np.int64)
        self.flips_per_class = np.zeros(c, dtype=np.int64)
        self.confusion = np.zeros((c, c), dtype=np.int64)
        self.golden_vs_label = np.zeros((c, c), dtype=np.int64)
        self.compressed_vs_label = np.zeros((c, c), dtype=np.int64)

    def update(
        self,
        lp: np.ndarray,
        lq: np.ndarray,
        kl: np.ndarray,
        indices: np.ndarray,
        labels: np.ndarray | None,
    ) -> None:
        """Fold in a batch: log-probabilities ``(n, C)`` of both models, their per-sample KL, the samples'
        indexes in the dataset, and their labels (None without labels; then every batch must lack them)."""
        by: Grouping = "label" if labels is not None else "golden_prediction"
        if self.by is None:
            self.by = by
        elif self.by != by:
            raise ValueError("labels must be given for every batch or for none")
        c = self.num_classes
        g_cls = np.argmax(lp, axis=1)
        c_cls = np.argmax(lq, axis=1)
        p_top = np.exp(lp[np.arange(lp.shape[0]), g_cls])
        q_top = np.exp(lq[np.arange(lq.shape[0]), c_cls])
        group = labels if labels is not None else g_cls
        self.count += np.bincount(group, minlength=c)
        self.kl_sum += np.bincount(group, weights=kl, minlength=c)
        self.agree += np.bincount(group, weights=g_cls == c_cls, minlength=c).astype(np.int64)
        self.confusion += np.bincount(g_cls * c + c_cls, minlength=c * c).reshape(c, c)
        self.margins.append(golden_margins(lp))
        self.agreements.append(g_cls == c_cls)
        if labels is not None:
            self.golden_vs_label += np.bincount(labels * c + g_cls, minlength=c * c).reshape(c, c)
            self.compressed_vs_label += np.bincount(labels * c + c_cls, minlength=c * c).reshape(c, c)
            self.golden_correct += np.bincount(group, weights=g_cls == labels, minlength=c).astype(np.int64)
            self.compressed_correct += np.bincount(group, weights=c_cls == labels, minlength=c).astype(
                np.int64
            )
        # group == g_cls without labels, so "golden right" is then "golden confident".
        confident = (
            (g_cls == group) & (c_cls != group) & (p_top >= self.threshold) & (q_top >= self.threshold)
        )
        where = np.flatnonzero(confident)
        self.flip_count += int(where.shape[0])
        self.flips_per_class += np.bincount(group[where], minlength=c)
        for i in where[: max(self.max_flips - len(self.flips), 0)]:
            self.flips.append(
                {
                    "index": int(indices[i]),
                    "label": int(labels[i]) if labels is not None else None,
                    "golden_class": int(g_cls[i]),
                    "golden_probability": float(p_top[i]),
                    "compressed_class": int(c_cls[i]),
                    "compressed_probability": float(q_top[i]),
                }
            )

    def classes(self) -> list[dict[str, Any]]:
        """One entry per class that has samples, most damaged first: by accuracy drop with labels, else
        by disagreement; ties by mean KL, then class index."""
        rows: list[dict[str, Any]] = []
        labelled = self.by == "label"
        for k in np.flatnonzero(self.count):
            n = int(self.count[k])
            g_acc = self.golden_correct[k] / n if labelled else math.nan
            c_acc = self.compressed_correct[k] / n if labelled else math.nan
            rows.append(
                {
                    "class_index": int(k),
                    "n": n,
                    "kl_mean_nats": float(self.kl_sum[k] / n),
                    "top1_agreement": float(self.agree[k] / n),
                    "golden_accuracy": _nan_none(float(g_acc)),
                    "compressed_accuracy": _nan_none(float(c_acc)),
                    "accuracy_drop_pp": _nan_none(float(100.0 * (g_acc - c_acc))),
                    "confident_flips": int(self.flips_per_class[k]),
                }
            )

        def damage(row: dict[str, Any]) -> tuple[float, float, int]:
            primary = row["accuracy_drop_pp"] if labelled else 1.0 - row["top1_agreement"]
            return (-primary, -row["kl_mean_nats"], row["class_index"])

        return sorted(rows, key=damage)

    def task_scores(self) -> dict[str, Any]:
        """The classification task's scores (classification_scores): against the labels for each model
        when the dataset has them, label-free against the golden model's predictions, and on the golden
        model's borderline samples."""
        against_labels = None
        if self.by == "label":
            golden = scores_from_confusion(self.golden_vs_label)
            compressed = scores_from_confusion(self.compressed_vs_label)
            against_labels = {
                "golden": golden,
                "compressed": compressed,
                "delta": score_delta(golden, compressed),
            }
        margins = np.concatenate(self.margins) if self.margins else np.zeros(0)
        agree = np.concatenate(self.agreements) if self.agreements else np.zeros(0, dtype=bool)
        return {
            "name": "classification",
            "against_labels": against_labels,
            "against_golden": scores_from_confusion(self.confusion),
            "borderline": borderline_agreement(margins, agree),
        }

    def to_dict(self) -> dict[str, Any]:
        rows, cols = np.nonzero(self.confusion)
        return {
            "by": self.by,
            "num_classes": self.num_classes,
            "n_samples": int(self.count.sum()),
            "flip_confidence": self.threshold,
            "classes": self.classes(),
            "task": self.task_scores(),
            "confusion": {
                "rows": "golden predicted class",
                "columns": "compressed predicted class",
                "cells": [
                    [int(r), int(c), int(self.confusion[r, c])] for r, c in zip(rows, cols, strict=True)
                ],
            },
            "confident_flips": {
                "count": self.flip_count,
                "stored": len(self.flips),
                "capped": self.flip_count > len(self.flips),
                "items": list(self.flips),
            },
        }
