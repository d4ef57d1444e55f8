"""Which reader reads which dataset kind: the one place that names the kinds, so the upload check, the
jobs and the previews ask for a reader by the kind stored on the dataset row and never branch on it."""

from __future__ import annotations

from dataset_readers.errors import UnknownDatasetKind
from dataset_readers.image_zip.reader import ImageZipReader
from dataset_readers.interface import DatasetReader, RowReader
from dataset_readers.npz.reader import NpzReader
from dataset_readers.text.reader import PromptsJsonlReader, TextCorpusReader

_READERS: dict[str, DatasetReader] = {
    reader.kind: reader
    for reader in (NpzReader(), ImageZipReader(), PromptsJsonlReader(), TextCorpusReader())
}
# Extension point (see the package docstring): "audio" registers here when it comes.

KINDS: tuple[str, ...] = tuple(_READERS)
"""Every dataset kind a reader is registered for."""


def reader_for(kind: str) -> DatasetReader:
    """The reader of datasets of this kind; UnknownDatasetKind names the kinds there are."""
    reader = _READERS.get(kind)
    if reader is None:
        raise UnknownDatasetKind(f"no reader for datasets of kind {kind!r}; known kinds: {', '.join(KINDS)}")
    return reader


def row_reader_for(kind: str) -> RowReader | None:
    """The reader of this kind when it reads single rows cheaply, else None (UnknownDatasetKind as above)."""
    reader = reader_for(kind)
    return reader if isinstance(reader, RowReader) else None
