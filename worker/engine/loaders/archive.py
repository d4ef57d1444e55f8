"""Extract an `onnx_zip` archive: exactly one .onnx plus its external data, refusing unsafe members."""

from __future__ import annotations

import stat
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath

from worker.engine.errors import ModelLoadError

ArchiveCheck = Callable[[Sequence[zipfile.ZipInfo], int], "str | None"]
"""The archive rules of the service that calls the engine: given a zip's directory and its size on disk, the
first problem as a phrase that completes "the zip archive ...", or None. The worker passes its settings'
limits (worker/jobs/model_files.py); the engine itself knows no limits and reads no settings."""


def extract_onnx_zip(path: Path, dest: Path, check: ArchiveCheck | None = None) -> Path:
    """Extract a zip holding exactly one .onnx (plus its external data) into `dest`; return the .onnx.

    Refuses, by raising ModelLoadError, archives for which `check` names a problem (the caller's archive
    rules: member count, total size, zip bombs, unsafe paths), members that would be written outside `dest`,
    and archives with zero or several .onnx files. `__MACOSX/` resource-fork entries are skipped.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            problem = _unsafe_member(archive.infolist())
            if problem is None and check is not None:
                problem = check(archive.infolist(), path.stat().st_size)
            if problem is not None:
                raise ModelLoadError(f"{path.name}: the zip archive {problem}; refusing it.")
            members = [info for info in archive.infolist() if not info.filename.startswith("__MACOSX/")]
            models = [info.filename for info in members if info.filename.lower().endswith(".onnx")]
            if len(models) != 1:
                raise ModelLoadError(
                    f"{path.name} must hold exactly one .onnx file, found {len(models)}: {models}."
                )
            for info in members:
                _extract_member(archive, info, dest)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, OSError) as exc:
        raise ModelLoadError(f"Could not read {path.name} as a zip archive: {exc}") from exc
    return dest / models[0]


def _unsafe_member(infos: Sequence[zipfile.ZipInfo]) -> str | None:
    """Why extracting some member could write outside its folder or create a link; None when none could.
    The engine refuses these whatever the caller's rules (the service's own, stricter check runs first)."""
    for info in infos:
        name = info.filename.replace("\\", "/")
        if name.startswith("/") or PureWindowsPath(info.filename).drive:
            return f"holds member {info.filename!r} with an absolute path"
        if ".." in PurePosixPath(name).parts:
            return f"holds member {info.filename!r}, which points outside the archive ('..')"
        if stat.S_ISLNK(info.external_attr >> 16):
            return f"holds member {info.filename!r}, a symbolic link"
    return None


def _extract_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path) -> None:
    target = dest.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
    if not target.resolve().is_relative_to(dest.resolve()):  # even when the caller's check let it through
        raise ModelLoadError(f"Zip entry {info.filename!r} would be written outside its folder; refusing it.")
    if info.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(info) as source, target.open("wb") as sink:
        while chunk := source.read(1 << 20):
            sink.write(chunk)
