"""Memory-mapped .npz datasets: the same arrays as np.load, without reading them into memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dataset_readers.errors import DatasetFormatError
from dataset_readers.npz.mapped import load_npz_mapped


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "input": rng.random((50, 3, 8, 8), dtype=np.float32),
        "labels": rng.integers(0, 10, 50),
        "fortran": np.asfortranarray(rng.random((7, 5))),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }


def test_an_uncompressed_npz_is_mapped_from_the_file_itself(tmp_path: Path) -> None:
    arrays = _arrays()
    np.savez(tmp_path / "d.npz", **arrays)
    mapped = load_npz_mapped(tmp_path / "d.npz", tmp_path / "cache")
    assert set(mapped) == set(arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(mapped[name], array)
        assert mapped[name].dtype == array.dtype and mapped[name].shape == array.shape
    assert isinstance(mapped["input"], np.memmap) and Path(mapped["input"].filename) == tmp_path / "d.npz"
    assert not (tmp_path / "cache").exists()  # nothing copied


def test_a_compressed_npz_is_extracted_once_then_mapped(tmp_path: Path) -> None:
    arrays = _arrays()
    np.savez_compressed(tmp_path / "d.npz", **arrays)
    mapped = load_npz_mapped(tmp_path / "d.npz", tmp_path / "cache")
    for name, array in arrays.items():
        np.testing.assert_array_equal(mapped[name], array)
    assert isinstance(mapped["input"], np.memmap)
    extracted = tmp_path / "cache" / "input.npy"
    before = extracted.stat().st_mtime_ns
    again = load_npz_mapped(tmp_path / "d.npz", tmp_path / "cache")
    np.testing.assert_array_equal(again["input"], arrays["input"])
    assert extracted.stat().st_mtime_ns == before  # reused, not extracted again
    assert not list((tmp_path / "cache").glob(".extract-*"))


def test_object_arrays_and_damaged_files_are_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "o.npz", x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DatasetFormatError, match="object arrays"):
        load_npz_mapped(tmp_path / "o.npz", tmp_path / "cache")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(DatasetFormatError, match="cannot be read"):
        load_npz_mapped(tmp_path / "bad.npz", tmp_path / "cache")
