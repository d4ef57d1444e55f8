"""Detection ground truth in a zip of images: a COCO ``annotations.json`` (object detection format: images,
annotations, categories) beside the images, read into the detection task's arrays.

- ``gt_boxes`` (N, M, 4) float32: each image's boxes as [x1, y1, x2, y2] in pixels of the model's input,
  i.e. COCO's [x, y, width, height] in the original image scaled by the recipe's resize (a plain resize, no
  letterbox: x by input width / image width, y by input height / image height); M is the most boxes any
  image has, the other rows are padding.
- ``gt_labels`` (N, M) int64: the index of the box's category among the file's category ids sorted (COCO's
  ids 1..90 become 0..79, the class indexes detectors trained on COCO output); −1 in padding rows.

An image is matched by its ``file_name`` (the member's path in the zip, or its base name). Every image of the
zip must be listed in ``images`` (an image without annotations has no boxes); ``width`` and ``height`` are
required (the scaling needs them). Crowd annotations (``iscrowd`` 1) are left out: the task has no ignore
regions. Anything else malformed is refused at upload, naming the entry.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from dataset_readers.errors import DatasetFormatError

COCO_JSON = "annotations.json"
GT_BOXES = "gt_boxes"
GT_LABELS = "gt_labels"


@dataclass(frozen=True)
class CocoBoxes:
    """Per image of the zip (in its sample order): boxes [x1, y1, x2, y2] in original pixels, label indexes,
    and the original (width, height)."""

    boxes: list[list[list[float]]]
    labels: list[list[int]]
    sizes: list[tuple[float, float]]
    categories: list[int]

    @property
    def max_boxes(self) -> int:
        return max((len(b) for b in self.boxes), default=0)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _entries(doc: Any, key: str, member: str) -> list[dict[str, Any]]:
    entries = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DatasetFormatError(f"{member}: '{key}' must be a list of objects (COCO detection format)")
    return entries


def read_coco(zf: zipfile.ZipFile, member: str, images: list[str]) -> CocoBoxes:
    """The boxes of every image in `images` from the COCO file `member` of the archive; refuses what does
    not fit, with the entry named."""
    try:
        doc = json.loads(zf.read(member).decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetFormatError(f"{member} is not a readable JSON file ({exc})") from exc
    cats = _entries(doc, "categories", member)
    cat_ids = sorted({int(c["id"]) for c in cats if isinstance(c.get("id"), int)})
    if len(cat_ids) != len(cats):
        raise DatasetFormatError(f"{member}: every category needs its own integer 'id'")
    label_of = {cid: i for i, cid in enumerate(cat_ids)}
    by_name: dict[str, tuple[int, float, float]] = {}
    for entry in _entries(doc, "images", member):
        name, w, h = entry.get("file_name"), _number(entry.get("width")), _number(entry.get("height"))
        if (
            not isinstance(name, str)
            or not isinstance(entry.get("id"), int)
            or not w
            or not h
            or w < 0
            or h < 0
        ):
            raise DatasetFormatError(
                f"{member}: image entry {json.dumps(entry)[:200]} needs an integer 'id', a 'file_name' and a "
                "positive 'width' and 'height'"
            )
        by_name[name] = (entry["id"], w, h)
    order: dict[int, int] = {}
    sizes: list[tuple[float, float]] = []
    for i, image in enumerate(images):
        key = image if image in by_name else PurePosixPath(image).name
        if key not in by_name:
            raise DatasetFormatError(f"{member} lists no image {image!r}; list every image of the zip")
        image_id, w, h = by_name[key]
        order[image_id] = i
        sizes.append((w, h))
    boxes: list[list[list[float]]] = [[] for _ in images]
    labels: list[list[int]] = [[] for _ in images]
    for ann in _entries(doc, "annotations", member):
        if ann.get("iscrowd", 0):
            continue
        bbox = ann.get("bbox")
        xywh = [_number(v) for v in bbox] if isinstance(bbox, list) else []
        if len(xywh) != 4 or any(v is None for v in xywh) or not (xywh[2] or 0) > 0 or not (xywh[3] or 0) > 0:
            raise DatasetFormatError(
                f"{member}: annotation {ann.get('id')!r} has bbox {bbox!r}; a bbox is [x, y, width, height] "
                "with a positive width and height"
            )
        if ann.get("category_id") not in label_of:
            raise DatasetFormatError(
                f"{member}: annotation {ann.get('id')!r} has category_id {ann.get('category_id')!r}, which "
                "'categories' does not list"
            )
        if ann.get("image_id") not in order:
            continue  # an image of the file that is not in the zip
        x, y, w, h = (float(v or 0.0) for v in xywh)
        i = order[ann["image_id"]]
        boxes[i].append([x, y, x + w, y + h])
        labels[i].append(label_of[ann["category_id"]])
    return CocoBoxes(boxes, labels, sizes, cat_ids)


def coco_arrays(
    coco: CocoBoxes, input_size: tuple[int, int], limit: int | None = None
) -> dict[str, np.ndarray]:
    """``gt_boxes`` and ``gt_labels`` (module docstring) for the first `limit` images, boxes scaled to the
    recipe's (height, width)."""
    n = len(coco.boxes) if limit is None else min(limit, len(coco.boxes))
    m = coco.max_boxes
    out_boxes = np.zeros((n, m, 4), dtype=np.float32)
    out_labels = np.full((n, m), -1, dtype=np.int64)
    height, width = input_size
    for i in range(n):
        if not coco.boxes[i]:
            continue
        w, h = coco.sizes[i]
        scale = np.array([width / w, height / h, width / w, height / h])
        k = len(coco.boxes[i])
        out_boxes[i, :k] = np.asarray(coco.boxes[i]) * scale
        out_labels[i, :k] = coco.labels[i]
    return {GT_BOXES: out_boxes, GT_LABELS: out_labels}
