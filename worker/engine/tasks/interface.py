"""The one small interface every task adapter implements, and the registry the fidelity comparison reads.

A task adapter turns both models' raw outputs into task predictions (boxes, masks, transcripts...) and scores
them: against the dataset's annotations when it carries them, and label-free against the golden model's own
predictions taken as ground truth. The comparison (`worker.engine.fidelity.compare.compare_models`) calls it
batch by batch beside the per-output divergence metrics, so a task never needs a second pass of the models:

1. `start(context)` once, at the first batch: the adapter checks the outputs it needs (names, per-sample
   shapes) and the dataset arrays it reads, and raises `OutputMismatchError` / `DatasetMismatchError` saying
   what it expected. The registry's `adapter_for(task)` returns a fresh adapter, or None for tasks handled by
   the per-output accumulators (classification, embedding, regression, image).
2. `update(golden, compressed, start, stop)` per batch, with every output of both models (golden names; the
   comparison maps compressed names onto them) and the batch's sample range; it returns the batch's
   per-sample task values (name → array of the batch's length), which the comparison gathers.
3. `to_dict()` at the end: the task block (JSON-safe). It is stored as the `task` of the adapter's
   `primary_output` in the fidelity summary, where `kneeboard check --max <metric>`, budgets and sweeps
   read task metrics (`task.<metric>`; a name ending in `_drop` is lower-is-better).

Adding a task: one module under `worker/engine/tasks/` with a class implementing `TaskAdapter`, and one line
in `_REGISTRY` below. The module must import only numpy, the engine's errors and maintained libraries
(torch, torchmetrics, jiwer, pycocotools...) inside functions that need them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class TaskContext:
    """What an adapter may look at when it starts.

    output_shapes: golden output name → per-sample shape of its first batch (the compressed model's outputs
        were already checked to have the same shapes).
    dataset: the whole dataset's arrays (memory-mapped where they come from a file), model inputs included;
        an adapter reads its annotations from here (e.g. `targets`, `boxes`) and slices [start:stop] per batch.
    n_samples: the dataset's length.
    options: the job's `task_options` (each adapter documents the keys it reads and refuses unknown ones).
    sample_views: whether an adapter that `ShowsSamples` keeps views for the inspector; False where nobody
        stores them (robustness chunks, sweep points), so pictures and waveforms are not encoded for nothing.
    """

    output_shapes: Mapping[str, tuple[int, ...]]
    dataset: Mapping[str, Any]
    n_samples: int
    options: Mapping[str, Any] = field(default_factory=dict)
    sample_views: bool = True


class TaskAdapter(Protocol):
    """Decodes and scores one task; see the module docstring for the call order."""

    name: str
    """The task's name as the job states it ("detection", "segmentation", "ctc"...)."""
    primary_output: str
    """The golden output whose metrics carry this task's block (set by `start`)."""

    def start(self, context: TaskContext) -> None: ...

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]: ...

    def to_dict(self) -> dict[str, Any]: ...


SAMPLE_VIEWS_MAX = 1000
"""Samples whose task predictions are kept for the sample inspector (the first ones of the dataset): a bound
on the stored document (a detector's 100 boxes per image are ~8 KB of JSON a sample)."""


@runtime_checkable
class ShowsSamples(Protocol):
    """An adapter whose predictions the sample inspector can draw (boxes, transcripts)."""

    def sample_views(self) -> dict[str, Any]:
        """{"task": name, "n_samples": how many are kept, "samples": [one JSON-safe dict per sample], ...}
        for the first `SAMPLE_VIEWS_MAX` samples, in dataset order."""
        ...


AdapterFactory = Callable[[], TaskAdapter]

_REGISTRY: dict[str, AdapterFactory] = {}


def register(name: str, factory: AdapterFactory) -> None:
    """Make `name` a task a fidelity job can name (called by `worker.engine.tasks.registry`)."""
    if name in _REGISTRY:
        raise ValueError(f"task {name!r} is registered twice")
    _REGISTRY[name] = factory


def adapter_for(task: str) -> TaskAdapter | None:
    """A fresh adapter for `task`, or None when the per-output accumulators handle it."""
    from worker.engine.tasks import registry  # noqa: F401  (registers every adapter once)

    factory = _REGISTRY.get(task)
    return None if factory is None else factory()


def adapter_tasks() -> list[str]:
    """The tasks that have an adapter, sorted."""
    from worker.engine.tasks import registry  # noqa: F401

    return sorted(_REGISTRY)
