"""What sensitivity and sweep jobs load first, alike: the model opened as a CompressibleModel and prepared,
and the first `max_samples` samples of the dataset bound to its inputs (labels kept apart)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backend.db.models import Dataset, Model, ModelStatus
from worker.engine.errors import ModelLoadError
from worker.jobs.inputs import detached_row, read_dataset
from worker.jobs.model_files import model_file
from worker.runtime import JobContext


@dataclass(frozen=True)
class PreparedModel:
    model: Model  # the row, detached
    handle: Any  # a CompressibleModel, prepared
    feeds: dict[str, np.ndarray]
    labels: np.ndarray | None  # the same samples' labels, None when the dataset has none
    annotations: dict[str, np.ndarray] = field(default_factory=dict)  # the other arrays (masks, targets...)


def open_prepared(
    ctx: JobContext, model_id: uuid.UUID, dataset_id: uuid.UUID, max_samples: int, threads: int | None
) -> PreparedModel:
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
    arrays = read_dataset(ctx, dataset)
    labels = arrays.pop("labels", None)
    arrays = {name: a[:max_samples] for name, a in arrays.items()}
    handle = open_compressible(*model_file(ctx, model), intra_op_threads=threads)
    feeds = bind_inputs(arrays, handle.inputs)
    handle.prepare(first_sample(feeds))
    # the arrays no input took (masks, transcripts, targets), read by a task; when the dataset's one array was
    # bound to the model's one input under another name, only the arrays never taken for an input remain
    by_name = all(name in arrays for name in feeds)
    annotations = {
        name: a for name, a in arrays.items() if name not in feeds and (by_name or name == TARGETS_KEY)
    }
    return PreparedModel(model, handle, feeds, None if labels is None else labels[:max_samples], annotations)
