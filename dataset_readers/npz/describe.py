"""Describe an uploaded ``.npz`` dataset from its array headers, without loading the arrays.

The upload check: reads only each member's .npy header (numpy.lib.format), so a multi-GB dataset is
described in milliseconds and memory stays flat. Object arrays are refused, since loading them would
need unpickling.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from dataset_readers.archives import UNREADABLE_ZIP_ERRORS, ArchiveLimits, check_archive, describe_zip_error
from dataset_readers.errors import DatasetFormatError
from dataset_readers.interface import LABELS, ArrayInfo, DatasetDescription
from dataset_readers.npz.headers import read_npy_header


def _read_header(zf: zipfile.ZipFile, member: str) -> ArrayInfo:
    with zf.open(member) as f:
        try:
            shape, _fortran, dtype = read_npy_header(f, npy_format.read_magic(f))
        except (ValueError, EOFError) as exc:
            raise DatasetFormatError(
                f"array {member.removesuffix('.npy')!r} in the .npz is not a valid .npy array: {exc}"
            ) from exc
        header_bytes = f.tell()
    if dtype.hasobject:
        raise DatasetFormatError(
            f"array {member.removesuffix('.npy')!r} has dtype object, which would need unpickling to load; save numeric arrays only"
        )
    # The worker maps the array by its header: a header that claims more data than the member holds is a
    # truncated or forged file (a few bytes that would otherwise describe a terabyte-sized dataset).
    data_bytes = math.prod(int(d) for d in shape) * dtype.itemsize
    held = zf.getinfo(member).file_size - header_bytes
    if all(int(d) >= 0 for d in shape) and data_bytes > held:
        raise DatasetFormatError(
            f"array {member.removesuffix('.npy')!r} in the .npz claims shape {tuple(shape)} ({data_bytes} bytes) "
            f"but holds {held} bytes of data: the file is truncated or damaged; save it again with numpy.savez"
        )
    return ArrayInfo(shape=shape, dtype=dtype.name)


def describe_npz(path: Path, limits: ArchiveLimits) -> DatasetDescription:
    """Shapes and dtypes of every array; refuses empty files, non-npz files, archives that break the archive
    `limits` (an .npz is a zip) and arrays of unequal length."""
    if path.stat().st_size == 0:
        raise DatasetFormatError("the file is empty (0 bytes): choose the .npz file again and re-upload it")
    try:
        with zipfile.ZipFile(path) as zf:
            # The worker memory-maps the arrays, inflating compressed ones to disk first: check the archive.
            check_archive(zf, "the .npz", path.stat().st_size, limits)
            members = [n for n in zf.namelist() if n.endswith(".npy")]
            if not members:
                raise DatasetFormatError(
                    "the .npz holds no arrays: save one with numpy.savez('data.npz', input=x, labels=y)"
                )
            arrays = {m[: -len(".npy")]: _read_header(zf, m) for m in members}
    except UNREADABLE_ZIP_ERRORS as exc:
        raise DatasetFormatError(
            f"not a .npz file ({describe_zip_error(exc)}): save the dataset with "
            "numpy.savez('data.npz', input=x, labels=y)"
        ) from exc
    for name, info in arrays.items():
        if len(info.shape) == 0:
            raise DatasetFormatError(
                f"array {name!r} is a scalar; every array needs a first (sample) dimension"
            )
        if any(d < 0 for d in info.shape):
            raise DatasetFormatError(f"array {name!r} has a negative dimension in its header {info.shape}")
    lengths = {name: info.shape[0] for name, info in arrays.items()}
    if len(set(lengths.values())) > 1:
        listing = ", ".join(f"{n}: {k}" for n, k in lengths.items())
        raise DatasetFormatError(
            f"arrays have unequal lengths ({listing}); every array needs one row per sample"
        )
    labels = arrays.get(LABELS)
    if labels is not None and (
        len(labels.shape) != 1 or not np.issubdtype(np.dtype(labels.dtype), np.integer)
    ):
        raise DatasetFormatError(
            f"'labels' must be a 1-D integer array of class indices; got shape {labels.shape} dtype {labels.dtype}"
        )
    if set(arrays) == {LABELS}:
        raise DatasetFormatError(
            "the .npz holds only 'labels'; add the input array(s) named after the model inputs"
        )
    n_samples = next(iter(lengths.values()))
    if n_samples == 0:
        raise DatasetFormatError("the arrays have 0 samples")
    return DatasetDescription(n_samples=n_samples, arrays=arrays)
