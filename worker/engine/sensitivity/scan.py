"""Layer-wise sensitivity, compression schedules and mixed-precision plans (the engine of a sensitivity job).

`layer_sensitivity` compresses each compressible layer alone ("only") or every layer but one
("all_but") with each config, runs the calibration set and measures the primary output against the
golden one (`compression.divergence`: KL(P‖Q) mean in nats, top-1 agreement, SQNR in dB, MSE).

Speed: for ONNX models the "only" cells re-run just the part of the graph downstream of their layer,
from golden activations computed once per group of layers (`sensitivity_suffix`, `suffix_onnx`), with
the same numbers as re-running the whole model (`reuse_prefix=False`, kept for tests and benchmarks).

Task: with `task=TaskScoring(...)` every cell runs the whole compressed model and is scored by the task
too (`task_cells`: the cell's `task_metrics`); `rank_by` then ranks layers by one of them.

Chunks: a job may split the layers over workers, `layer_sensitivity(..., layers=chunk)` each, and
`merge_sensitivity` joins the results. Every chunk sees the whole model (layer metadata, depth order,
golden outputs and activation ranges are computed from the full model and the same calibration set,
and every evaluation starts from the untouched golden weights), so merged chunks equal one full run
exactly; merging checks that the chunks agree on model, data, configs and mode.

Split by job: the result types and the ranking are in `sensitivity_result`, merging in
`sensitivity_merge`, schedules and mixed-precision plans in `sensitivity_plans`; this module measures
and re-exports every name of those.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from worker.engine.compression import as_compressible
from worker.engine.compression.configs import Config, config_from_dict, needs_activation_stats
from worker.engine.compression.divergence import Divergence, Golden, golden_outputs, measure
from worker.engine.compression.importance import ChannelImportance, ImportanceMethod, channel_importance
from worker.engine.compression.layers import CompressionOutcome
from worker.engine.compression.mixed_precision import InfeasibleBudgetError
from worker.engine.compression.model import Calibration, CompressibleModel, Feeds, compressed, first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.errors import EngineError
from worker.engine.sensitivity.merge import SensitivityMergeError, merge_sensitivity
from worker.engine.sensitivity.plans import (
    MixedPrecisionPlan,
    PlanMeasurement,
    ScheduleStage,
    compression_schedule,
    measure_plan,
    plan_mixed_precision,
)
from worker.engine.sensitivity.result import Mode, Progress, SensitivityCell, SensitivityResult
from worker.engine.sensitivity.suffix import only_cells_from_suffix
from worker.engine.sensitivity.task_cells import WHOLE_MODEL_NOTE, TaskScoring, task_cells

__all__ = [
    "ChannelImportance",
    "InfeasibleBudgetError",
    "MixedPrecisionPlan",
    "Mode",
    "PlanMeasurement",
    "Progress",
    "ScheduleStage",
    "SensitivityCell",
    "SensitivityMergeError",
    "SensitivityResult",
    "TaskScoring",
    "channel_importance",
    "compression_schedule",
    "importance",
    "layer_sensitivity",
    "measure_plan",
    "merge_sensitivity",
    "plan_mixed_precision",
    "scan_batch_size",
]

SCAN_BATCH_CAP = 64
"""The scan's batch when the model's activations are small (or unknown): the job's former default."""
SCAN_BATCH_ACTIVATION_BYTES = 40 << 20
"""At most this many bytes for a batch's largest tensor. Measured on EfficientNet-Lite0 at 224 px (largest
tensor 4.8 MB a sample: batch 8), 17 layers x W8/W4 on 256 crops as a job, 1 thread per worker, three
alternating runs: batch 8 took 40.8-45.7 s on one worker and 23.3-24.5 s on two, batch 32 43.1-47.7 s
and 26.1-28.5 s (two workers 1.75-1.94x one at batch 8, 1.51-1.81x at 32); batches 4 and 16 were like 8.
At 32 one tensor of a batch is 154 MB; smaller batches keep more of each pass in cache, which the two
workers' cores share with their memory bus. The ResNet-18 shape at 64 px (0.26 MB a sample) keeps 64."""


