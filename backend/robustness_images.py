"""The corrupted inputs of the robustness slices' worst samples, as PNGs (issue 13): drawn and stored by
the worker (WorstPictures in worker/jobs/robustness_images.py, with this module's write_archive), served by
GET /jobs/{id}/robustness/{slice}/{severity}/samples/{index}.png (read_member).

All of a job's pictures are one ZIP archive in the artifact store (members stored, not deflated: PNG is
compressed already), keyed by its sha256 like any artifact and named by the robustness document's
``images.sha256``; deleting the job releases it (backend/services/artifacts.py) as it does a sweep's
exported models. One archive rather than a file per picture: a job has up to 8 image slices x 3
severities x 10 samples = 240 of them per image input array (more with several image inputs), and the
route reads one member without reading the rest. The archive also holds the job's id and attempt
(JOB_MEMBER), so no two jobs (nor two attempts of one) share it: a rerun's identical pictures are a
second archive, and deleting one job never releases the other's.

The standard library only: the API serves the bytes as stored; the worker draws them (with
backend.array_png.array_thumbnail).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

from backend.errors import NotFound, StorageError

PNG_MAX_SIDE = 128
"""Longest side of a stored picture: an 8x8 digit is enlarged 16x (nearest-neighbour: ~300 B a PNG), a
224-px photo shrunk to 128 px (measured on two ImageNet-normalised photos over the image slices: 25 kB a
PNG on average, 35 kB under severe noise; at 224 px it was 75 kB and 129 kB, 3x the store for the same
dashboard picture of 192 px)."""

_FIXED_DATE = (1980, 1, 1, 0, 0, 0)
"""The members' date: a result writer replayed after a database blip writes the same bytes again, so the
document names the artifact the first try put."""

JOB_MEMBER = "job.json"
"""The member naming the job and attempt the archive belongs to: {"job": id, "attempt": n}."""


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
    """One picture of the archive at path: the sample's `array`, or its first (by name) when None. An
    archive that cannot be read (truncated, corrupt, a member that fails its CRC) is a StorageError."""
    prefix = f"{slice_name}/{severity}/{index}/"
    try:
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
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as exc:
        # truncated: BadZipFile or EOFError; a flipped byte: a CRC BadZipFile, zlib.error or an unknown
        # compression method (NotImplementedError) in a damaged member header
        raise StorageError(
            f"the archive of the job's corrupted pictures ({path.name}) cannot be read ({type(exc).__name__}: "
            f"{exc}); relaunch the job to store them again"
        ) from exc
