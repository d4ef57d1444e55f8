"""Reading .npz datasets without holding them in memory.

`np.load` on a .npz reads each array whole. Here every array is memory-mapped instead, so a job touches
only the batches it is working on and the operating system pages the rest in and out:

- a member stored without compression (what `np.savez` writes) is mapped straight from the .npz file, at
  the offset of its data inside the zip;
- a compressed member (`np.savez_compressed`) is decompressed once, in chunks, into `cache_dir` as a .npy
  file, which is then mapped (and reused by later jobs on the same dataset).

Arrays are never unpickled: object arrays raise DatasetFormatError (uploads refuse them already).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from dataset_readers.errors import DatasetFormatError
from dataset_readers.npz.headers import NPY_VERSIONS, read_npy_header, stored_data_start


def _npy_header(f: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = np.lib.format.read_magic(f)
    if version not in NPY_VERSIONS:
        raise DatasetFormatError(f"unsupported .npy format version {version}")
    shape, fortran, dtype = read_npy_header(f, version)
    if dtype.hasobject:
        raise DatasetFormatError("object arrays are not supported (they would need unpickling)")
    return shape, fortran, dtype


def _map_stored(path: Path, info: zipfile.ZipInfo) -> np.ndarray:
    with path.open("rb") as f:
        f.seek(stored_data_start(f, info))
        shape, fortran, dtype = _npy_header(f)
        offset = f.tell()
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")


def _map_extracted(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cache_dir: Path) -> np.ndarray:
    target = cache_dir / Path(info.filename).name  # member names were checked at upload; never a path
    if not target.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".extract-")
        try:
            with os.fdopen(fd, "wb") as out, archive.open(info) as member:
                shutil.copyfileobj(member, out, 1024 * 1024)
            os.replace(tmp, target)  # whole or not at all, even with two workers extracting at once
        finally:
            Path(tmp).unlink(missing_ok=True)
    array = np.load(target, mmap_mode="r", allow_pickle=False)
    return np.asarray(array) if array.size == 0 else array


def load_npz_mapped(path: Path, cache_dir: Path) -> dict[str, np.ndarray]:
    """Every array of the .npz, memory-mapped (read-only). cache_dir holds decompressed members of
    compressed archives; it should be specific to this file (e.g. named after its sha256)."""
    try:
        with zipfile.ZipFile(path) as archive:
            arrays = {}
            for info in archive.infolist():
                if not info.filename.endswith(".npy") or info.is_dir():
                    continue
                name = info.filename[: -len(".npy")]
                if info.compress_type == zipfile.ZIP_STORED:
                    arrays[name] = _map_stored(path, info)
                else:
                    arrays[name] = _map_extracted(archive, info, cache_dir)
            return arrays
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise DatasetFormatError(f"the dataset file cannot be read: {exc}") from exc
