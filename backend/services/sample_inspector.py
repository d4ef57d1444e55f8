"""One sample of a fidelity job, for the sample inspector: both models' top-k classes and probabilities
(stored by the worker, worker/engine/fidelity/sample_topk.py) and a summary of the sample's input (read from the stored
dataset with backend/dataset_preview.py: only that sample's rows; never a model runtime).

The top-k document holds one row per sample; a sample's rows are read with JSON path expressions
(PostgreSQL ``#>``, SQLite ``json_extract``), so a request reads a few numbers, not the whole document.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import JSON, Select, Text, bindparam, func, select, true
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from backend.array_png import image_layout
from backend.dataset_preview import IMAGE_ARRAY, preview_image_zip, read_npz_rows
from backend.db.models import Dataset, Job, JobResult
from backend.errors import Conflict, NotFound
from backend.storage import ArtifactStore
from dataset_readers.interface import LABELS

RESULT_FIDELITY_SAMPLE_TOPK = "fidelity.sample_topk"
"""The job result (written by worker/jobs/fidelity.py FidelityHandler) holding every sample's top-k."""

ROLES = ("golden", "compressed")


@dataclass(frozen=True)
class TopKIndex:
    """What the stored top-k document covers."""

    k: int
    n_samples: int
    output_names: list[str]


def topk_index(session: Session, job_id: uuid.UUID) -> TopKIndex | None:
    """The document's k, sample count and outputs; None when the job has no top-k document (it ran before
    the inspector existed, or it has no classification output)."""
    payload = JobResult.payload
    row = session.execute(
        select(payload[("k",)], payload[("n_samples",)], payload[("output_names",)]).where(
            JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_SAMPLE_TOPK
        )
    ).one_or_none()
    if row is None:
        return None
    k, n, names = row
    return TopKIndex(int(k), int(n), [str(name) for name in names or []])


def _output_paths(
    session: Session, job_id: uuid.UUID, output: str, paths: list[tuple[str | int, ...]]
) -> Select[Any]:
    """The values at `paths` inside the document's ``outputs[output]``, for any output name.

    An ONNX output may be named anything (quotes, commas, braces, slashes, spaces, a leading ``$``), so the
    name never goes into a JSON path expression, which SQLAlchemy formats without escaping: PostgreSQL gets
    the path as a bound ``text[]``; SQLite picks the output with ``json_each`` by comparing its key with a
    bound value, and only fixed keys and indexes remain in the path."""
    found = (JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_SAMPLE_TOPK)
    if session.get_bind().dialect.name == "postgresql":
        columns = [
            JobResult.payload.op("#>", return_type=JSON)(
                bindparam(None, ["outputs", output, *(str(p) for p in path)], type_=ARRAY(Text))
            )
            for path in paths
        ]
        return select(*columns).where(*found)
    each = func.json_each(JobResult.payload, "$.outputs").table_valued("key", "value").alias("output")
    columns = [
        each.c.value.op("->", return_type=JSON)(
            "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        )
        for path in paths
    ]
    return select(*columns).select_from(JobResult).join(each, true()).where(*found, each.c.key == output)


def sample_topk(session: Session, job_id: uuid.UUID, output: str, index: int) -> dict[str, Any]:
    """One output's entry for one sample: compressed_output, num_classes, outputs_are_probabilities, and per
    role (golden, compressed) ``{"classes": [...], "probabilities": [...]}`` or None (output not finite)."""
    fields = ["compressed_output", "num_classes", "outputs_are_probabilities"]
    per_role = [(role, part) for role in ROLES for part in ("classes", "probabilities")]
    paths: list[tuple[str | int, ...]] = [(name,) for name in fields]
    paths += [(role, part, index) for role, part in per_role]
    row = session.execute(_output_paths(session, job_id, output, paths)).one()
    entry: dict[str, Any] = dict(zip(fields, row[: len(fields)], strict=True))
    values = dict(zip(per_role, row[len(fields) :], strict=True))
    for role in ROLES:
        classes, probabilities = values[(role, "classes")], values[(role, "probabilities")]
        entry[role] = (
            None if classes is None else {"classes": list(classes), "probabilities": list(probabilities)}
        )
    return entry


# --- the input --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputArray:
    """One array of one sample: shape, statistics of its finite values, and whether it draws as a picture."""

    name: str
    shape: list[int]
    dtype: str
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    nonfinite: int
    image: bool


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def array_summary(name: str, sample: np.ndarray) -> InputArray:
    """Shape and min / max / mean / std (population, float64) of the finite values."""
    shape = [int(s) for s in sample.shape]
    image = image_layout(sample.shape, sample.dtype) is not None
    if sample.dtype.kind not in "biuf" or sample.size == 0:
        return InputArray(name, shape, sample.dtype.name, None, None, None, None, 0, image)
    values = np.asarray(sample, dtype=np.float64).ravel()
    finite = values[np.isfinite(values)]
    nonfinite = int(values.size - finite.size)
    if finite.size == 0:
        return InputArray(name, shape, sample.dtype.name, None, None, None, None, nonfinite, image)
    return InputArray(
        name,
        shape,
        sample.dtype.name,
        float(finite.min()),
        float(finite.max()),
        _finite(float(finite.mean())),
        _finite(float(finite.std())),
        nonfinite,
        image,
    )


@dataclass(frozen=True)
class InputSummary:
    arrays: list[InputArray]
    label: int | None
    name: str | None  # the image's member in a zip of images


def input_summary(path: Path, kind: str, index: int, max_pixels: int | None) -> InputSummary:
    """The sample's arrays (an .npz: every array but labels; a zip of images: its picture) and label.
    NotFound for an index past the end (backend/dataset_preview.py says how many samples there are)."""
    if kind == "npz":
        _, rows = read_npz_rows(path, [index])
        labels = rows.get(LABELS)
        label = None
        if labels is not None and labels[0].ndim == 0 and labels[0].dtype.kind in "iu":
            label = int(labels[0])
        arrays = [array_summary(name, values[0]) for name, values in rows.items() if name != LABELS]
        return InputSummary(arrays, label, None)
    if kind == "image_zip":
        page = preview_image_zip(path, index, 1, max_pixels)
        if not page.items:
            raise NotFound(f"no sample {index}: the dataset has {page.total} samples")
        sample = page.items[0]
        if sample.error is not None:
            raise Conflict(sample.error)
        stats = sample.arrays[IMAGE_ARRAY]
        picture = InputArray(
            IMAGE_ARRAY,
            list(stats.shape),
            stats.dtype,
            stats.min,
            stats.max,
            stats.mean,
            None,  # the preview takes an 8-bit image's statistics from its histogram, which has no std
            stats.nonfinite,
            True,
        )
        return InputSummary([picture], sample.label, sample.name)
    raise Conflict(f"datasets of kind {kind!r} cannot be summarised")


def job_dataset_file(
    session: Session, store: ArtifactStore, job: Job
) -> tuple[Dataset | None, Path | None, str | None]:
    """The job's dataset row (detached, so no connection is held while the file is read) and its local file,
    or why there is none ("the job's dataset … was deleted")."""
    dataset = session.get(Dataset, uuid.UUID(str(job.params["dataset_id"])))
    if dataset is None:
        return None, None, f"the job's dataset {job.params['dataset_id']} was deleted"
    path = store.local_path(dataset.artifact_sha256)
    session.expunge(dataset)
    return dataset, path, None
