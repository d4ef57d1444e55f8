"""One interface for every dataset kind: the registry finds each kind's reader, says clearly when there is
none, and each reader's upload description matches the arrays the jobs then read from the same file."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from dataset_readers.archives import ArchiveLimits
from dataset_readers.errors import DatasetFormatError, NoSuchSample, UnknownDatasetKind
from dataset_readers.interface import ReadOptions, RowReader
from dataset_readers.registry import KINDS, reader_for, row_reader_for
from tests.support.images import png_bytes

LIMITS = ArchiveLimits()


@dataclass(frozen=True)
class Recipe:
    """A preprocessing recipe as backend.contracts.ImagePreprocessing carries it (structurally)."""

    size: tuple[int, int] = (4, 6)
    mode: str = "L"
    scale: float = 1 / 255
    mean: list[float] = field(default_factory=lambda: [0.0])
    std: list[float] = field(default_factory=lambda: [1.0])
    layout: str = "NCHW"
    input_name: str = "pixels"

    def array_shape(self, n: int) -> list[int]:
        return [n, 1, *self.size]


def test_every_kind_has_its_reader_and_an_unknown_kind_is_named() -> None:
    assert KINDS == ("npz", "image_zip", "prompts_jsonl", "text_corpus")
    assert all(reader_for(kind).kind == kind for kind in KINDS)
    with pytest.raises(UnknownDatasetKind, match=r"'audio'; known kinds: npz, image_zip, prompts_jsonl"):
        reader_for("audio")
    assert isinstance(row_reader_for("npz"), RowReader) and row_reader_for("image_zip") is None
    assert row_reader_for("prompts_jsonl") is None


def test_npz_description_arrays_and_rows_agree(tmp_path: Path) -> None:
    x = np.arange(60, dtype=np.float32).reshape(10, 2, 3)
    np.savez_compressed(tmp_path / "d.npz", input=x, labels=np.arange(10))
    reader = reader_for("npz")
    described = reader.describe(tmp_path / "d.npz", LIMITS, ReadOptions())
    assert described.n_samples == 10 and described.has_labels
    assert described.arrays_json() == {
        "input": {"shape": [10, 2, 3], "dtype": "float32"},
        "labels": {"shape": [10], "dtype": "int64"},
    }
    arrays = reader.arrays(tmp_path / "d.npz", LIMITS, ReadOptions(cache_dir=tmp_path / "cache"), limit=4)
    np.testing.assert_array_equal(arrays["input"], x[:4])
    rows = row_reader_for("npz")
    assert rows is not None
    page = rows.rows(tmp_path / "d.npz", slice(8, 12))
    assert (page.total, page.indices) == (10, [8, 9])
    np.testing.assert_array_equal(page.rows["input"][1], x[9])
    with pytest.raises(NoSuchSample, match="no sample 10: the dataset has 10 samples"):
        rows.rows(tmp_path / "d.npz", [10])


def _image_zip(path: Path, n: int, labels: bool) -> Path:
    rng = np.random.default_rng(0)
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(n):
            zf.writestr(f"{i:02d}.png", png_bytes(rng.integers(0, 256, (5, 7), dtype=np.uint8)))
        if labels:
            zf.writestr(
                "labels.csv", "filename,label\n" + "".join(f"{i:02d}.png,{i % 3}\n" for i in range(n))
            )
    return path


def test_image_zip_description_is_what_the_recipe_makes(tmp_path: Path) -> None:
    path = _image_zip(tmp_path / "imgs.zip", 5, labels=True)
    reader = reader_for("image_zip")
    described = reader.describe(path, LIMITS, ReadOptions(recipe=Recipe()))
    assert described.arrays_json() == {
        "pixels": {"shape": [5, 1, 4, 6], "dtype": "float32"},
        "labels": {"shape": [5], "dtype": "int64"},
    }
    arrays = reader.arrays(path, LIMITS, ReadOptions(recipe=Recipe()), limit=3)
    assert arrays["pixels"].shape == (3, 1, 4, 6) and arrays["pixels"].dtype == np.float32
    np.testing.assert_array_equal(arrays["labels"], [0, 1, 2])


def test_a_refusal_is_a_dataset_format_error_in_the_words_users_see(tmp_path: Path) -> None:
    path = _image_zip(tmp_path / "imgs.zip", 3, labels=False)
    with pytest.raises(DatasetFormatError, match="the zip of images holds 3 members; at most 2 are accepted"):
        reader_for("image_zip").describe(path, ArchiveLimits(max_members=2), ReadOptions(recipe=Recipe()))
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(DatasetFormatError, match=r"the file is empty \(0 bytes\)"):
        reader_for("npz").describe(tmp_path / "empty.npz", LIMITS, ReadOptions())
