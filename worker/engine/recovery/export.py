"""The recovered model as a runnable ONNX file, and the compressed model before recovery likewise: the sweep's
`export_point` on each, the recovered one measured in onnxruntime against the golden model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from worker.engine.compression import CompressibleModel
from worker.engine.compression.model import Calibration, Feeds, first_sample
from worker.engine.fidelity.compare import FidelityParams, bind_inputs, compare_models
from worker.engine.recovery.outcome import RecoveryOutcome
from worker.engine.sweep.golden import GoldenReference, fidelity_summary, json_safe, point_spec


def export_recovered(
    golden: CompressibleModel,
    outcome: RecoveryOutcome,
    out_dir: Path,
    calibration_feeds: Feeds,
    heldout_feeds: Feeds,
    labels: np.ndarray | None,
    *,
    batch_size: int = 64,
    task: FidelityParams | None = None,
    annotations: Feeds | None = None,
) -> tuple[Path, dict[str, Any]]:
    """The recovered model as a runnable ONNX file (the real runtime form where the configuration has one,
    as sweep exports; else the simulated float graph) and its manifest, whose "metrics.measured" is the
    file run in onnxruntime against the *golden* model on the held-out split (with `task`, its task
    metrics too, read from `annotations`: the held-out samples' masks, transcripts...)."""
    path, manifest = _export(
        outcome.handle(), outcome, out_dir, bind_inputs(calibration_feeds, golden.inputs), batch_size
    )
    manifest["metrics"]["measured"] = measure_export(
        golden, path, heldout_feeds, labels, batch_size=batch_size, task=task, annotations=annotations
    )
    manifest["notes"].append(
        "metrics.measured: the file in onnxruntime against the golden model (held-out split)"
    )
    manifest = json_safe(manifest)
    path.with_suffix(".json").write_text(json.dumps(manifest, indent=2, allow_nan=False))
    return path, manifest


def measure_export(
    golden: CompressibleModel,
    path: Path,
    heldout_feeds: Feeds,
    labels: np.ndarray | None,
    *,
    batch_size: int = 64,
    task: FidelityParams | None = None,
    annotations: Feeds | None = None,
) -> dict[str, Any]:
    """An exported file run in onnxruntime against the golden model on the held-out split, summarised as a
    sweep point's fidelity (`fidelity_summary`: KL, agreement... and, with a task, `task_metrics`)."""
    from worker.engine.sweep.export import ort_runner

    heldout = bind_inputs(heldout_feeds, golden.inputs)
    runner = ort_runner(path)
    try:
        report = compare_models(
            GoldenReference(golden, heldout, batch_size),
            runner,
            heldout | dict(annotations or {}),  # the task reads its annotations beside the inputs
            labels,
            task or FidelityParams(batch_size=batch_size),
        )
    finally:
        runner.close()
    return fidelity_summary(report)


def export_unrecovered(
    golden: CompressibleModel,
    outcome: RecoveryOutcome,
    out_dir: Path,
    calibration_feeds: Feeds,
    *,
    batch_size: int = 64,
) -> Path:
    """The compressed model before recovery (the golden model compressed by the outcome's plan), exported in
    the same form as the recovered one: the other side of the per-layer before/after."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path, _ = _export(golden, outcome, out_dir, bind_inputs(calibration_feeds, golden.inputs), batch_size)
    return path


def _export(
    handle: CompressibleModel, outcome: RecoveryOutcome, out_dir: Path, calib: Feeds, batch_size: int
) -> tuple[Path, dict[str, Any]]:
    """`handle` compressed by the outcome's plan, exported as sweeps export a point: the real runtime form
    where the configuration has one, else the simulated float graph."""
    from worker.engine.sweep.export import export_point
    from worker.engine.sweep.export_nbits import NothingToQuantize
    from worker.engine.sweep.runtime_forms import runtime_support

    handle.prepare(first_sample(calib))
    spec = point_spec(handle, outcome.plan["config"] or outcome.plan["plan"])
    support = runtime_support(spec.plan, [layer.name for layer in handle.layers()])
    kind = "real" if support.preferred not in (None, "fp32", "simulated-float") else "simulated"
    calibration = Calibration(handle, calib, batch_size)
    try:
        return export_point(
            handle, spec.plan, out_dir, kind=kind, calibration=calibration, batch_size=batch_size
        )
    except (
        NothingToQuantize
    ):  # group-wise weights on a graph without MatMul/Gemm: the float file, as sweeps do
        return export_point(
            handle, spec.plan, out_dir, kind="simulated", calibration=calibration, batch_size=batch_size
        )
