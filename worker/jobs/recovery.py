"""Recovery jobs: recovery of a compressed torch model (worker/engine/recovery: training-free methods,
distillation, QAT) or ONNX model (AdaRound and bias correction), stored as a new model with its lineage, plus the before/after summary
("recovery.summary").

The dataset is split once, deterministically (a seeded permutation): the held-out share measures the
compressed model before and after each method, the rest calibrates (activation ranges, AdaRound's layer
inputs, bias correction's mean errors; distill/qat train on it, keeping a share of it out for early
stopping). Training methods report every step (loss, held-out KL) through the job's progress message,
and their loss curve is stored in the step's details. The recovered model is exported as sweeps export
their points (the real runtime form where the configuration has one, e.g. int8 weights + DequantizeLinear
for 4- and 8-bit weights), that file is run in onnxruntime against the golden model, and its figures are
stored too. The recovered model is inspected like an upload, graph included (worker/jobs/made_models.py).
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.contracts import RESULT_RECOVERY_LAYERS, RESULT_RECOVERY_SUMMARY, RESULT_SENSITIVITY_PLANS
from backend.db.models import Artifact, Dataset, JobResult, Model, ModelStatus, SweepPoint
from backend.recovery_contracts import RecoveryJobParams, parse_point_id
from backend.storage import copy_file_to_staging
from worker.engine.errors import DatasetMismatchError, EngineError, ModelLoadError
from worker.jobs.inputs import detached_row, read_dataset
from worker.jobs.made_models import add_made_model, inspect_made_model
from worker.jobs.model_files import model_file
from worker.jobs.recovered_name import recovered_model_name
from worker.jobs.recovery_layers import layers_before_after
from worker.jobs.recovery_progress import counted_message, recovery_fraction
from worker.runtime import JobContext, ResultWriter, json_safe

SPLIT_SEED = 0


def split_indices(n: int, heldout_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(calibration, held-out) sample indices: a permutation seeded with SPLIT_SEED, the first
    round(f·n) held out (at least one sample on each side)."""
    if n < 2:
        raise DatasetMismatchError(f"recovery needs at least 2 samples (calibration and held out), got {n}")
    order = np.random.default_rng(SPLIT_SEED).permutation(n)
    held = min(max(1, round(heldout_fraction * n)), n - 1)
    return np.sort(order[held:]), np.sort(order[:held])


def _calibration_block(dataset_id: str, calib_index: np.ndarray, held_index: np.ndarray) -> dict[str, Any]:
    """The summary's `calibration` (served as CalibrationSamplesOut): the calibration split's indices, which
    calibrated activation ranges and fitted the methods, and the held-out ones measured; never shared."""
    return {
        "source": "held_out",
        "dataset_id": dataset_id,
        "count": len(calib_index),
        "indices": [int(i) for i in calib_index],
        "evaluation_dataset_id": dataset_id,
        "evaluation_count": len(held_index),
        "disjoint": not set(calib_index.tolist()) & set(held_index.tolist()),
        "rule": f"a permutation of the dataset's samples seeded with {SPLIT_SEED}: the first share heldout_fraction "
        "is held out and measured (heldout_index), the rest calibrate",
    }


def _configuration(ctx: JobContext, params: RecoveryJobParams) -> Any:
    if params.config is not None:
        return params.config.model_dump(mode="json")
    if params.sensitivity_plan is not None:
        return _plan(ctx, params)
    with ctx.sessions() as session:
        job_id, index = parse_point_id(str(params.sweep_point_id))
        row = session.scalar(select(SweepPoint).where(SweepPoint.job_id == job_id, SweepPoint.index == index))
        if row is None:
            raise EngineError(f"sweep point {params.sweep_point_id} was deleted while the job waited")
        point = dict(row.point)
    found = point.get("config") or point.get("plan")
    if not found:
        raise EngineError(
            f"sweep point {params.sweep_point_id} is the uncompressed model: nothing to recover"
        )
    return found