def scan_batch_size(model: CompressibleModel) -> int:
    """Samples per run of a sensitivity scan: as many as keep the largest tensor of a batch within
    SCAN_BATCH_ACTIVATION_BYTES, from 1 to SCAN_BATCH_CAP (the cap when the size is unknown). `model` must
    be prepared (that is when it learns its activations' size)."""
    largest = model.largest_activation_bytes
    if largest is None or largest <= 0:
        return SCAN_BATCH_CAP
    return max(1, min(SCAN_BATCH_CAP, SCAN_BATCH_ACTIVATION_BYTES // largest))


def _configs(configs: Sequence[Config | Mapping[str, Any]]) -> list[Config]:
    parsed = [c if not isinstance(c, Mapping) else config_from_dict(c) for c in configs]
    if not parsed:
        raise EngineError("configs must list at least one compression config")
    ids = [c.id for c in parsed]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise EngineError(f"configs must be distinct; repeated: {duplicates}")
    return parsed


def layer_sensitivity(
    golden: Any,
    calibration_feeds: Feeds,
    configs: Sequence[Config | Mapping[str, Any]],
    *,
    layers: Sequence[str] | None = None,
    mode: Mode = "only",
    batch_size: int | None = None,
    whole_model: bool = False,
    on_progress: Progress | None = None,
    reuse_prefix: bool = True,
    reference: Golden | None = None,
    activation_feeds: Feeds | None = None,
    task: TaskScoring | None = None,
    rank_by: str | None = None,
) -> SensitivityResult:
    """Sensitivity of each layer in `layers` (default: every compressible layer) to each config.

    golden: a CompressibleModel or anything `compression.as_compressible` accepts (nn.Module, ONNX
    ModelProto, torch.export program, TorchRunner...). mode "only": compress the layer alone; "all_but":
    compress every other layer. whole_model: also measure each config on all layers at once.
    on_progress(done, total) is called after each cell; it may raise JobCancelled.
    reuse_prefix: compute "only" cells of ONNX models from the golden prefix (`sensitivity_suffix`);
    False re-runs the whole model for every cell (the reference the fast path is tested against).
    reference: golden outputs computed beforehand in batches of `batch_size` (shared by fan-out chunks).
    batch_size: samples per run; None: `scan_batch_size(golden)`.
    activation_feeds: the samples activation ranges are calibrated on, disjoint from `calibration_feeds`
    (which are the samples measured); None calibrates on the measured samples themselves (noted when a
    config quantizes activations).
    task: score every cell on a task too (whole-model runs, see `task_cells`); rank_by: rank layers by one
    of its metrics (bare name, e.g. "map50_drop"; needs `task`).
    """
    if rank_by is not None and task is None:
        raise EngineError("rank_by names a task metric: pass the task that measures it")
    if mode not in ("only", "all_but"):
        raise EngineError(f"mode must be 'only' or 'all_but', got {mode!r}")
    if batch_size is not None and batch_size < 1:
        raise EngineError(f"batch_size must be at least 1, got {batch_size}")
    parsed = _configs(configs)
    model = as_compressible(golden)
    model.prepare(first_sample(calibration_feeds))
    batch_size = scan_batch_size(model) if batch_size is None else batch_size
    all_layers = [layer.name for layer in model.layers()]
    targets = list(dict.fromkeys(layers)) if layers is not None else all_layers
    model.check_layers(targets)
    if reference is None:
        reference = golden_outputs(model, calibration_feeds, batch_size)
    elif reference.batch_size != batch_size:
        raise EngineError(
            f"the golden outputs were computed in batches of {reference.batch_size}, not {batch_size}"
        )
    calibration = Calibration(
        model, calibration_feeds if activation_feeds is None else activation_feeds, batch_size
    )
    cells: dict[tuple[str, str], SensitivityCell] = {}
    total = len(targets) * len(parsed) + (len(parsed) if whole_model else 0)
    done = 0
    if task is not None:
        measured: Iterator[tuple[str, Config, Divergence, CompressionOutcome, dict[str, float | None]]] = (
            (c.layer, c.config, c.divergence, c.outcome, c.task_metrics)
            for c in task_cells(
                model,
                calibration_feeds,
                parsed,
                targets,
                all_layers,
                mode == "only",
                reference,
                calibration,
                task,
            )
        )
    else:
        measured = (
            (*cell, {})
            for cell in _only_or_all_but(
                model,
                calibration_feeds,
                parsed,
                targets,
                all_layers,
                mode,
                reference,
                calibration,
                reuse_prefix,
            )
        )
    for layer, config, divergence, outcome, metrics in measured:
        chosen = [layer] if mode == "only" else [name for name in all_layers if name != layer]
        cells[(layer, config.id)] = _cell(layer, config, divergence, outcome, chosen, mode, metrics)
        done += 1
        if on_progress is not None:
            on_progress(done, total)
    whole: dict[str, Divergence] = {}
    if whole_model:
        for config in parsed:
            with compressed(model, dict.fromkeys(all_layers, config), calibration) as (runner, _):
                whole[config.id] = measure(runner, calibration_feeds, reference)
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    notes = list(model.notes)
    if task is not None:
        notes.append(WHOLE_MODEL_NOTE)
    if rank_by is not None and cells and all(c.task_metrics.get(rank_by) is None for c in cells.values()):
        notes.append(
            f"ranked by {rank_by}, which no cell measured (the task block left it undefined: e.g. the "
            "dataset has no annotations to score against); every layer ties"
        )
    if activation_feeds is None and any(needs_activation_stats(c) for c in parsed):
        notes.append(
            "activation ranges calibrated on the measured samples themselves (no separate calibration set)"
        )
    return SensitivityResult(
        mode=mode,
        configs=parsed,
        layers=[layer.to_dict() for layer in model.layers()],
        cells=cells,
        primary_output=reference.output,
        output_kind=reference.kind,
        n_samples=reference.n_samples,
        model={
            "backend": model.backend,
            "weights_digest": model.weights_digest(),
            "golden_digest": reference.digest(),
        },
        whole_model=whole,
        notes=notes,
        batch_size=reference.batch_size,
        task=task.params.task if task is not None else "auto",
        rank_by=rank_by,
    )


def _only_or_all_but(
    model: CompressibleModel,
    feeds: Feeds,
    configs: list[Config],
    targets: list[str],
    all_layers: list[str],
    mode: Mode,
    reference: Golden,
    calibration: Calibration,
    reuse_prefix: bool,
) -> Iterator[tuple[str, Config, Divergence, CompressionOutcome]]:
    """Every layer × config cell: from the golden prefix where it applies, else by re-running the model."""
    if reuse_prefix and mode == "only" and isinstance(model, OnnxCompressible):
        fast = only_cells_from_suffix(model, feeds, configs, targets, reference, calibration)
        if fast is not None:
            yield from fast
            return
    for config in configs:
        cache: dict[Any, Any] = {}  # compressed tensors of each layer, reused by the cells of this config
        for layer in targets:
            chosen = [layer] if mode == "only" else [name for name in all_layers if name != layer]
            with compressed(model, dict.fromkeys(chosen, config), calibration, cache) as (runner, outcome):
                divergence = measure(runner, feeds, reference)
            yield layer, config, divergence, outcome


def _cell(
    layer: str,
    config: Config,
    divergence: Divergence,
    outcome: CompressionOutcome,
    chosen: list[str],
    mode: Mode,
    task_metrics: dict[str, float | None],
) -> SensitivityCell:
    affected = sorted({a for lst in outcome.affected_layers.values() for a in lst} - set(chosen))
    notes = list(outcome.notes)
    if mode == "all_but" and layer in affected:
        notes.append(f"{layer} shares a tensor with a compressed layer, so it was compressed too")
    if divergence.n_nonfinite:
        notes.append(f"{divergence.n_nonfinite} of {divergence.n_samples} compressed outputs hold NaN/Inf")
    changed = [name for lst in outcome.changed.values() for name in lst]
    return SensitivityCell(layer, config.id, divergence, changed, affected, notes, task_metrics)


def importance(
    golden: Any, layer: str, method: ImportanceMethod, calibration_feeds: Feeds | None = None, **kwargs: Any
) -> ChannelImportance:
    """`compression.importance.channel_importance` on anything `as_compressible` accepts."""
    return channel_importance(as_compressible(golden), layer, method, calibration_feeds, **kwargs)
