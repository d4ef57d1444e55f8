"""Dataset previews: per-sample statistics checked against numpy on the arrays the test wrote, thumbnails
decoded with Pillow, only the requested samples read; and the two routes over the real API and Postgres."""

from __future__ import annotations

import io
import re
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from backend import dataset_preview as dp
from backend.errors import Conflict, NotFound
from tests.support.images import png_bytes, sample_photo_zip

SAVERS = {"stored": np.savez, "compressed": np.savez_compressed}


def _finite_stats(sample: np.ndarray) -> tuple[float, float, float, int]:
    values = sample.astype(np.float64).ravel()
    finite = values[np.isfinite(values)]
    return float(finite.min()), float(finite.max()), float(finite.mean()), int(values.size - finite.size)


def _decode(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    image.load()
    return image


def _digits(n: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 1, 8, 8)).astype(np.float32)
    x[6, 0, 1, 2] = np.nan
    x[6, 0, 3, 3] = np.inf
    x[7, 0, 0, 0] = -np.inf
    return x, rng.integers(0, 10, size=n)


# --- the pure functions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", SAVERS)
def test_npz_stats_labels_and_image_flags_match_numpy(tmp_path: Path, how: str) -> None:
    x, y = _digits()
    features = np.random.default_rng(1).uniform(-3, 5, size=(20, 16))
    path = tmp_path / "d.npz"
    SAVERS[how](path, input=x, labels=y, features=features)

    page = dp.preview_npz(path, offset=5, limit=4)

    assert page.total == 20 and [s.index for s in page.items] == [5, 6, 7, 8]
    for sample in page.items:
        i = sample.index
        assert sample.label == int(y[i]) and sample.image and sample.image_array == "input"
        assert set(sample.arrays) == {"input", "features"}  # labels are the label, not an array
        stats = sample.arrays["input"]
        assert stats.shape == (1, 8, 8) and stats.dtype == "float32" and stats.image
        lo, hi, mean, nonfinite = _finite_stats(x[i])
        assert (stats.min, stats.max, stats.nonfinite) == (lo, hi, nonfinite)
        assert stats.mean == pytest.approx(mean, rel=1e-12)
        feat = sample.arrays["features"]
        assert feat.shape == (16,) and not feat.image
        assert (feat.min, feat.max) == (features[i].min(), features[i].max())
        assert feat.mean == pytest.approx(features[i].mean(), rel=1e-12)
    assert page.items[1].arrays["input"].nonfinite == 2 and page.items[2].arrays["input"].nonfinite == 1


