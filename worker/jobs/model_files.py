"""The local file of an uploaded model, checked against this worker's archive rules before the engine sees it.

The engine knows no settings (it is usable from a notebook): the worker applies the service's archive
rules (dataset_readers/archives.py, limits from *its* settings, KNEEBOARD_ARCHIVE_*) to a zipped ONNX model
before any engine code extracts it. The API checked the archive at upload already; this runs again because
the worker is what writes the files to disk, and its limits may be stricter.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import cast, get_args

from backend.archive_limits import archive_limits
from backend.db.models import Model
from backend.settings import Settings
from dataset_readers.archives import UNREADABLE_ZIP_ERRORS, archive_problem, describe_zip_error
from worker.engine.errors import ModelLoadError
from worker.engine.loaders import ArchiveCheck
from worker.engine.types import ModelFormat
from worker.runtime import JobContext


def archive_check(settings: Settings) -> ArchiveCheck:
    """The engine's `check` for zip archives: dataset_readers.archives.archive_problem at these settings'
    limits."""
    limits = archive_limits(settings)

    def check(infos: Sequence[zipfile.ZipInfo], archive_bytes: int) -> str | None:
        return archive_problem(infos, archive_bytes, limits)

    return check


def model_format(model: Model) -> ModelFormat:
    """The model row's format as the engine names it (ModelLoadError for a format it does not know)."""
    if model.format not in get_args(ModelFormat):
        raise ModelLoadError(f"model {model.name!r} has unknown format {model.format!r}")
    return cast(ModelFormat, model.format)


def model_file(ctx: JobContext, model: Model) -> tuple[Path, ModelFormat]:
    """The model's local path and format; a zipped ONNX model that breaks this worker's archive rules raises
    ModelLoadError before anything is extracted."""
    path, fmt = ctx.store.local_path(model.artifact_sha256), model_format(model)
    if fmt == "onnx_zip":
        _check_zip(path, archive_check(ctx.settings))
    return path, fmt


def _check_zip(path: Path, check: ArchiveCheck) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            problem = check(archive.infolist(), path.stat().st_size)
    except UNREADABLE_ZIP_ERRORS as exc:
        raise ModelLoadError(f"Could not read the model as a zip archive: {describe_zip_error(exc)}") from exc
    if problem is not None:
        raise ModelLoadError(f"the model's zip archive {problem}; refusing it.")
