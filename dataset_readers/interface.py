"""The one interface every dataset reader offers, and the values it speaks in.

A reader knows one dataset kind (the ``kind`` stored on a dataset row: "npz", "image_zip") and answers
three questions about a file of that kind:

- ``describe``: is this upload acceptable, and what does it hold (the upload check; the API stores the
  answer on the dataset row: sample count, arrays, labels);
- ``arrays``: the dataset as the engine's input arrays, cut to the first `limit` samples (the jobs);
- ``rows``: a few samples by index without reading the rest (previews, the sample inspector) — only
  where the kind can do it cheaply (``RowReader``).

Readers raise the errors of ``dataset_readers.errors``; each caller maps them to its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dataset_readers.archives import ArchiveLimits
from dataset_readers.text.parse import TextRecords

LABELS = "labels"
"""The array of integer class labels, in every kind's description and arrays."""


@dataclass(frozen=True)
class ArrayInfo:
    shape: tuple[int, ...]
    dtype: str

    def to_dict(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class DatasetDescription:
    """What an upload check learns of a dataset, and the API stores on its row: the arrays a job will read
    (names, shapes with the sample axis first, dtypes), "labels" among them when there are labels."""

    n_samples: int
    arrays: dict[str, ArrayInfo]

    @property
    def has_labels(self) -> bool:
        return LABELS in self.arrays

    def arrays_json(self) -> dict[str, dict[str, Any]]:
        return {name: info.to_dict() for name, info in self.arrays.items()}


@dataclass(frozen=True)
class SampleRows:
    """Rows of a stored dataset: how many samples it holds, which were read, and each array's rows at
    those indices (in that order)."""

    total: int
    indices: list[int]
    rows: dict[str, list[np.ndarray]]


class ImageRecipe(Protocol):
    """How images become one input array (backend.contracts.ImagePreprocessing is one; this package cannot
    import it, so it names only what it reads)."""

    @property
    def size(self) -> tuple[int, int]: ...  # (height, width)
    @property
    def mode(self) -> str: ...
    @property
    def scale(self) -> float: ...
    @property
    def mean(self) -> Sequence[float]: ...
    @property
    def std(self) -> Sequence[float]: ...
    @property
    def layout(self) -> str: ...
    @property
    def input_name(self) -> str: ...
    def array_shape(self, n: int) -> list[int]: ...


@dataclass(frozen=True)
class ReadOptions:
    """What a reader may need besides the file and the archive limits; each kind reads its own part and
    ignores the rest, so one call fits every kind. A new kind adds its own field here (a tokenizer for
    text, a sample rate for audio)."""

    recipe: ImageRecipe | None = None
    """Image kinds: how each image becomes the input array (required there)."""
    max_pixels: int | None = None
    """Image kinds, upload check: images over this many pixels are refused (default Pillow's limit)."""
    cache_dir: Path | None = None
    """npz: where compressed members are decompressed once, to be memory-mapped (one folder per file,
    e.g. named after its sha256; default a fresh temporary folder)."""
    tokenize: Callable[[TextRecords], dict[str, np.ndarray]] | None = None
    """Text kinds, jobs: how the parsed text becomes token-id arrays (the worker's, with the golden model's
    tokenizer and context); without it a text dataset cannot be read as arrays."""


class DatasetReader(Protocol):
    """One dataset kind's reader (see the module docstring)."""

    kind: str

    def describe(self, path: Path, limits: ArchiveLimits, options: ReadOptions) -> DatasetDescription:
        """Check an uploaded file and describe it; DatasetFormatError says why it is refused."""
        ...

    def arrays(
        self, path: Path, limits: ArchiveLimits, options: ReadOptions, limit: int | None = None
    ) -> dict[str, np.ndarray]:
        """The dataset's arrays ("labels" among them when it has labels), its first `limit` samples when
        given; DatasetFormatError when the stored file cannot be read."""
        ...


@runtime_checkable
class RowReader(DatasetReader, Protocol):
    """A reader that can read a few samples of a stored file without reading the others."""

    def rows(self, path: Path, indices: Sequence[int] | slice) -> SampleRows:
        """The rows at `indices` (NoSuchSample beyond the end), or those of `slice(start, stop)`, cut at the
        end of the dataset."""
        ...
