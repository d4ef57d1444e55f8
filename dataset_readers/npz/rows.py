"""A few rows of the arrays of a stored .npz, without loading the arrays: plain functions over the file.

- a member stored without compression (what ``np.savez`` writes) is memory-mapped from the archive at its
  data offset and only the requested rows are copied out;
- a compressed member (``np.savez_compressed``) is streamed: the rows are read at their offsets,
  decompressing forward in bounded chunks, so memory stays flat even for a multi-GB array.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.lib import format as npy_format

from dataset_readers.errors import DatasetFormatError, SampleTooLarge
from dataset_readers.npz.headers import NPY_VERSIONS, read_npy_header, stored_data_start

MAX_SAMPLE_BYTES = 256 * 1024**2
"""One sample of one array larger than this is not read for a preview (refused with a clear message)."""

_STREAM_CHUNK = 4 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class NpzMember:
    name: str
    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fortran: bool
    data_offset: int  # where the array's data starts: in the archive (stored) or in the member (compressed)

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self.shape[1:]

    @property
    def row_items(self) -> int:
        return math.prod(self.sample_shape)

    @property
    def row_bytes(self) -> int:
        return self.row_items * self.dtype.itemsize


def _read_npy_header(f: IO[bytes], name: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = npy_format.read_magic(f)
    if version not in NPY_VERSIONS:
        raise DatasetFormatError(f"array {name!r} uses an unsupported .npy format version {version}")
    shape, fortran, dtype = read_npy_header(f, version)
    if dtype.hasobject:
        raise DatasetFormatError(f"array {name!r} has dtype object, which is never unpickled")
    return shape, fortran, dtype


def npz_members(path: Path, zf: zipfile.ZipFile) -> dict[str, NpzMember]:
    members: dict[str, NpzMember] = {}
    with path.open("rb") as raw:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.endswith(".npy"):
                continue
            name = info.filename[: -len(".npy")]
            if info.compress_type == zipfile.ZIP_STORED:
                raw.seek(stored_data_start(raw, info))
                shape, fortran, dtype = _read_npy_header(raw, name)
                offset = raw.tell()
            else:
                with zf.open(info) as f:
                    shape, fortran, dtype = _read_npy_header(f, name)
                    offset = f.tell()
            if not shape:
                raise DatasetFormatError(f"array {name!r} is a scalar; it has no samples")
            members[name] = NpzMember(name, info, shape, dtype, fortran, offset)
    return members


def _rows_stored(path: Path, member: NpzMember, indices: Sequence[int]) -> list[np.ndarray]:
    if member.row_items == 0 or not indices:
        return [np.zeros(member.sample_shape, member.dtype) for _ in indices]
    mapped = np.memmap(
        path,
        dtype=member.dtype,
        mode="r",
        offset=member.data_offset,
        shape=member.shape,
        order="F" if member.fortran else "C",
    )
    try:
        return [np.array(mapped[i]) for i in indices]
    finally:
        del mapped


def _rows_compressed(zf: zipfile.ZipFile, member: NpzMember, indices: Sequence[int]) -> list[np.ndarray]:
    """Rows of a compressed member, decompressing forward only, in bounded chunks."""
    if member.row_items == 0 or not indices:
        return [np.zeros(member.sample_shape, member.dtype) for _ in indices]
    order = sorted(range(len(indices)), key=lambda k: indices[k])
    out: list[np.ndarray | None] = [None] * len(indices)
    with zf.open(member.info) as f:
        if not member.fortran:
            for k in order:
                _advance(f, member.data_offset + indices[k] * member.row_bytes)
                data = f.read(member.row_bytes)
                if len(data) != member.row_bytes:
                    raise DatasetFormatError(f"array {member.name!r} ends before sample {indices[k]}")
                out[k] = np.frombuffer(data, dtype=member.dtype).reshape(member.sample_shape).copy()
        else:
            out = _gather_fortran(f, member, indices)
    return [row for row in out if row is not None]


def _advance(f: IO[bytes], target: int) -> None:
    """Move a member's read position to `target` by decompressing forward in small chunks (zipfile's own
    seek reads up to 16 MiB at a time); a position behind restarts from the beginning."""
    position = f.tell()
    if target < position:
        f.seek(0)
        position = 0
    while position < target:
        skipped = f.read(min(_SKIP_CHUNK, target - position))
        if not skipped:
            raise DatasetFormatError("an array of the .npz ends early")
        position += len(skipped)


def _gather_fortran(f: IO[bytes], member: NpzMember, indices: Sequence[int]) -> list[np.ndarray | None]:
    """Rows of a Fortran-ordered member: element t of sample i lies at flat position i + n * t, so one
    forward pass in chunks picks them out (time proportional to the member, memory to the rows)."""
    n, itemsize = member.shape[0], member.dtype.itemsize
    wanted = np.asarray(indices, dtype=np.int64)[:, None] + n * np.arange(member.row_items, dtype=np.int64)
    flat = wanted.ravel()
    order = np.argsort(flat, kind="stable")
    positions = flat[order]
    values = np.empty(flat.size, dtype=member.dtype)
    _advance(f, member.data_offset)
    start, done = 0, 0
    chunk_items = max(1, _STREAM_CHUNK // itemsize)
    while done < positions.size:
        data = f.read(chunk_items * itemsize)
        if not data:
            raise DatasetFormatError(f"array {member.name!r} ends early")
        items = np.frombuffer(data[: len(data) - len(data) % itemsize], dtype=member.dtype)
        end = start + items.size
        stop = int(np.searchsorted(positions, end, side="left"))
        values[order[done:stop]] = items[positions[done:stop] - start]
        done, start = stop, end
    rows = values.reshape(len(indices), member.row_items)
    return [rows[k].reshape(member.sample_shape, order="F").copy() for k in range(len(indices))]


def _check_row_size(member: NpzMember) -> None:
    if member.row_bytes > MAX_SAMPLE_BYTES:
        raise SampleTooLarge(
            f"one sample of array {member.name!r} is {member.row_bytes} bytes (shape {member.sample_shape}); "
            f"previews read samples up to {MAX_SAMPLE_BYTES} bytes"
        )


def npz_rows(
    path: Path, zf: zipfile.ZipFile, members: dict[str, NpzMember], indices: Sequence[int]
) -> dict[str, list[np.ndarray]]:
    rows: dict[str, list[np.ndarray]] = {}
    for name, member in members.items():
        _check_row_size(member)
        if member.info.compress_type == zipfile.ZIP_STORED:
            rows[name] = _rows_stored(path, member, indices)
        else:
            rows[name] = _rows_compressed(zf, member, indices)
    return rows


def npz_total(members: dict[str, NpzMember]) -> int:
    if not members:
        raise DatasetFormatError("the stored .npz holds no arrays")
    return next(iter(members.values())).shape[0]