def _plan(ctx: JobContext, params: RecoveryJobParams) -> dict[str, Any]:
    """The sensitivity job's mixed-precision plan as layer → configuration."""
    ref = params.sensitivity_plan
    assert ref is not None
    with ctx.sessions() as session:
        doc = session.scalar(
            select(JobResult.payload).where(
                JobResult.job_id == ref.job_id, JobResult.key == RESULT_SENSITIVITY_PLANS
            )
        )
    plans = (doc or {}).get("plans", [])
    plan = next(
        (p for p in plans if p.get("average_bits") == ref.average_bits and p.get("assignments")), None
    )
    if plan is None:
        raise EngineError(f"the plan of {ref.average_bits} average bits of job {ref.job_id} was deleted")
    return {layer: plan["configs"][config_id] for layer, config_id in plan["assignments"].items()}


class RecoveryHandler:
    def run(self, ctx: JobContext) -> ResultWriter:
        import torch

        from worker.engine.compression import open_compressible
        from worker.engine.recovery import (
            MethodSpec,
            export_recovered,
            export_unrecovered,
            measure_export,
            recover,
        )

        params = RecoveryJobParams.model_validate(ctx.params)
        torch.set_num_threads(params.threads)
        golden_row = detached_row(ctx, Model, params.golden_model_id)
        if golden_row.status == ModelStatus.invalid.value:
            raise ModelLoadError(f"the model {golden_row.name!r} is invalid: {golden_row.error}")
        dataset = detached_row(ctx, Dataset, params.dataset_id)
        configuration = _configuration(ctx, params)
        methods = [MethodSpec(m.name, m.model_dump(exclude={"name"})) for m in params.methods]
        ctx.progress(0.0, f"loading the model {golden_row.name!r} and the dataset {dataset.name!r}")
        arrays = read_dataset(ctx, dataset)
        labels = arrays.pop("labels", None)
        n = min(len(next(iter(arrays.values()))), params.max_samples) if arrays else 0
        calib_index, held_index = split_indices(n, params.heldout_fraction)
        calib = {name: np.asarray(a[:n])[calib_index] for name, a in arrays.items()}
        held = {name: np.asarray(a[:n])[held_index] for name, a in arrays.items()}
        held_labels = None if labels is None else np.asarray(labels[:n])[held_index]
        calib_labels = None if labels is None else np.asarray(labels[:n])[calib_index]
        golden = open_compressible(*model_file(ctx, golden_row), intra_op_threads=params.threads)
        task, held_annotations = _task(params, golden, held)

        stages = len(methods) + 3  # "before", each method, the export, the per-layer before/after

        def progress(method: str, done: int, total: int, message: str) -> None:
            position = 0 if method == "before" else 1 + [m.name for m in methods].index(method)
            ctx.progress(
                recovery_fraction(position, stages, done, total),
                counted_message(method, done, total, message),
            )

        outcome = recover(
            golden,
            configuration,
            calib,
            held,
            held_labels,
            methods,
            batch_size=params.batch_size,
            progress=progress,
            calibration_labels=calib_labels,
        )
        ctx.progress((stages - 2) / stages, "exporting the recovered model and running it in onnxruntime")
        with tempfile.TemporaryDirectory(prefix="kneeboard-recovery-") as tmp:
            path, manifest = export_recovered(
                golden,
                outcome,
                Path(tmp),
                calib,
                held,
                held_labels,
                batch_size=params.batch_size,
                task=task,
                annotations=held_annotations,
            )
            made = inspect_made_model(path, "onnx")  # like an upload: inspection and graph
            staged = copy_file_to_staging(path, ctx.store)
            ctx.store.put(staged)
            before = export_unrecovered(
                golden, outcome, Path(tmp) / "before", calib, batch_size=params.batch_size
            )
            task_before = (
                None
                if task is None
                else measure_export(
                    golden,
                    before,
                    held,
                    held_labels,
                    batch_size=params.batch_size,
                    task=task,
                    annotations=held_annotations,
                )
            )
            layers = layers_before_after(
                ctx,
                model_file(ctx, golden_row),
                {"before": before, "after": path},
                held,
                params.threads,
                (stages - 1) / stages,
                0.99,
            )
        model_id = uuid.uuid4()
        method_docs = [m.model_dump(mode="json") for m in params.methods]
        lineage = {
            "kind": "recovery",
            "parent_model_id": str(params.golden_model_id),
            "job_id": str(ctx.job_id),
            "dataset_id": str(params.dataset_id),
            "heldout_fraction": params.heldout_fraction,
            "sweep_point_id": params.sweep_point_id,
            "sensitivity_plan": None
            if params.sensitivity_plan is None
            else params.sensitivity_plan.model_dump(mode="json"),
            "point_id": outcome.plan_id,
            "config": outcome.plan["config"],
            "plan": outcome.plan["plan"],
            "methods": method_docs,
        }
        summary = json_safe(
            outcome.summary()
            | {
                "model_id": str(model_id),
                "lineage": lineage,
                "n_calibration": len(calib_index),
                "n_heldout": len(held_index),
                "heldout_index": [int(i) for i in held_index],
                "calibration": _calibration_block(str(params.dataset_id), calib_index, held_index),
                "labelled": held_labels is not None,
                "task": None
                if task_before is None
                else _task_before_after(
                    params.task,
                    task_before.get("task_metrics") or {},
                    manifest["metrics"]["measured"].get("task_metrics") or {},
                ),
                "export": {
                    "kind": manifest["kind"],
                    "file": manifest["file"],
                    "sha256": staged.sha256,
                    "size_bytes": staged.size_bytes,
                    "measured": manifest["metrics"]["measured"],
                    "notes": manifest["notes"],
                },
            }
        )
        name = params.name or recovered_model_name(
            golden_row.name, outcome.plan_id, [m.name for m in params.methods]
        )

        def write(session: Session) -> None:
            if session.get(Artifact, staged.sha256) is None:
                session.add(Artifact(sha256=staged.sha256, size_bytes=staged.size_bytes))
                session.flush()
            recovered = Model(
                id=model_id,
                project_id=golden_row.project_id,
                name=name[:200],
                filename=manifest["file"][:500],
                format="onnx",
                artifact_sha256=staged.sha256,
                size_bytes=staged.size_bytes,
                status=ModelStatus.ready.value,
                lineage=lineage,
                created_by=None,
            )
            add_made_model(session, recovered, made, ctx.job_id)
            session.add(JobResult(job_id=ctx.job_id, key=RESULT_RECOVERY_SUMMARY, payload=summary))
            session.add(JobResult(job_id=ctx.job_id, key=RESULT_RECOVERY_LAYERS, payload=layers))

        return write

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        return None


def _task(params: RecoveryJobParams, golden: Any, held: dict[str, np.ndarray]) -> tuple[Any, dict[str, Any]]:
    """With a task: the comparison parameters that score it, and the held-out arrays that are not model inputs
    (its annotations: masks, transcripts, targets...); (None, {}) for "auto"."""
    from worker.engine.fidelity.compare import FidelityParams

    if params.task == "auto":
        return None, {}
    inputs = {spec.name for spec in golden.inputs}
    annotations = {name: a for name, a in held.items() if name not in inputs}
    task = FidelityParams(
        batch_size=params.batch_size, task=params.task, task_options=dict(params.task_options)
    )
    return task, annotations


def _task_before_after(task: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """{"task", "metrics": [{metric, before, after, higher_is_better}]}: the task's numbers of the compressed
    export before recovery and of the recovered one, with kneeboard check's direction for each."""
    from task_specs.directions import higher_is_better

    names = list(dict.fromkeys([*before, *after]))
    return {
        "task": task,
        "metrics": [
            {
                "metric": name,
                "before": before.get(name),
                "after": after.get(name),
                "higher_is_better": higher_is_better(name),
            }
            for name in names
        ],
    }
