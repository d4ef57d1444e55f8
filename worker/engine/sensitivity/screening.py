"""Screening: rank every layer from an estimate, measure exact cells only for the top K and a control sample.

An exact "only" scan costs about half a full pass per cell (`suffix`), too slow for hundreds of layers.
`screen_layers` estimates every layer × config cell from one probe pass per config (`screening_local`:
each layer's compressed weights carried through the few nodes after it, to where its output joins the
rest of the model), picks the top_k layers by the estimate (mean over configs) and a seeded random
control sample of `control` other layers, and measures those cells exactly with `layer_sensitivity`
(the same numbers as the full exact scan's cells of those layers: chunks of a scan equal the scan).

Estimated cells carry the estimate in the scan's own unit, so that exact and estimated cells rank on one
scale: the estimated output SQNR is the local SQNR plus a per-config offset, the median of (exact SQNR −
local SQNR) over the exact cells; for classifiers the estimated KL is c · 10^(−local SQNR / 10) (KL grows
as the noise power for small noise, a second-order expansion), c the median of KL / noise over the exact
cells. The offset is monotone, so it does not change the order of the estimates; it only places them
beside the exact cells. `screening` in the result says how many cells are exact and the Spearman rank
correlation between estimate and exact score on the exact cells.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from worker.engine.compression import as_compressible
from worker.engine.compression.configs import Config
from worker.engine.compression.divergence import Divergence, Golden, golden_outputs
from worker.engine.compression.model import Calibration, Feeds, first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.errors import EngineError
from worker.engine.sensitivity.result import Progress, SensitivityCell, SensitivityResult
from worker.engine.sensitivity.scan import _configs, layer_sensitivity, scan_batch_size
from worker.engine.sensitivity.screening_local import LocalError, local_errors

ESTIMATED_NOTE = "estimated from one probe pass per config (screening): not measured"


def screen_layers(
    golden: Any,
    calibration_feeds: Feeds,
    configs: Sequence[Config | Mapping[str, Any]],
    *,
    top_k: int,
    control: int,
    seed: int = 0,
    batch_size: int | None = None,
    on_progress: Progress | None = None,
    reference: Golden | None = None,
    activation_feeds: Feeds | None = None,
    whole_model: bool = False,
) -> SensitivityResult:
    """A screened "only" scan of every compressible layer (ONNX models): exact cells for the top_k layers
    by estimate and `control` random others (seeded), estimated cells for the rest. reference,
    activation_feeds, whole_model: as `layer_sensitivity`'s."""
    if top_k < 0 or control < 0:
        raise EngineError(f"top_k and control must be at least 0, got {top_k} and {control}")
    parsed: list[Config] = _configs(configs)
    model = as_compressible(golden)
    if not isinstance(model, OnnxCompressible):
        raise EngineError("screening estimates layers of ONNX models only; scan a torch model exactly")
    model.prepare(first_sample(calibration_feeds))
    batch_size = scan_batch_size(model) if batch_size is None else batch_size
    names = [layer.name for layer in model.layers()]
    calibration = Calibration(
        model, calibration_feeds if activation_feeds is None else activation_feeds, batch_size
    )
    estimates = local_errors(model, calibration_feeds, parsed, names, calibration, batch_size)
    order = sorted(names, key=lambda n: (-_mean_noise_db(estimates, n, parsed), names.index(n)))
    top = order[:top_k]
    rest = order[top_k:]
    controls = sorted(random.Random(seed).sample(rest, min(control, len(rest))), key=names.index)
    chosen = [n for n in names if n in set(top) | set(controls)]
    if reference is None:
        reference = golden_outputs(model, calibration_feeds, batch_size)
    exact = layer_sensitivity(
        model,
        calibration_feeds,
        parsed,
        layers=chosen,
        batch_size=batch_size,
        reference=reference,
        on_progress=on_progress,
        activation_feeds=activation_feeds,
        whole_model=whole_model,
    )
    classification = exact.output_kind == "classification"
    offsets = {c.id: _offset(exact.cells, estimates, c.id, classification) for c in parsed}
    cells = dict(exact.cells)
    for name in names:
        for config in parsed:
            if (name, config.id) in cells:
                continue
            local = estimates[(name, config.id)]
            cells[(name, config.id)] = _estimated_cell(
                name, config.id, local, offsets[config.id], classification, reference.n_samples
            )
    for key, cell in exact.cells.items():
        cells[key] = _with_estimate(cell, estimates[key])
    rho = _spearman(exact.cells, estimates, exact.ranking_metric)
    exact.cells = cells
    data_free = sorted({n for (n, _), e in estimates.items() if not e.from_data})
    exact.notes.append(
        f"screening: {len(chosen) * len(parsed)} of {len(names) * len(parsed)} cells measured exactly "
        f"(top {len(top)} layers by estimate and {len(controls)} random controls, seed {seed}); the rest "
        "are estimated"
    )
    if data_free:
        exact.notes.append(
            f"screening: {len(data_free)} layers estimated from their weights' own relative error (their "
            "weight is part of a larger tensor)"
        )
    exact.screening = {
        "top_k": top_k,
        "control": control,
        "seed": seed,
        "top_layers": [n for n in names if n in set(top)],
        "control_layers": controls,
        "exact_cells": len(chosen) * len(parsed),
        "total_cells": len(names) * len(parsed),
        "spearman": rho,
    }
    return exact


