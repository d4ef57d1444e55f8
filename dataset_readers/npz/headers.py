"""The two headers every .npz read starts from: a member's .npy header (shape, order, dtype) and, for a
member stored without compression, where its bytes begin inside the archive.

Shared by the upload check, the memory-mapping of the jobs and the row reads of previews; each of those
decides which .npy versions and dtypes it accepts, and says so in its own words.
"""

from __future__ import annotations

import struct
import zipfile
from typing import IO, Any

import numpy as np
from numpy.lib import format as npy_format

from dataset_readers.errors import DatasetFormatError

NPY_VERSIONS = ((1, 0), (2, 0))
"""The .npy format versions the readers map and read rows of."""

LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
"""A zip local file header: signature ... filename length, extra field length (30 bytes)."""


def read_npy_header(f: IO[bytes], version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """(shape, fortran order, dtype) of the .npy header that follows the magic string (`version`, as
    numpy.lib.format.read_magic returned it); the caller has decided whether it accepts that version."""
    if version == (1, 0):
        shape, fortran, dtype = npy_format.read_array_header_1_0(f)
    else:
        shape, fortran, dtype = npy_format.read_array_header_2_0(f)
    return tuple(int(s) for s in shape), bool(fortran), np.dtype(dtype)


def stored_data_start(f: IO[bytes], info: zipfile.ZipInfo) -> int:
    """Where a stored member's bytes start in the archive (after its local header, whose extra field may
    differ from the central directory's)."""
    f.seek(info.header_offset)
    fields = LOCAL_HEADER.unpack(f.read(LOCAL_HEADER.size))
    if fields[0] != b"PK\x03\x04":
        raise DatasetFormatError(f"{info.filename}: damaged zip local header")
    name_length, extra_length = fields[-2], fields[-1]
    return info.header_offset + LOCAL_HEADER.size + name_length + extra_length
