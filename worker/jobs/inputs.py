"""What a job reads: rows by id (detached, so no session stays open during the engine's work), datasets as
arrays and models in their runtime."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np

from backend.archive_limits import archive_limits
from backend.contracts import ImagePreprocessing
from backend.db.models import Dataset, Model, ModelStatus
from dataset_readers.errors import DatasetFormatError, UnknownDatasetKind
from dataset_readers.interface import ReadOptions
from dataset_readers.registry import reader_for
from dataset_readers.text.parse import TextRecords
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


Tokenize = Callable[[TextRecords], dict[str, np.ndarray]]


def load_dataset(
    path: Path,
    dataset: Dataset,
    cache_dir: Path | None = None,
    limit: int | None = None,
    tokenize: Tokenize | None = None,
) -> dict[str, np.ndarray]:
    """The dataset's arrays (and "labels" when it has them), whatever its upload format, cut to their first
    `limit` samples when given: its kind's reader (dataset_readers) at this worker's archive limits, whose
    refusals become DatasetMismatchError. .npz arrays are memory-mapped (compressed members are
    decompressed once into cache_dir / <sha256>) and the cut is a view; a zip of images is decoded into
    memory, only its first `limit` images; a text dataset is tokenized by `tokenize` (refused without one)."""
    try:
        reader = reader_for(dataset.kind)
    except UnknownDatasetKind as exc:
        raise DatasetMismatchError(f"dataset {dataset.name!r} has unknown kind {dataset.kind!r}") from exc
    cache = (cache_dir or Path(tempfile.gettempdir()) / "kneeboard-datasets") / dataset.artifact_sha256
    recipe = ImagePreprocessing.model_validate(dataset.preprocessing or {})
    try:
        options = ReadOptions(recipe=recipe, cache_dir=cache, tokenize=tokenize)
        return reader.arrays(path, archive_limits(), options, limit)
    except DatasetFormatError as exc:
        raise DatasetMismatchError(exc.message) from exc


def read_dataset(
    ctx: JobContext, dataset: Dataset, limit: int | None = None, tokenize: Tokenize | None = None
) -> dict[str, np.ndarray]:
    """`load_dataset` of a dataset row from the job's artifact store, cached in the worker's data dir."""
    path = ctx.store.local_path(dataset.artifact_sha256)
    return load_dataset(path, dataset, ctx.settings.data_dir / "dataset-cache", limit, tokenize)


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
