"""Image preprocessing against values worked out by hand, and on real photos shipped with scikit-learn."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dataset_readers.errors import DatasetFormatError
from dataset_readers.image_zip.decode import images_to_array
from tests.support.images import png_bytes, sample_photo_zip


def _archive(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_solid_colour_is_scaled_and_normalised_per_channel(tmp_path: Path) -> None:
    pixels = np.zeros((5, 7, 3), dtype=np.uint8)
    pixels[...] = (255, 51, 0)
    path = _archive(tmp_path, {"a.png": png_bytes(pixels)})
    x = images_to_array(path, ["a.png"], size=(3, 2), mean=(0.5, 0.0, 0.0), std=(0.5, 0.2, 1.0))
    assert x.shape == (1, 3, 3, 2) and x.dtype == np.float32
    # (255/255 - 0.5)/0.5 = 1, (51/255 - 0)/0.2 = 1, (0 - 0)/1 = 0
    np.testing.assert_allclose(x[0, :, 0, 0], [1.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(x[0], x[0, :, :1, :1] * np.ones((1, 3, 2)), atol=1e-6)


def test_grayscale_nhwc_layout(tmp_path: Path) -> None:
    pixels = np.full((4, 4, 3), 128, dtype=np.uint8)
    path = _archive(tmp_path, {"a.png": png_bytes(pixels)})
    x = images_to_array(path, ["a.png"], size=(2, 2), mode="L", layout="NHWC")
    assert x.shape == (1, 2, 2, 1)
    np.testing.assert_allclose(x, 128 / 255, atol=1e-6)


def test_real_photos_match_pillow_resize(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "photos.zip"
    path.write_bytes(sample_photo_zip())
    x = images_to_array(path, ["photos/china.png", "photos/flower.png"], size=(32, 48))
    assert x.shape == (2, 3, 32, 48)
    with zipfile.ZipFile(path) as zf, Image.open(io.BytesIO(zf.read("photos/flower.png"))) as img:
        expected = (
            np.asarray(img.convert("RGB").resize((48, 32), Image.Resampling.BILINEAR), np.float32) / 255
        )
    np.testing.assert_allclose(x[1], expected.transpose(2, 0, 1), atol=1e-6)
    assert x.min() >= 0.0 and x.max() <= 1.0 and x.std() > 0.05  # a real photo, not a blank


def test_undecodable_image_names_the_file(tmp_path: Path) -> None:
    path = _archive(tmp_path, {"bad.png": b"garbage"})
    with pytest.raises(DatasetFormatError, match=r"bad\.png"):
        images_to_array(path, ["bad.png"], size=(2, 2))