def test_past_the_end_gives_no_items_and_a_short_last_page(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    np.savez(path, x=np.zeros((5, 3)))
    assert dp.preview_npz(path, 10, 8).items == [] and dp.preview_npz(path, 10, 8).total == 5
    assert [s.index for s in dp.preview_npz(path, 3, 8).items] == [3, 4]


@pytest.mark.parametrize("how", SAVERS)
def test_rows_of_c_and_fortran_arrays_in_any_order(tmp_path: Path, how: str) -> None:
    rng = np.random.default_rng(2)
    c_order = rng.normal(size=(30, 3, 5))
    fortran = np.asfortranarray(rng.integers(-100, 100, size=(30, 4, 6)).astype(np.int16))
    assert fortran.flags.f_contiguous and not fortran.flags.c_contiguous
    path = tmp_path / "d.npz"
    SAVERS[how](path, c=c_order, f=fortran)

    total, rows = dp.read_npz_rows(path, [17, 2, 29, 2])

    assert total == 30
    for k, i in enumerate([17, 2, 29, 2]):
        np.testing.assert_array_equal(rows["c"][k], c_order[i])
        np.testing.assert_array_equal(rows["f"][k], fortran[i])
        assert rows["f"][k].dtype == np.int16
    with pytest.raises(NotFound, match="no sample 30"):
        dp.read_npz_rows(path, [30])


@pytest.mark.parametrize(
    ("shape", "layout"),
    [
        ((8, 8), "HW"),
        ((1, 8, 8), "CHW"),
        ((3, 32, 24), "CHW"),
        ((8, 8, 1), "HWC"),
        ((28, 28, 3), "HWC"),
        ((64,), None),
        ((3, 3), None),
        ((2, 8, 8), None),
        ((8, 8, 4), None),
        ((1, 3, 8, 8), None),
        ((3, 8, 3), None),
    ],
)
def test_which_shapes_are_images(shape: tuple[int, ...], layout: str | None) -> None:
    assert dp.image_layout(shape, np.dtype("float32")) == layout


def test_non_numeric_arrays_are_not_images_and_have_no_stats() -> None:
    assert dp.image_layout((8, 8), np.dtype("complex64")) is None
    stats = dp.array_stats(np.full((8, 8), "a"))
    assert (stats.min, stats.max, stats.mean, stats.image) == (None, None, None, False)


def test_digit_thumbnail_is_enlarged_with_nearest_neighbour_and_min_max_scaled() -> None:
    digit = np.arange(64, dtype=np.float32).reshape(1, 8, 8) * 0.25 - 3.0
    image = _decode(dp.array_thumbnail(digit))
    assert image.size == (128, 128) and image.mode == "L"
    pixels = np.asarray(image)
    expected = np.round((digit[0] - digit.min()) / (digit.max() - digit.min()) * 255).astype(np.uint8)
    np.testing.assert_array_equal(pixels[::16, ::16], expected)  # each value a 16x16 block
    np.testing.assert_array_equal(pixels, np.kron(expected, np.ones((16, 16), np.uint8)))


def test_nonfinite_values_are_black_and_a_constant_sample_does_not_fail() -> None:
    sample = np.linspace(0, 1, 64).reshape(8, 8)
    sample[0, 0] = np.nan
    pixels = np.asarray(_decode(dp.array_thumbnail(sample)))
    assert pixels[0, 0] == 0 and pixels.max() == 255
    assert np.asarray(_decode(dp.array_thumbnail(np.ones((8, 8))))).max() == 0


def test_color_thumbnails_keep_aspect_and_channel_order() -> None:
    hwc = np.zeros((40, 60, 3), dtype=np.uint8)
    hwc[:, :, 0] = 200  # red
    hwc[:20, :, 2] = 100
    image = _decode(dp.array_thumbnail(hwc))
    assert image.size == (120, 80) and image.mode == "RGB"  # 60x40 enlarged twice
    r, g, b = np.asarray(image)[60, 10]
    assert r == 255 and g == 0 and b == 0  # min-max scaled over the whole sample: 200 -> 255, 0 -> 0

    chw = np.random.default_rng(3).random((3, 300, 200))
    big = _decode(dp.array_thumbnail(chw))
    assert big.size == (85, 128) and big.mode == "RGB"
    assert np.asarray(big).std() > 10  # not a constant picture

    with pytest.raises(Conflict, match="not an image"):
        dp.array_thumbnail(np.zeros(16))


@pytest.mark.parametrize("how", SAVERS)
def test_a_big_array_is_not_loaded_to_preview_a_few_samples(tmp_path: Path, how: str) -> None:
    """128 MiB of samples: previewing 8 of them near the end allocates a few MiB, not the array."""
    n = 4096
    path = tmp_path / "big.npz"
    SAVERS[how](path, input=np.zeros((n, 1, 64, 128), np.float32), labels=np.arange(n))
    tracemalloc.start()
    try:
        page = dp.preview_npz(path, offset=n - 8, limit=8)
        png = dp.npz_thumbnail(path, n - 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert page.total == n and [s.label for s in page.items] == list(range(n - 8, n))
    assert page.items[0].arrays["input"].shape == (1, 64, 128)
    assert _decode(png).size == (128, 64)
    assert peak < 8 * 1024**2, f"peak {peak} bytes: the preview read far more than 8 samples"


def _image_zip(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(4)
    images = {
        "b/tiny.png": rng.integers(0, 256, size=(8, 8), dtype=np.uint8),
        "a/wide.png": rng.integers(0, 256, size=(150, 600, 3), dtype=np.uint8),
    }
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, pixels in images.items():
            zf.writestr(name, png_bytes(pixels))
        zf.writestr("labels.csv", "filename,label\ntiny.png,1\nwide.png,2\n")
    return path, images


def test_image_zip_previews_in_sorted_member_order(tmp_path: Path) -> None:
    path, images = _image_zip(tmp_path)
    page = dp.preview_image_zip(path, 0, 8)
    assert page.total == 2
    assert [(s.index, s.name, s.label, s.image) for s in page.items] == [
        (0, "a/wide.png", 2, True),
        (1, "b/tiny.png", 1, True),
    ]
    for sample in page.items:
        pixels = images[sample.name or ""]
        stats = sample.arrays["image"]
        assert stats.shape == pixels.shape and stats.dtype == "uint8"
        assert (stats.min, stats.max) == (pixels.min(), pixels.max())
        assert stats.mean == pytest.approx(pixels.mean(), rel=1e-12)

    wide = _decode(dp.image_zip_thumbnail(path, 0))
    assert wide.size == (128, 32) and wide.mode == "RGB"
    tiny = _decode(dp.image_zip_thumbnail(path, 1))
    assert tiny.size == (128, 128)
    np.testing.assert_array_equal(np.asarray(tiny)[::16, ::16], images["b/tiny.png"])
    with pytest.raises(NotFound):
        dp.image_zip_thumbnail(path, 2)


def test_decompression_bombs_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = _image_zip(tmp_path)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # the 150x600 image is now "too large"
    with pytest.raises(Conflict, match=r"too large to decode safely|over the 1000 pixels"):
        dp.image_zip_thumbnail(path, 0)
    wide, tiny = dp.preview_image_zip(path, 0, 2).items  # the listing names the one it cannot read
    assert not wide.image and wide.arrays == {}
    assert re.search(r"too large to decode safely|over the 1000 pixels", wide.error or "")
    assert tiny.image and tiny.error is None and tiny.arrays["image"].shape == (8, 8)
    small = dp.image_zip_thumbnail(path, 1)  # 64 pixels are fine
    monkeypatch.undo()
    assert _decode(small).size == (128, 128)


# --- the API --------------------------------------------------------------------------------------------


def _upload(client: TestClient, project: dict[str, Any], filename: str, data: bytes) -> dict[str, Any]:
    response = client.post(f"/api/v1/projects/{project['id']}/datasets", files={"file": (filename, data)})
    assert response.status_code == 201, response.text
    return response.json()


def _npz_bytes(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def test_api_npz_digits_samples_and_thumbnails(client: TestClient, project: dict[str, Any]) -> None:
    x, y = _digits(30)
    dataset = _upload(client, project, "digits.npz", _npz_bytes(input=x, labels=y))

    response = client.get(f"/api/v1/datasets/{dataset['id']}/samples")
    assert response.status_code == 200, response.text
    body = response.json()
    assert {k: body[k] for k in ("dataset_id", "kind", "total", "offset", "limit")} == {
        "dataset_id": dataset["id"],
        "kind": "npz",
        "total": 30,
        "offset": 0,
        "limit": 8,
    }
    assert [s["index"] for s in body["items"]] == list(range(8))
    six = body["items"][6]
    assert six["label"] == int(y[6]) and six["image"] is True and six["image_array"] == "input"
    lo, hi, mean, nonfinite = _finite_stats(x[6])
    stats = six["arrays"]["input"]
    assert stats["shape"] == [1, 8, 8] and stats["dtype"] == "float32" and stats["nonfinite"] == nonfinite
    assert (stats["min"], stats["max"]) == (lo, hi) and stats["mean"] == pytest.approx(mean)

    page = client.get(f"/api/v1/datasets/{dataset['id']}/samples", params={"offset": 28, "limit": 64}).json()
    assert [s["index"] for s in page["items"]] == [28, 29]

    thumb = client.get(f"/api/v1/datasets/{dataset['id']}/samples/3/thumbnail.png")
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/png"
    assert thumb.headers["cache-control"] == "private, max-age=3600"
    image = _decode(thumb.content)
    assert image.size == (128, 128) and np.asarray(image).std() > 10

    missing = client.get(f"/api/v1/datasets/{dataset['id']}/samples/30/thumbnail.png")
    assert missing.status_code == 404 and "no sample 30" in missing.json()["detail"]
    for limit in (0, 65):
        bad = client.get(f"/api/v1/datasets/{dataset['id']}/samples", params={"limit": limit})
        assert bad.status_code == 422, bad.text
    assert client.get(f"/api/v1/datasets/{dataset['id']}/samples", params={"offset": -1}).status_code == 422
    unknown = "00000000-0000-0000-0000-000000000000"
    assert client.get(f"/api/v1/datasets/{unknown}/samples").status_code == 404
    assert client.get(f"/api/v1/datasets/{unknown}/samples/0/thumbnail.png").status_code == 404


def test_api_image_zip_gives_labels_and_thumbnails(client: TestClient, project: dict[str, Any]) -> None:
    from sklearn.datasets import load_sample_images

    bunch = load_sample_images()
    names = [p.rsplit("/", 1)[-1].replace(".jpg", ".png") for p in bunch.filenames]
    photos = dict(zip(names, bunch.images, strict=True))
    dataset = _upload(client, project, "photos.zip", sample_photo_zip())

    body = client.get(f"/api/v1/datasets/{dataset['id']}/samples").json()
    assert body["kind"] == "image_zip" and body["total"] == 2
    assert [(s["name"], s["label"], s["image"]) for s in body["items"]] == [
        ("photos/china.png", 3, True),
        ("photos/flower.png", 7, True),
    ]
    china = body["items"][0]["arrays"]["image"]
    assert china["shape"] == list(photos["china.png"].shape) and china["dtype"] == "uint8"
    assert china["mean"] == pytest.approx(photos["china.png"].mean())

    for index in (0, 1):
        thumb = client.get(f"/api/v1/datasets/{dataset['id']}/samples/{index}/thumbnail.png")
        assert thumb.status_code == 200, thumb.text
        image = _decode(thumb.content)
        assert max(image.size) == 128 and image.mode == "RGB" and np.asarray(image).std() > 10
    assert client.get(f"/api/v1/datasets/{dataset['id']}/samples/2/thumbnail.png").status_code == 404


def test_api_feature_vectors_are_not_images(client: TestClient, project: dict[str, Any]) -> None:
    features = np.random.default_rng(5).normal(size=(12, 20)).astype(np.float32)
    dataset = _upload(client, project, "features.npz", _npz_bytes(features=features))

    body = client.get(f"/api/v1/datasets/{dataset['id']}/samples", params={"limit": 2}).json()
    assert [s["image"] for s in body["items"]] == [False, False]
    assert body["items"][0]["label"] is None and body["items"][0]["image_array"] is None
    assert body["items"][0]["arrays"]["features"]["shape"] == [20]

    refused = client.get(f"/api/v1/datasets/{dataset['id']}/samples/0/thumbnail.png")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "conflict"
    assert "per-sample shape (20,), which is not an image" in refused.json()["detail"]
