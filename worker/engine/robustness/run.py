"""Golden and compressed models on corrupted copies of the dataset, slice by slice and severity by
severity, compared with `compare_models` (the same metrics as the clean report).

Memory: the dataset (memory-mapped) is read and corrupted one chunk of rows at a time, about
CHUNK_BUDGET_BYTES of input per chunk (whole batches), so a run holds one corrupted chunk, never a
corrupted dataset. Per point it keeps the primary output's per-sample KL, classes and labels (a few
scalars per sample, as the clean report does) and the running worst samples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from worker.engine.fidelity import FidelityParams, compare_models
from worker.engine.fidelity_params import ATTENTION_MASK_KEY, LABELS_KEY
from worker.engine.robustness.transforms import (
    SEVERITIES,
    SEVERITY_NAMES,
    SLICES,
    applies_to,
    array_stats,
    corrupt,
)
from worker.engine.types import Runner

CHUNK_BUDGET_BYTES = 32 * 2**20
"""Input bytes corrupted at once (the transforms work in float64, so about 2-3x this at the peak)."""

WORST_SAMPLES = 10


@dataclass(frozen=True)
class RobustnessParams:
    """slices: names from `SLICES` (all by default); severities: from 1 (mild) to 3 (severe); seed of
    the random corruptions; max_samples: only the first this many samples (None: all)."""

    slices: tuple[str, ...] = tuple(SLICES)
    severities: tuple[int, ...] = SEVERITIES
    seed: int = 0
    max_samples: int | None = None

    def __post_init__(self) -> None:
        unknown = [s for s in self.slices if s not in SLICES]
        if unknown or not self.slices:
            raise ValueError(f"unknown robustness slices {unknown}; known: {', '.join(SLICES)}")
        if not self.severities or any(s not in SEVERITIES for s in self.severities):
            raise ValueError(f"severities must be among {SEVERITIES}, got {self.severities}")
        if self.max_samples is not None and self.max_samples < 1:
            raise ValueError("max_samples must be at least 1")


@dataclass
class _PointSums:
    """The primary output's per-sample columns over the samples of one slice x severity."""

    kl: list[np.ndarray] = field(default_factory=list)
    mse: list[np.ndarray] = field(default_factory=list)
    golden: list[np.ndarray] = field(default_factory=list)
    compressed: list[np.ndarray] = field(default_factory=list)
    label: list[np.ndarray] = field(default_factory=list)
    finite: list[np.ndarray] = field(default_factory=list)
    warnings: set[str] = field(default_factory=set)

    def add(self, table: Mapping[str, np.ndarray], warnings: list[str]) -> None:
        self.kl.append(table["kl"])
        self.mse.append(table["mse"])
        self.golden.append(table["golden_class"])
        self.compressed.append(table["compressed_class"])
        self.label.append(table["label"])
        self.finite.append(table["finite"])
        self.warnings.update(warnings)

    def columns(self) -> dict[str, np.ndarray]:
        return {
            "kl": np.concatenate(self.kl),
            "mse": np.concatenate(self.mse),
            "golden_class": np.concatenate(self.golden),
            "compressed_class": np.concatenate(self.compressed),
            "label": np.concatenate(self.label),
            "finite": np.concatenate(self.finite),
        }


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def point_metrics(table: Mapping[str, np.ndarray], divergence: str) -> dict[str, Any]:
    """Mean KL and MSE, top-1 agreement and both accuracies over the finite samples of a per-sample table
    (the columns of `compare_models`' table); accuracies are None without labels."""
    finite = table["finite"].astype(bool)
    g, c, lab = table["golden_class"][finite], table["compressed_class"][finite], table["label"][finite]
    classified = divergence == "kl"
    labelled = classified and lab.size > 0 and bool((lab >= 0).all())
    return {
        "n_samples": int(finite.size),
        "n_finite": int(finite.sum()),
        "kl_mean_nats": _mean(table["kl"][finite]) if classified else None,
        "mse_mean": _mean(table["mse"][finite]),
        "top1_agreement": _mean((g == c).astype(np.float64)) if classified else None,
        "golden_accuracy": _mean((g == lab).astype(np.float64)) if labelled else None,
        "compressed_accuracy": _mean((c == lab).astype(np.float64)) if labelled else None,
    }


