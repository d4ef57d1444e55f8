"""Zipped image datasets: described at upload without decoding, refused with the file named when broken."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support import files
from tests.support.images import png_bytes, sample_photo_zip


def _upload(
    client: TestClient, project: dict[str, Any], data: bytes, recipe: dict[str, Any] | None = None
) -> Any:
    form = {"preprocessing": json.dumps(recipe)} if recipe is not None else {}
    return client.post(
        f"/api/v1/projects/{project['id']}/datasets", files={"file": ("photos.zip", data)}, data=form
    )


def test_image_zip_with_labels_and_recipe(client: TestClient, project: dict[str, Any]) -> None:
    recipe = {"size": [64, 96], "mode": "RGB", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    response = _upload(client, project, sample_photo_zip(), recipe)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["kind"] == "image_zip" and body["n_samples"] == 2 and body["has_labels"]
    assert body["arrays"]["input"] == {"shape": [2, 3, 64, 96], "dtype": "float32"}
    assert body["preprocessing"]["size"] == [64, 96] and body["preprocessing"]["layout"] == "NCHW"


def test_image_zip_without_labels_uses_defaults(client: TestClient, project: dict[str, Any]) -> None:
    body = _upload(client, project, sample_photo_zip(labels_csv=None)).json()
    assert body["has_labels"] is False and body["arrays"] == {
        "input": {"shape": [2, 3, 224, 224], "dtype": "float32"}
    }


def _zip(members: dict[str, bytes]) -> bytes:
    return files.zip_bytes(members)


GOOD_PNG = png_bytes(__import__("numpy").zeros((4, 4, 3), dtype="uint8"))


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height pixels (and holds none)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


BOMB_PNG = _png_claiming(200_000, 200_000)


@pytest.mark.parametrize(
    ("data", "recipe", "message"),
    [
        (_zip({"a.png": b"not really a png"}), None, "image 'a.png' in the zip is not a readable image"),
        (
            _zip({"a.png": GOOD_PNG, "labels.csv": b"filename,label\nb.png,1\n"}),
            None,
            "no label for image 'a.png'",
        ),
        (_zip({"a.png": GOOD_PNG, "labels.csv": b"filename,label\na.png,cat\n"}), None, "is not an integer"),
        (_zip({"readme.txt": b"hello"}), None, "holds no images"),
        (b"not a zip", None, "not a zip archive"),
        (_zip({"a.png": GOOD_PNG}), {"size": [0, 10]}, "preprocessing"),
        (_zip({"a.png": GOOD_PNG}), {"mode": "L", "mean": [0.1, 0.2, 0.3]}, "mean needs 1 or 1 values"),
        (_zip({"a.png": GOOD_PNG}), {"std": [0.0]}, "std values must be > 0"),
        # Once a 500 each: a row without a label, a label outside int32, an image header that claims
        # 40 gigapixels, a scale that JSON cannot hold.
        (
            _zip({"a.png": GOOD_PNG, "labels.csv": b"filename,label\na.png\n"}),
            None,
            "line 2: needs two values",
        ),
        (
            _zip({"a.png": GOOD_PNG, "labels.csv": b"filename,label\na.png,99999999999\n"}),
            None,
            "out of range",
        ),
        (_zip({"a.png": BOMB_PNG}), None, "too large to decode safely"),
        (
            _zip({"a.png": GOOD_PNG, "labels.csv": b'filename,label\na.png,"' + b"9" * 200_000 + b'"\n'}),
            None,
            "labels.csv is not a readable CSV file (field larger than field limit",
        ),
        (_zip({"a.png": GOOD_PNG}), {"scale": float("inf")}, "Infinity is not JSON"),
        *[
            (files.damaged_zip(_zip({"a.png": GOOD_PNG}), how), None, message)
            for how, message in [
                ("crc", "image 'a.png' in the zip is not a readable image: Bad CRC-32"),
                ("method", "cannot be read as a zip archive"),
                ("encrypted", "cannot be read as a zip archive (a member is encrypted)"),
                ("version", "not a zip archive (zip file version 9.9)"),
            ]
        ],
    ],
)
def test_bad_image_zips_are_refused(
    client: TestClient, project: dict[str, Any], data: bytes, recipe: dict[str, Any] | None, message: str
) -> None:
    response = _upload(client, project, data, recipe)
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]
    assert client.get(f"/api/v1/projects/{project['id']}/datasets").json() == []


# Hostile archives (path traversal, links, zip bombs, too many members): tests/backend/test_archive_limits.py
