"""The corrupted inputs of the robustness slices' worst samples, as PNGs (issue 13): written by the worker
(worker/robustness_step.py), served by GET /jobs/{id}/robustness/{slice}/{severity}/samples/{index}.png.

All of a job's pictures are one ZIP archive in the artifact store (members stored, not deflated: PNG is
compressed already), keyed by its sha256 like any artifact and named by the robustness document's
``images.sha256``; deleting the job releases it (backend/services/artifacts.py) as it does a sweep's
exported models. One archive rather than a file per picture: a job has up to 9 slices x 3 severities x
10 samples = 270 of them, and the route reads one member without reading the rest. The members are
written with a fixed date, so a rerun of the same job (seeded corruptions) gives the same bytes, and the
same artifact.

Numpy and Pillow only: the API serves the bytes as stored, the worker renders them with
backend.dataset_preview.array_thumbnail.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path

from backend.errors import NotFound

PNG_MAX_SIDE = 128
"""Longest side of a stored picture: an 8x8 digit is enlarged 16x (nearest-neighbour: ~300 B a PNG), a
224-px photo shrunk to 128 px (measured on two ImageNet-normalised photos over the image slices: 25 kB a
PNG on average, 35 kB under severe noise; at 224 px it was 75 kB and 129 kB, 3x the store for the same
dashboard picture of 192 px)."""

_FIXED_DATE = (1980, 1, 1, 0, 0, 0)


def member_name(slice_name: str, severity: int, index: int, array: str) -> str:
    return f"{slice_name}/{severity}/{index}/{array}.png"


def write_archive(pngs: Iterable[tuple[str, bytes]], target: Path) -> int:
    """Write (member name, PNG bytes) pairs to a ZIP at target; returns the number written."""
    count = 0
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, png in pngs:
            info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
            archive.writestr(info, png)
            count += 1
    return count


def read_member(path: Path, slice_name: str, severity: int, index: int, array: str | None) -> bytes:
    """One picture of the archive at path: the sample's `array`, or its first (by name) when None."""
    prefix = f"{slice_name}/{severity}/{index}/"
    with zipfile.ZipFile(path) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith(prefix))
        if array is not None:
            names = [n for n in names if n == prefix + f"{array}.png"]
        if not names:
            what = "its input" if array is None else f"its array {array!r}"
            raise NotFound(
                f"no corrupted picture of sample {index} at {slice_name} severity {severity} ({what})"
            )
        return archive.read(names[0])
