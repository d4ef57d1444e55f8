"""What sensitivity and sweep jobs load first, alike: the model opened as a CompressibleModel and prepared,
and the first `max_samples` samples of the dataset bound to its inputs (labels kept apart).

When the job quantizes activations (`CalibrationRequest`), the samples that calibrate them are kept apart
from the evaluated ones by `backend.calibration_split.plan_split`: a named calibration set, or the
evaluation dataset's first samples held out (then the evaluated samples start after them)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backend.calibration_split import CalibrationSplit, CalibrationSplitError, plan_split
from backend.db.models import Dataset, Model, ModelStatus
from task_specs.text import TEXT_KINDS
from worker.engine.errors import DatasetMismatchError, ModelLoadError
from worker.jobs.inputs import detached_row, read_dataset
from worker.jobs.model_files import model_file
from worker.jobs.text_dataset_step import TaskParams, TextTokenizing
from worker.runtime import JobContext


@dataclass(frozen=True)
class PreparedModel:
    model: Model  # the row, detached
    handle: Any  # a CompressibleModel, prepared
    feeds: dict[str, np.ndarray]
    labels: np.ndarray | None  # the same samples' labels, None when the dataset has none
    annotations: dict[str, np.ndarray] = field(default_factory=dict)  # the other arrays (masks, targets...)
    calibration_feeds: dict[str, np.ndarray] | None = None  # bound to the inputs; disjoint from `feeds`
    split: CalibrationSplit | None = None  # which samples calibrate and which are evaluated


@dataclass(frozen=True)
class CalibrationRequest:
    """A job that quantizes activations: its calibration set (None: held out of the evaluation set)."""

    dataset_id: uuid.UUID | None
    samples: int | None


def open_prepared(
    ctx: JobContext,
    model_id: uuid.UUID,
    dataset_id: uuid.UUID,
    max_samples: int,
    threads: int | None,
    calibration: CalibrationRequest | None = None,
    text_task: TaskParams | None = None,
) -> PreparedModel:
    """The compressible model and the dataset's arrays bound to its inputs. A text dataset (issue 31) is
    tokenized with the tokenizer.json in the model's zip for `text_task` (a sweep of task 'language_model');
    a job that names none refuses it."""
    from worker.engine.compression import open_compressible
    from worker.engine.compression.model import first_sample
    from worker.engine.fidelity.compare import bind_inputs
    from worker.engine.tasks.image_output import TARGETS_KEY

    if threads is not None:
        # Compression runs torch ops (quantizers, SVD) even on ONNX models: pin torch's pool too, or two
        # workers on one machine oversubscribe its cores (measured: a 12-point sweep 0.62x with 2 workers).
        import torch

        torch.set_num_threads(threads)
    model = detached_row(ctx, Model, model_id)
    if model.status == ModelStatus.invalid.value:
        raise ModelLoadError(f"the model {model.name!r} is invalid: {model.error}")
    dataset = detached_row(ctx, Dataset, dataset_id)
    file = model_file(ctx, model)
    handle = None
    tokenizing = None
    if dataset.kind in TEXT_KINDS:  # tokenized by the model's own tokenizer: the model is opened first
        if text_task is None:
            raise DatasetMismatchError(
                f"the dataset {dataset.name!r} is text; only a fidelity job or a sweep of task 'language_model' "
                "tokenizes it"
            )
        handle = open_compressible(*file, intra_op_threads=threads)
        tokenizing = TextTokenizing(text_task, file, handle)
    arrays = read_dataset(ctx, dataset, tokenize=tokenizing)
    if tokenizing is not None and handle is not None:  # a decoder's positions (and empty cache) per sample
        from worker.engine.tasks.generation.teacher_forced import teacher_forced_arrays

        arrays |= teacher_forced_arrays(handle.inputs, handle.outputs, arrays)
    labels = arrays.pop("labels", None)
    split, held = _split(ctx, dataset, arrays, max_samples, calibration)
    start, stop = (0, max_samples) if split is None else (split.evaluation_start, split.evaluation_stop)
    arrays = {name: a[start:stop] for name, a in arrays.items()}
    labels = None if labels is None else labels[start:stop]
    if handle is None:
        handle = open_compressible(*file, intra_op_threads=threads)
    feeds = bind_inputs(arrays, handle.inputs)
    calibration_feeds = None
    if held is not None:
        try:
            calibration_feeds = bind_inputs(held, handle.inputs)
        except DatasetMismatchError as exc:
            raise DatasetMismatchError(f"the calibration samples do not fit the model: {exc}") from exc
    handle.prepare(first_sample(feeds))
    # the arrays no input took (masks, transcripts, targets), read by a task; when the dataset's one array was
    # bound to the model's one input under another name, only the arrays never taken for an input remain
    by_name = all(name in arrays for name in feeds)
    annotations = {
        name: a for name, a in arrays.items() if name not in feeds and (by_name or name == TARGETS_KEY)
    }
    return PreparedModel(model, handle, feeds, labels, annotations, calibration_feeds, split)


def _split(
    ctx: JobContext,
    dataset: Dataset,
    arrays: dict[str, np.ndarray],
    max_samples: int,
    request: CalibrationRequest | None,
) -> tuple[CalibrationSplit | None, dict[str, np.ndarray] | None]:
    """The split (the rule the API checked, now on the arrays read) and the calibration arrays."""
    if request is None:
        return None, None
    n = min((len(a) for a in arrays.values()), default=0)
    named = None if request.dataset_id is None else detached_row(ctx, Dataset, request.dataset_id)
    try:
        split = plan_split(
            evaluation_dataset_id=str(dataset.id),
            evaluation_samples=n,
            max_samples=max_samples,
            calibration_dataset_id=None if named is None else str(named.id),
            calibration_dataset_samples=None if named is None else named.n_samples,
            calibration_samples=request.samples,
            same_content=named is not None and named.artifact_sha256 == dataset.artifact_sha256,
        )
    except CalibrationSplitError as exc:
        raise DatasetMismatchError(str(exc)) from exc
    if named is None:
        source = arrays
    else:
        source = read_dataset(ctx, named, split.calibration_stop)
        source.pop("labels", None)
    held = {name: a[split.calibration_start : split.calibration_stop] for name, a in source.items()}
    return split, held