def worst_samples(
    table: Mapping[str, np.ndarray], divergence: str, k: int = WORST_SAMPLES
) -> list[dict[str, Any]]:
    """The k finite samples of highest divergence, worst first (ties by sample index)."""
    values = np.where(table["finite"], table[divergence], -np.inf)
    order = np.lexsort((np.arange(len(values)), -values))[:k]
    return [
        {
            "sample_index": int(i),
            "divergence": float(values[i]),
            "golden_class": int(table["golden_class"][i]) if table["golden_class"][i] >= 0 else None,
            "compressed_class": int(table["compressed_class"][i])
            if table["compressed_class"][i] >= 0
            else None,
            "label": int(table["label"][i]) if table["label"][i] >= 0 else None,
        }
        for i in order
        if np.isfinite(values[i])
    ]


def _ratio(value: float | None, clean: float | None) -> float | None:
    if value is None or clean is None or clean <= 0:
        return None
    return value / clean


def chunk_rows(arrays: Mapping[str, np.ndarray], batch_size: int) -> int:
    """Rows per chunk: whole batches holding about CHUNK_BUDGET_BYTES of input, at least one batch."""
    row_bytes = sum(a[:1].nbytes for a in arrays.values()) or 1
    batches = max(1, CHUNK_BUDGET_BYTES // (row_bytes * batch_size))
    return batches * batch_size


def evaluate_robustness(
    golden: Runner,
    compressed: Runner,
    arrays: Mapping[str, np.ndarray],
    labels: np.ndarray | None,
    fidelity: FidelityParams,
    clean_table: Mapping[str, np.ndarray],
    primary_kind: str,
    params: RobustnessParams,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """The robustness document: per slice and severity, both accuracies, mean KL (MSE for a primary
    output that is not a classification), top-1 agreement, the brittleness ratio (slice divergence /
    clean divergence, None when the clean one is 0) and the worst samples.

    clean_table: the clean report's per-sample table (FidelityReport.per_sample); its first n rows are
    the baseline. on_progress(points done, points, label) after each slice x severity; it may raise
    JobCancelled.
    """
    inputs = {k: v for k, v in arrays.items() if k not in (LABELS_KEY,)}
    n = len(next(iter(inputs.values())))
    if params.max_samples is not None:
        n = min(n, params.max_samples)
    divergence = "kl" if primary_kind == "classification" else "mse"
    clean_rows = {k: np.asarray(v[:n]) for k, v in clean_table.items()}
    clean = point_metrics(clean_rows, divergence)
    clean_div = clean["kl_mean_nats" if divergence == "kl" else "mse_mean"]
    stats = {
        k: array_stats(v[:n])
        for k, v in inputs.items()
        if k != ATTENTION_MASK_KEY and np.issubdtype(v.dtype, np.floating)
    }
    lab = None if labels is None else np.asarray(labels[:n])
    rows = chunk_rows(inputs, fidelity.batch_size)
    quiet = replace(fidelity, threshold_kl=None)
    slices: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    todo = [s for s in params.slices if any(applies_to(s, inputs[k]) for k in stats)]
    for name in params.slices:
        if name not in todo:
            skipped.append({"name": name, "reason": _skip_reason(name)})
    total, done = len(todo) * len(params.severities), 0
    for name in todo:
        points = []
        for severity in sorted(params.severities):
            sums = _PointSums()
            for start in range(0, n, rows):
                stop = min(n, start + rows)
                idx = np.arange(start, stop)
                chunk = {
                    k: (
                        corrupt(name, severity, np.asarray(v[start:stop]), idx, stats[k], params.seed)
                        if k in stats
                        else v[start:stop]
                    )
                    for k, v in inputs.items()
                }
                part = compare_models(
                    golden, compressed, chunk, None if lab is None else lab[start:stop], quiet
                )
                sums.add(part.per_sample, part.warnings)
            table = sums.columns()
            metrics = point_metrics(table, divergence)
            div = metrics["kl_mean_nats" if divergence == "kl" else "mse_mean"]
            points.append(
                {
                    "severity": severity,
                    "severity_name": SEVERITY_NAMES[severity],
                    "value": SLICES[name].values[severity - 1],
                    **metrics,
                    "brittleness_ratio": _ratio(div, clean_div),
                    "worst_samples": worst_samples(table, divergence),
                    "warnings": sorted(sums.warnings),
                }
            )
            done += 1
            if on_progress is not None:
                on_progress(done, total, f"{name} {SEVERITY_NAMES[severity]}")
        spec = SLICES[name]
        slices.append({"name": name, "parameter": spec.parameter, "points": points})
    return {
        "n_samples": n,
        "divergence": divergence,
        "seed": params.seed,
        "clean": clean,
        "slices": slices,
        "skipped": skipped,
        "error": None,
    }


def _skip_reason(name: str) -> str:
    if SLICES[name].images_only:
        return "needs image inputs (a float array shaped [N, C, H, W] or [N, H, W, C])"
    return "the dataset has no float input to corrupt"
