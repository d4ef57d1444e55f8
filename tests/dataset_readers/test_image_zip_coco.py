"""Detection ground truth in a zip of images (dataset_readers/image_zip/coco.py): a COCO annotations.json
beside the images becomes the detection task's gt_boxes / gt_labels, scaled to the recipe's input size, and
a malformed one is refused at upload naming the entry."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from dataset_readers.archives import ArchiveLimits
from dataset_readers.errors import DatasetFormatError
from dataset_readers.interface import ReadOptions
from dataset_readers.registry import reader_for
from tests.support.tiny_detector import scenes

LIMITS = ArchiveLimits()
CATEGORY_IDS = [3, 7, 9]  # COCO-style ids, not 0..C-1: labels are their sorted positions


@dataclass(frozen=True)
class Recipe:
    size: tuple[int, int] = (64, 64)
    mode: str = "RGB"
    scale: float = 1 / 255
    mean: list[float] = field(default_factory=lambda: [0.0])
    std: list[float] = field(default_factory=lambda: [1.0])
    layout: str = "NCHW"
    input_name: str = "images"

    def array_shape(self, n: int) -> list[int]:
        return [n, 3, *self.size]


def _coco_zip(path: Path, n: int = 6, edit: Any = None) -> tuple[Path, np.ndarray, np.ndarray]:
    """`n` synthetic scenes saved at 128 x 96 (width x height; the recipe resizes them to 64 x 64), with
    their boxes in a COCO file, plus a crowd box (left out) and image 'img_0' without annotations."""
    pictures, boxes, labels = scenes(n, seed=3)
    boxes[0], labels[0] = 0, -1  # an image with no annotation at all
    sx, sy = 2.0, 1.5
    doc: dict[str, Any] = {
        "images": [
            {"id": 100 + i, "file_name": f"img_{i}.png", "width": 128, "height": 96} for i in range(n)
        ],
        "categories": [{"id": c, "name": f"c{c}"} for c in CATEGORY_IDS],
        "annotations": [],
    }
    for i in range(n):
        for b, lab in zip(boxes[i], labels[i], strict=True):
            if lab >= 0:
                x1, y1, x2, y2 = b.tolist()
                bbox = [x1 * sx, y1 * sy, (x2 - x1) * sx, (y2 - y1) * sy]
                doc["annotations"].append(
                    {"id": len(doc["annotations"]) + 1, "image_id": 100 + i,
                     "category_id": CATEGORY_IDS[int(lab)], "bbox": bbox, "iscrowd": 0, "area": 1.0}
                )  # fmt: skip
    doc["annotations"].append(
        {"id": 999, "image_id": 101, "category_id": 3, "bbox": [0, 0, 50, 50], "iscrowd": 1, "area": 2500}
    )
    if edit is not None:
        edit(doc)
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(n):
            pixels = (pictures[i].transpose(1, 2, 0) * 255).round().astype(np.uint8)
            buf = io.BytesIO()
            Image.fromarray(pixels).resize((128, 96), Image.Resampling.NEAREST).save(buf, format="PNG")
            zf.writestr(f"set/img_{i}.png", buf.getvalue())
        zf.writestr("set/annotations.json", json.dumps(doc))
    return path, boxes, labels


def test_coco_boxes_become_the_detection_arrays_scaled_to_the_input(tmp_path: Path) -> None:
    path, boxes, labels = _coco_zip(tmp_path / "det.zip")
    reader = reader_for("image_zip")
    described = reader.describe(path, LIMITS, ReadOptions(recipe=Recipe()))
    m = int((labels >= 0).sum(axis=1).max())
    assert described.arrays_json() == {
        "images": {"shape": [6, 3, 64, 64], "dtype": "float32"},
        "gt_boxes": {"shape": [6, m, 4], "dtype": "float32"},
        "gt_labels": {"shape": [6, m], "dtype": "int64"},
    }
    arrays = reader.arrays(path, LIMITS, ReadOptions(recipe=Recipe()), limit=5)
    assert arrays["gt_boxes"].shape == (5, m, 4) and arrays["images"].shape == (5, 3, 64, 64)
    for i in range(5):
        real = labels[i][labels[i] >= 0]
        k = len(real)
        # The boxes as written (x 2, x 1.5), scaled back by the resize to 64 x 64: the scene's own boxes.
        np.testing.assert_allclose(arrays["gt_boxes"][i, :k], boxes[i][labels[i] >= 0], rtol=1e-6)
        assert arrays["gt_labels"][i, :k].tolist() == real.tolist()  # ids 3, 7, 9 -> 0, 1, 2
        assert (arrays["gt_labels"][i, k:] == -1).all()
    assert (arrays["gt_labels"][0] == -1).all()  # no annotation; the crowd box of image 1 left out
    assert (labels >= 0).sum() > 5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["images"].pop(2), r"lists no image 'set/img_2.png'; list every image"),
        (lambda d: d["annotations"][0].update(bbox=[1, 2, -3, 4]), r"has bbox \[1, 2, -3, 4\]; a bbox is"),
        (lambda d: d["annotations"][0].update(category_id=5), r"category_id 5, which 'categories' does not"),
        (lambda d: d["images"][0].pop("width"), r"needs an integer 'id', a 'file_name' and a positive"),
        (lambda d: d.pop("annotations"), r"'annotations' must be a list of objects"),
    ],
)
def test_a_malformed_coco_file_is_refused_at_upload_naming_the_entry(
    tmp_path: Path, edit: Any, message: str
) -> None:
    path, _, _ = _coco_zip(tmp_path / "bad.zip", edit=edit)
    with pytest.raises(DatasetFormatError, match=message):
        reader_for("image_zip").describe(path, LIMITS, ReadOptions(recipe=Recipe()))
