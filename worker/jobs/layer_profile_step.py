"""The fidelity job's layer-profile step: when the job asks for it (layer_profile, on by default), both models
are instrumented and run over the dataset's first layer_profile_samples samples, and the per-layer
divergence (worker/engine/layer_profile) is one more stored document, RESULT_FIDELITY_LAYERS.

Two extras ride on it. ONNX pairs get the kernel gap (worker/engine/layer_profile/kernel_gap.py): the deployed runtimes'
output SQNR over the profile's samples against the profile's simulated one, which takes a second output-level
pass when the profile covers only a subset of the dataset. A job that names a calibration set gets each
golden layer's calibration range and the share of evaluation values outside it.

Like the robustness and attention steps, the profile is extra: whatever stops it (a model the instrumented
runtime refuses, an allocation that fails, a bug) leaves a document whose ``error`` says why and what to
change, and the output-level report stands; a calibration set that cannot be read is a note in the profile
(an extra of an extra). Only a cancellation and the soft time limit go through.
"""

from __future__ import annotations

import logging
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded

from backend.contracts import FidelityJobParams
from worker.engine.errors import EngineError, JobCancelled
from worker.engine.types import ONNX_FORMATS, ModelFormat, Runner
from worker.runtime import JobContext, json_safe, out_of_memory, raise_if_stopping

if TYPE_CHECKING:
    from worker.engine.fidelity.compare import FidelityParams

logger = logging.getLogger(__name__)

CalibrationReader = Callable[[uuid.UUID, int], tuple[str, dict[str, np.ndarray]]]
"""read(dataset_id, limit) -> (name, arrays): a dataset's first `limit` samples (and labels)."""


class ProfilePlan(NamedTuple):
    """How many samples the profile covers and how many the kernel gap re-runs, known before any work."""

    n_profiled: int  # the first n_profiled samples are profiled (0: no profile)
    n_rerun: int  # ONNX pairs re-run at the output level on a profiled subset (0: the clean pass covers it)
    onnx_pair: bool


def profile_plan(
    params: FidelityJobParams, models: Sequence[tuple[Path, ModelFormat]], n: int
) -> ProfilePlan:
    """The profile's share of a job over n samples of the models `models` (golden, compressed)."""
    n_profiled = min(n, params.layer_profile_samples) if params.layer_profile else 0
    onnx_pair = all(fmt in ONNX_FORMATS for _, fmt in models)
    return ProfilePlan(n_profiled, n_profiled if onnx_pair and n_profiled < n else 0, onnx_pair)


def kernel_gap_outputs(
    ctx: JobContext,
    plan: ProfilePlan,
    runners: Sequence[Runner],
    arrays: Mapping[str, np.ndarray],
    clean_outputs: Mapping[str, Mapping[str, Any]],
    fidelity_params: FidelityParams,
    start: float,
    end: float,
) -> Mapping[str, Mapping[str, Any]] | None:
    """The deployed runtimes' output metrics over the profile's samples, which the kernel gap compares
    with the profile: None unless the pair is ONNX and profiled; the clean pass's `clean_outputs`
    (FidelityReport.outputs) when the profile covers the whole dataset; else a second output-level pass of
    `runners` over the first n_profiled samples, its progress running from `start` to `end`."""
    if not plan.onnx_pair or plan.n_profiled == 0:
        return None
    if plan.n_rerun == 0:
        return clean_outputs
    from worker.engine.fidelity.compare import compare_models

    def on_progress(done: int, total: int) -> None:
        ctx.progress(
            start + (end - start) * done / max(total, 1),
            f"runtime outputs on the layer profile's {total} samples: {done}",
        )

    subset = {name: a[: plan.n_profiled] for name, a in arrays.items()}
    return compare_models(
        runners[0], runners[1], subset, None, fidelity_params, on_progress=on_progress
    ).outputs


def layer_profile_results(
    ctx: JobContext,
    params: FidelityJobParams,
    models: list[tuple[Path, ModelFormat]],
    arrays: dict[str, np.ndarray],
    plan: ProfilePlan,
    start: float,
    runtime_outputs: Mapping[str, Mapping[str, Any]] | None,
    read_calibration: CalibrationReader,
) -> dict[str, Any] | None:
    """The RESULT_FIDELITY_LAYERS document when the job asks for a profile, else None.
    read_calibration(id, limit) -> (name, arrays) reads the first `limit` samples of the job's calibration
    set, when it names one (worker.jobs.inputs.named_dataset)."""
    if not params.layer_profile:
        return None
    calibration = calibration_arrays(params, read_calibration)
    return _layer_profile(ctx, params, models, arrays, plan.n_profiled, start, runtime_outputs, calibration)


