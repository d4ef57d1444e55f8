"""What a job reads: rows by id (detached, so no session stays open during the engine's work), datasets as
arrays and models in their runtime."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np

from backend.contracts import ImagePreprocessing
from backend.db.models import Dataset, Model, ModelStatus
from backend.image_datasets import describe_image_zip
from worker.engine.errors import DatasetMismatchError, ModelLoadError
from worker.engine.types import ModelFormat, Runner
from worker.jobs.model_files import model_file
from worker.runtime import JobContext

Row = TypeVar("Row", Model, Dataset)


def detached_row(ctx: JobContext, table: type[Row], row_id: uuid.UUID) -> Row:
    """A row read in a short session and detached, so no session stays open during the engine's work."""
    with ctx.sessions() as session:
        row = session.get(table, row_id)
        if row is None:
            error = ModelLoadError if table is Model else DatasetMismatchError
            raise error(f"{table.__name__.lower()} {row_id} was deleted while the job waited")
        session.expunge(row)
        return row


def load_dataset(
    path: Path, dataset: Dataset, cache_dir: Path | None = None, limit: int | None = None
) -> dict[str, np.ndarray]:
    """The dataset's arrays (and "labels" when it has them), whatever its upload format, cut to their first
    `limit` samples when given. .npz arrays are memory-mapped (compressed members are decompressed once into
    cache_dir / <sha256>) and the cut is a view, so a job holds only the batches it works on. A zip of
    images is decoded into memory, only its first `limit` images: 50,000 training images at 224 x 224 RGB
    would be 30 GB of float32, so a calibration set read whole would not fit."""
    if dataset.kind == "npz":
        from worker.engine.datasets.npz import load_npz_mapped

        cache = (cache_dir or Path(tempfile.gettempdir()) / "kneeboard-datasets") / dataset.artifact_sha256
        mapped = load_npz_mapped(path, cache)
        return mapped if limit is None else {key: a[:limit] for key, a in mapped.items()}
    if dataset.kind == "image_zip":
        from worker.engine.datasets.images import images_to_array

        recipe = ImagePreprocessing.model_validate(dataset.preprocessing or {})
        listing = describe_image_zip(str(path), path.stat().st_size, verify_images=False)
        arrays = {
            recipe.input_name: images_to_array(
                path,
                listing.images[:limit],
                recipe.size,
                recipe.mode,
                recipe.scale,
                recipe.mean,
                recipe.std,
                recipe.layout,
            )
        }
        if listing.labels is not None:
            arrays["labels"] = np.asarray(listing.labels[:limit], dtype=np.int64)
        return arrays
    raise DatasetMismatchError(f"dataset {dataset.name!r} has unknown kind {dataset.kind!r}")


def read_dataset(ctx: JobContext, dataset: Dataset, limit: int | None = None) -> dict[str, np.ndarray]:
    """`load_dataset` of a dataset row from the job's artifact store, cached in the worker's data dir."""
    return load_dataset(
        ctx.store.local_path(dataset.artifact_sha256), dataset, ctx.settings.data_dir / "dataset-cache", limit
    )


def named_dataset(
    ctx: JobContext, dataset_id: uuid.UUID, limit: int | None = None
) -> tuple[str, dict[str, np.ndarray]]:
    """(name, arrays) of a dataset of the job's project, read by id (its first `limit` samples when given)."""
    dataset = detached_row(ctx, Dataset, dataset_id)
    return dataset.name, read_dataset(ctx, dataset, limit)


class LoadedModel(NamedTuple):
    """A model row's runner and its local (path, format)."""

    runner: Runner
    file: tuple[Path, ModelFormat]


def load_runner(
    ctx: JobContext, model_id: uuid.UUID, role: str, threads: int | None, *, announce: bool = False
) -> LoadedModel:
    """Load the model `model_id` in its runtime (the golden, compressed or twin model of a job: `role` names
    it in messages); an invalid model raises ModelLoadError. `announce` reports the load as progress 0
    (the job's first steps; a model loaded later, as the twin, leaves the progress bar where it is)."""
    from worker.engine.loaders import load_model

    model = detached_row(ctx, Model, model_id)
    if model.status == ModelStatus.invalid.value:
        raise ModelLoadError(f"the {role} model {model.name!r} is invalid: {model.error}")
    if announce:
        ctx.progress(0.0, f"loading the {role} model {model.name!r}")
    file = model_file(ctx, model)
    return LoadedModel(load_model(*file, intra_op_threads=threads), file)