def _mean_noise_db(
    estimates: Mapping[tuple[str, str], LocalError], layer: str, configs: list[Config]
) -> float:
    """The layer's estimate over configs: mean of −local SQNR (dB); +inf SQNR (unchanged) counts as −300."""
    values = [-min(estimates[(layer, c.id)].local_sqnr_db, 300.0) for c in configs]
    return sum(values) / len(values)


def _offset(
    cells: Mapping[tuple[str, str], SensitivityCell],
    estimates: Mapping[tuple[str, str], LocalError],
    config: str,
    classification: bool,
) -> float:
    """dB added to the local SQNR to give the output's (SQNR) or log10 of c (KL = c · noise)."""
    diffs = []
    for (layer, cid), cell in cells.items():
        local = estimates[(layer, cid)].local_sqnr_db
        if cid != config or not math.isfinite(local):
            continue
        d = cell.divergence
        if classification and d.kl_mean is not None and d.kl_mean > 0:
            diffs.append(math.log10(d.kl_mean) + local / 10.0)
        elif not classification and d.sqnr_db is not None and math.isfinite(d.sqnr_db):
            diffs.append(d.sqnr_db - local)
    return statistics.median(diffs) if diffs else 0.0


def _estimated_cell(
    layer: str, config: str, local: LocalError, offset: float, classification: bool, n_samples: int
) -> SensitivityCell:
    infinite = not math.isfinite(local.local_sqnr_db)
    sqnr = None if infinite else local.local_sqnr_db + (0.0 if classification else offset)
    kl = None
    if classification:
        kl = 0.0 if infinite else 10.0 ** (offset - local.local_sqnr_db / 10.0)
    divergence = Divergence(
        kl_mean=kl,
        kl_max=None,
        top1_agreement=None,
        sqnr_db=sqnr,
        sqnr_db_infinite=infinite,
        mse=None,
        n_samples=n_samples,
        n_nonfinite=0,
    )
    return SensitivityCell(
        layer,
        config,
        divergence,
        [],
        [],
        [ESTIMATED_NOTE],
        exact=False,
        estimate=_finite(local.local_sqnr_db),
    )


def _with_estimate(cell: SensitivityCell, local: LocalError) -> SensitivityCell:
    return SensitivityCell(
        cell.layer,
        cell.config,
        cell.divergence,
        cell.compressed,
        cell.affected_layers,
        cell.notes,
        cell.task_metrics,
        exact=True,
        estimate=_finite(local.local_sqnr_db),
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _spearman(
    cells: Mapping[tuple[str, str], SensitivityCell],
    estimates: Mapping[tuple[str, str], LocalError],
    metric: str,
) -> float | None:
    """Spearman's rho between −local SQNR and the exact score over the exact cells (None: under 3 cells
    or a constant side)."""
    pairs = [
        (-min(estimates[key].local_sqnr_db, 300.0), cell.score(metric))
        for key, cell in cells.items()
        if math.isfinite(cell.score(metric))
    ]
    if len(pairs) < 3:
        return None
    a, b = (_ranks(np.array([p[i] for p in pairs], np.float64)) for i in (0, 1))
    if a.std() == 0 or b.std() == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (Spearman's rho is Pearson's r of these; numpy, since importing
    scipy.stats took 3.5 s of a 21 s screening)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values), dtype=np.float64)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return np.asarray(sums[inverse] / counts[inverse])
