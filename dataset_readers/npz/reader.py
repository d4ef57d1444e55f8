"""The .npz reader behind the DatasetReader interface: the upload check (``describe``), memory-mapped
arrays for the jobs (``arrays``) and row reads for previews (``rows``)."""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from dataset_readers.archives import UNREADABLE_ZIP_ERRORS, ArchiveLimits, describe_zip_error
from dataset_readers.errors import DatasetFormatError, NoSuchSample
from dataset_readers.interface import DatasetDescription, ReadOptions, SampleRows
from dataset_readers.npz.describe import describe_npz
from dataset_readers.npz.mapped import load_npz_mapped
from dataset_readers.npz.rows import npz_members, npz_rows, npz_total


@contextmanager
def stored_file_readable(what: str) -> Iterator[None]:
    """Inside: a failure of zipfile on a stored file becomes DatasetFormatError("the stored <what> cannot
    be read (<why>)")."""
    try:
        yield
    except UNREADABLE_ZIP_ERRORS as exc:
        raise DatasetFormatError(f"the stored {what} cannot be read ({describe_zip_error(exc)})") from exc


def check_indices(indices: Sequence[int], total: int) -> None:
    for i in indices:
        if not 0 <= i < total:
            raise NoSuchSample(f"no sample {i}: the dataset has {total} samples (0 to {total - 1})")


def picked_indices(indices: Sequence[int] | slice, total: int) -> list[int]:
    """The indices asked for: a sequence as it is (checked against `total`), a slice(start, stop) as
    start .. stop-1 cut at the end of the dataset (a page of a preview: past the end, none)."""
    if isinstance(indices, slice):
        start = indices.start or 0
        stop = total if indices.stop is None else min(indices.stop, total)
        return list(range(start, stop))
    check_indices(indices, total)
    return list(indices)


class NpzReader:
    """Arrays saved by numpy.savez / savez_compressed, one row per sample, optional integer "labels"."""

    kind = "npz"

    def describe(self, path: Path, limits: ArchiveLimits, options: ReadOptions) -> DatasetDescription:
        return describe_npz(path, limits)

    def arrays(
        self, path: Path, limits: ArchiveLimits, options: ReadOptions, limit: int | None = None
    ) -> dict[str, np.ndarray]:
        """Every array memory-mapped, and the cut a view, so a job holds only the batches it works on. The
        archive was checked at upload; mapping reads only the directory and the headers again."""
        cache = options.cache_dir or Path(tempfile.mkdtemp(prefix="kneeboard-npz-"))
        mapped = load_npz_mapped(path, cache)
        return mapped if limit is None else {key: a[:limit] for key, a in mapped.items()}

    def rows(self, path: Path, indices: Sequence[int] | slice) -> SampleRows:
        """Reads the array headers and the requested rows only."""
        with stored_file_readable(".npz dataset"), zipfile.ZipFile(path) as zf:
            members = npz_members(path, zf)
            total = npz_total(members)
            picked = picked_indices(indices, total)
            return SampleRows(total, picked, npz_rows(path, zf, members, picked))