def calibration_arrays(
    params: FidelityJobParams, read: CalibrationReader
) -> dict[str, np.ndarray] | str | None:
    """The job's calibration set's first calibration_samples samples, without its labels, None when the
    job names none, or why it cannot be read (the profile then says so in a note: the calibration range is
    an extra of an extra). The limit goes down to the reader: an .npz stays memory-mapped and is cut
    without reading the rest, a zip of images decodes only its first calibration_samples images (a
    calibration set is often a training set: 50,000 images at 224 x 224 RGB would be 30 GB decoded)."""
    if params.calibration_dataset_id is None:
        return None
    try:
        _, arrays = read(params.calibration_dataset_id, params.calibration_samples)
    except (JobCancelled, SoftTimeLimitExceeded):
        raise
    except Exception as exc:
        raise_if_stopping(exc)
        return f"The calibration set could not be read ({type(exc).__name__}: {exc}); no calibration ranges."
    arrays.pop("labels", None)
    return {key: a[: params.calibration_samples] for key, a in arrays.items()}


def _layer_profile(
    ctx: JobContext,
    params: FidelityJobParams,
    models: list[tuple[Path, ModelFormat]],
    arrays: dict[str, np.ndarray],
    n_profiled: int,
    start: float,
    runtime_outputs: Mapping[str, Mapping[str, Any]] | None = None,
    calibration: Mapping[str, np.ndarray] | str | None = None,
) -> dict[str, Any]:
    """The per-layer profile over the first n_profiled samples, as a JSON document. A profile that cannot
    be made, for any reason (a model the instrumented runtime refuses, an allocation that fails, a bug),
    does not fail the job: the output-level report stands, and the document's ``error`` says why the
    profile is missing and what to change. Only a cancellation and the soft time limit go through (the
    job must stop then).

    The profile re-cuts the samples into its own batches, sized from KNEEBOARD_PROFILE_MEMORY_BUDGET_MB
    (settings.profile_memory_budget_mb), whatever the job's batch_size.

    runtime_outputs (ONNX pairs only): the deployed runtimes' output metrics over the same n_profiled
    samples (kernel_gap_outputs). With them the document gets ``kernel_gap``, one entry per model
    output that is a profiled layer: the profile's simulated SQNR there against the runtime's (see
    worker/engine/layer_profile/kernel_gap.py); a significant gap also gets a note, in the entry's ``note`` and in the
    profile's notes. Without them ``kernel_gap`` is None.

    calibration: the job's calibration set (calibration_arrays): the profile records each golden layer's
    range on it and reports the share of evaluation values outside (engine layer_profile/calibration.py);
    a string is why it could not be read, added to the profile's notes.
    """
    from worker.engine.layer_profile import profile_layers
    from worker.engine.layer_profile.kernel_gap import cpu_vnni, kernel_gap_note, kernel_gaps

    def on_progress(done: int) -> None:
        ctx.progress(
            start + (1 - start) * done / n_profiled, f"layer profile: {done} of {n_profiled} samples"
        )

    def on_calibration_progress(done: int) -> None:
        ctx.progress(start, f"layer profile: golden ranges on the calibration set, {done} samples")

    ctx.progress(start, "layer profile: capturing the layers of both models")
    budget = ctx.settings.profile_memory_budget_mb
    try:
        profile = profile_layers(
            *models[0],
            *models[1],
            [{name: a[:n_profiled] for name, a in arrays.items()}],  # memory-mapped: sliced per batch
            name_map=params.layer_name_map,
            on_progress=on_progress,
            memory_budget_mb=budget,
            intra_op_threads=params.threads,
            calibration_batches=None
            if calibration is None or isinstance(calibration, str)
            else [calibration],
            calibration_samples=params.calibration_samples,
            on_calibration_progress=on_calibration_progress,
        )
        if isinstance(calibration, str):
            profile.notes.append(calibration)
        entries: list[dict[str, Any]] | None = None
        if runtime_outputs is not None:
            gaps = kernel_gaps(profile.layers, runtime_outputs)
            vnni = cpu_vnni() if any(gap.significant for gap in gaps) else None
            entries = []
            for gap in gaps:
                note = kernel_gap_note(gap, profile.n_samples, vnni) if gap.significant else None
                if note is not None:
                    profile.notes.append(note)
                entries.append(gap.to_dict() | {"note": note})
        return cast(dict[str, Any], json_safe(profile.to_dict() | {"kernel_gap": entries}))
    except (JobCancelled, SoftTimeLimitExceeded):
        raise
    except Exception as exc:  # the profile is extra: whatever stops it must not take the report with it
        raise_if_stopping(exc)  # the engine wraps runtime failures; a stop inside one still stops
        return {"error": profile_error(exc, out_of_memory(exc), budget)}


def profile_error(exc: Exception, memory: bool, budget_mb: float) -> str:
    """Why the profile is missing, and what to change."""
    if memory:
        return (
            f"the layer profile ran out of memory ({type(exc).__name__}: {exc}). The output-level report "
            f"is complete. Lower KNEEBOARD_PROFILE_MEMORY_BUDGET_MB (now {budget_mb:g} MiB: the profile's "
            "batches hold every layer of both models) or raise the worker's memory limit "
            "(KNEEBOARD_WORKER_MEMORY_LIMIT_MB), or run the job with layer_profile=false."
        )
    if isinstance(exc, EngineError):
        return f"the layer profile could not be made: {exc}"
    logger.error("the layer profile failed:\n%s", traceback.format_exc())
    return (
        f"the layer profile could not be made (internal error {type(exc).__name__}: {exc}; please report "
        "it). The output-level report is complete; run the job with layer_profile=false to skip the profile."
    )
