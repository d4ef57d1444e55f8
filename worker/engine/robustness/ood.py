"""An out-of-distribution dataset (seed 003): a second dataset the user names, on which both models run
unchanged and are compared like a robustness slice: the same metrics, a brittleness ratio against the
clean data and the worst samples.

Unlike a slice, nothing is corrupted: the rows are the user's own (e.g. photos from another camera,
another language's sentences), so the only requirement is that they fit the models' inputs; a dataset
that does not raises DatasetMismatchError, as the clean comparison would. `compare_models` streams the
dataset batch by batch, so the memory is the clean report's: a few scalars per sample.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.fidelity.params import LABELS_KEY
from worker.engine.robustness.run import (
    brittleness_ratio,
    clean_baseline,
    divergence_key,
    point_metrics,
    worst_samples,
)
from worker.engine.types import Runner


def evaluate_ood(
    golden: Runner,
    compressed: Runner,
    arrays: Mapping[str, np.ndarray],
    labels: np.ndarray | None,
    fidelity: FidelityParams,
    clean_table: Mapping[str, np.ndarray],
    primary_kind: str,
    max_samples: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Both models on the out-of-distribution arrays: n_samples, the metrics of `point_metrics`, the
    brittleness ratio (its divergence / the clean one over the clean table's first max_samples rows,
    like the slices') and the worst samples (indexes into the out-of-distribution dataset).

    arrays: the dataset as loaded (a "labels" array among them is used as labels when `labels` is None);
    max_samples: only the first this many rows of either dataset (None: all)."""
    inputs = {k: v for k, v in arrays.items() if k != LABELS_KEY}
    if labels is None and LABELS_KEY in arrays:
        labels = np.asarray(arrays[LABELS_KEY])
    n = len(next(iter(inputs.values()))) if inputs else 0
    if max_samples is not None:
        n = min(n, max_samples)
    clean_n = len(next(iter(clean_table.values())))
    if max_samples is not None:
        clean_n = min(clean_n, max_samples)
    divergence, _, clean_div = clean_baseline(clean_table, clean_n, primary_kind)
    report = compare_models(
        golden,
        compressed,
        {k: v[:n] for k, v in inputs.items()},
        None if labels is None else np.asarray(labels[:n]),
        replace(fidelity, threshold_kl=None),
        on_progress=on_progress,
    )
    metrics = point_metrics(report.per_sample, divergence)
    return {
        **metrics,
        "brittleness_ratio": brittleness_ratio(metrics[divergence_key(divergence)], clean_div),
        "worst_samples": worst_samples(report.per_sample, divergence),
        "warnings": sorted(set(report.warnings)),
        "error": None,
    }
