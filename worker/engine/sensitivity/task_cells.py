"""Sensitivity cells scored on a task (issue 30): each layer × config cell runs the whole compressed model
over the dataset and compares it with the golden one through `fidelity.compare_models` with the scan's
task, so a cell carries its task block's numbers (mAP@.5 drop, mIoU drop, WER delta, PSNR drop...) beside
the KL / SQNR of its primary output.

Why whole-model runs: the golden-prefix fast path (`suffix`) re-runs only the part of an ONNX graph below
one layer and keeps the primary output alone, while a task decodes several outputs at once (a detector's
boxes, scores and labels) and reads annotations beside them; so a task cell costs one compressed pass over
the dataset, the cost the job's chunk split charges it (`worker/jobs/sensitivity_chunks.py`).

One pass per cell: the compressed runner is wrapped so the primary output of each batch `compare_models`
runs is kept, and the cell's `Divergence` is folded from those outputs by the same accumulator `measure`
uses (a runner with a fixed batch dimension pads its last batch, so the kept rows are checked against the
golden count and the divergence re-measured when they differ).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from worker.engine.compression.configs import Config
from worker.engine.compression.divergence import Divergence, DivergenceAccumulator, Golden, measure
from worker.engine.compression.layers import CompressionOutcome
from worker.engine.compression.model import Calibration, CompressibleModel, Feeds, compressed
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.sweep.golden import GoldenReference, fidelity_summary
from worker.engine.types import Runner, TensorSpec

WHOLE_MODEL_NOTE = (
    "task metrics: every cell ran the whole compressed model over the dataset (the golden-prefix reuse keeps "
    "the primary output alone, and the task reads every output it decodes)"
)


@dataclass(frozen=True)
class TaskScoring:
    """How a scan's cells are scored on a task: the comparison's options (task, task_options, batch size =
    the scan's), the arrays the task reads beside the model inputs (masks, targets, transcripts,
    annotations) and the samples' labels (or None)."""

    params: FidelityParams
    annotations: Mapping[str, np.ndarray] = field(default_factory=dict)
    labels: np.ndarray | None = None


@dataclass(frozen=True)
class TaskCell:
    layer: str
    config: Config
    divergence: Divergence
    outcome: CompressionOutcome
    task_metrics: dict[str, float | None]


class _Recording:
    """A runner that keeps the `output` of every batch it runs (in order)."""

    def __init__(self, runner: Runner, output: str) -> None:
        self._runner = runner
        self._output = output
        self.kept: list[np.ndarray] = []

    @property
    def inputs(self) -> list[TensorSpec]:
        return self._runner.inputs

    @property
    def outputs(self) -> list[TensorSpec]:
        return self._runner.outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = self._runner.run(feeds)
        if self._output in result:
            self.kept.append(np.asarray(result[self._output]))
        return result


def _divergence(recorded: _Recording, runner: Runner, feeds: Feeds, reference: Golden) -> Divergence:
    """The cell's divergence from the outputs `compare_models` already ran, or a fresh `measure` when they
    do not line up with the golden batches."""
    if not recorded.kept or sum(len(k) for k in recorded.kept) != reference.n_samples:
        return measure(runner, feeds, reference)
    rows = np.concatenate(recorded.kept)
    accumulator = DivergenceAccumulator(reference)
    start = 0
    for index, golden in enumerate(reference.outputs):
        accumulator.update(index, rows[start : start + len(golden)])
        start += len(golden)
    return accumulator.result()


def task_cells(
    model: CompressibleModel,
    feeds: Feeds,
    configs: list[Config],
    targets: list[str],
    all_layers: list[str],
    only: bool,
    reference: Golden,
    calibration: Calibration,
    scoring: TaskScoring,
) -> Iterator[TaskCell]:
    """Every layer × config cell, each a whole-model run scored by the task. `only`: compress the layer
    alone; else every other layer ("all_but")."""
    params = scoring.params
    if params.batch_size != reference.batch_size:
        raise EngineError(
            f"the task's batch size ({params.batch_size}) differs from the scan's ({reference.batch_size})"
        )
    golden = GoldenReference(model, feeds, reference.batch_size)  # every output, replayed per batch
    arrays = {**scoring.annotations, **feeds}
    for config in configs:
        cache: dict[Any, Any] = {}  # compressed tensors of each layer, reused by the cells of this config
        for layer in targets:
            chosen = [layer] if only else [name for name in all_layers if name != layer]
            with compressed(model, dict.fromkeys(chosen, config), calibration, cache) as (runner, outcome):
                recording = _Recording(runner, reference.output)
                report = compare_models(golden, recording, arrays, scoring.labels, params, sample_views=False)
                divergence = _divergence(recording, runner, feeds, reference)
            metrics = fidelity_summary(report)["task_metrics"]
            yield TaskCell(layer, config, divergence, outcome, metrics)
