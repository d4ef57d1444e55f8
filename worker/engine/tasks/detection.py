"""The object-detection task (issue 30): both models' outputs decoded into boxes and scored by COCO mAP,
against the dataset's boxes when it has them and label-free against the golden model's detections.

task_options (any other key is refused, naming these):
- `format`: "post_nms" (boxes, scores, labels and an optional count, already suppressed) or "yolo" (a raw
  head ``[N, 4 + C, A]``); default "yolo" when `head_output` is given, else "post_nms".
- `boxes_output`, `scores_output`, `labels_output` (defaults "boxes", "scores", "labels"), `count_output`
  (optional; without it every row whose label is ≥ 0 is a detection): the post-NMS outputs.
- `head_output`: the YOLO head (default: the model's only output, else "output0" as Ultralytics names it).
- `box_format`: "xyxy" (default) or "xywh" (top-left corner, width, height) for post-NMS boxes; YOLO
  heads are always centre-x, centre-y, width, height.
- `score_threshold`: detections below it are dropped (default 0.25 for yolo, as Ultralytics predicts; 0.0
  for post-NMS, whose model already chose its detections).
- `iou_threshold`: NMS IoU of yolo heads (default 0.45): a box overlapping a better one of its class by more
  is suppressed.
- `image_size`: [height, width] of the model's input, to clip boxes and flag those outside it; default:
  the last two sizes of the dataset's one 4-D array when channels-first (N, C≤4, H, W), else its sizes 1-2;
  without either, nothing is clipped.

Ground truth: dataset arrays `gt_boxes` ``[N, M, 4]`` xyxy and `gt_labels` ``[N, M]`` (rows whose label is
−1 are padding). Without them the task scores label-free only. The decoding lives in `detection_decode`,
the scores in `detection_scores` (COCO) and `detection_matching` (per image). Detections of every image are
kept (O(detections)) so COCO scores them in one pass at the end; the per-image values are returned batch by
batch.

The block: COCO scores of each model against the truth (`against_labels`) and of the compressed model
against the golden one (`against_golden`), with flat keys for `kneeboard check`: `map_drop`, `map50_drop`
(golden minus compressed, in points, lower is better), `map_vs_golden`, `map50_vs_golden`, `golden_map`...
COCO scores the best 100 detections per image and class, so the golden model against itself scores 1 unless
an image has more than 100 of one class. mAP is usually measured with a low score threshold (0.001); the
yolo default here (0.25) is the one a deployed detector predicts with, which counts low-confidence boxes
neither for nor against. The per-image values (per sample) are `ap50_vs_golden`, `f1_50_vs_golden`,
`mean_iou_vs_golden`, `missed_vs_golden`, `added_vs_golden`, each model's detection and invalid-box counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from task_specs import TASK_OPTIONS
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.tasks.detection_decode import DecodedBatch, Detections, decode_post_nms, decode_yolo
from worker.engine.tasks.detection_matching import image_scores
from worker.engine.tasks.detection_scores import Truth, as_truth, coco_scores
from worker.engine.tasks.interface import SAMPLE_VIEWS_MAX, TaskContext

GT_BOXES_KEY = "gt_boxes"
GT_LABELS_KEY = "gt_labels"
OPTIONS = TASK_OPTIONS["detection"]  # one list for the launch check (task_specs) and the adapter
PER_IMAGE = ("ap50", "f1_50", "mean_iou", "missed", "added")


def _points(golden: float | None, compressed: float | None) -> float | None:
    return None if golden is None or compressed is None else 100.0 * (golden - compressed)


def _fraction(options: Mapping[str, Any], key: str, default: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise OutputMismatchError(f"task 'detection': {key} is a number from 0 to 1, not {value!r}")
    return float(value)


def _image_size(options: Mapping[str, Any], dataset: Mapping[str, Any]) -> tuple[float, float] | None:
    if "image_size" in options:
        size = [float(v) for v in options["image_size"]]
        if len(size) != 2 or min(size) <= 0:
            raise OutputMismatchError(f"task 'detection': image_size is [height, width], got {size}")
        return size[0], size[1]
    four_d = [np.shape(a) for a in dataset.values() if np.ndim(a) == 4]
    if len(four_d) != 1:
        return None
    shape = four_d[0]
    return (float(shape[2]), float(shape[3])) if shape[1] <= 4 else (float(shape[1]), float(shape[2]))


def _truth(dataset: Mapping[str, Any], n: int) -> tuple[np.ndarray, np.ndarray] | None:
    if GT_BOXES_KEY not in dataset and GT_LABELS_KEY not in dataset:
        return None
    if GT_BOXES_KEY not in dataset or GT_LABELS_KEY not in dataset:
        raise DatasetMismatchError(
            f"detection ground truth needs both '{GT_BOXES_KEY}' and '{GT_LABELS_KEY}'"
        )
    boxes = np.asarray(dataset[GT_BOXES_KEY], dtype=np.float64)
    labels = np.asarray(dataset[GT_LABELS_KEY])
    if boxes.ndim != 3 or boxes.shape[2] != 4 or labels.shape != boxes.shape[:2] or boxes.shape[0] != n:
        raise DatasetMismatchError(
            f"'{GT_BOXES_KEY}' must be [{n}, M, 4] and '{GT_LABELS_KEY}' [{n}, M]; got "
            f"{list(boxes.shape)} and {list(labels.shape)}"
        )
    real = labels >= 0
    bad = real & ~(
        np.isfinite(boxes).all(axis=2) & (boxes[..., 2] > boxes[..., 0]) & (boxes[..., 3] > boxes[..., 1])
    )
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        raise DatasetMismatchError(
            f"'{GT_BOXES_KEY}' has {int(bad.sum())} boxes that are NaN/Inf or have no area (first: sample "
            f"{i}, row {j}: {boxes[i, j].tolist()}); boxes are [x1, y1, x2, y2] with x2 > x1, y2 > y1"
        )
    return boxes, labels.astype(np.int64)


def _boxes(found: Detections | Truth, limit: int = 100) -> list[dict[str, Any]]:
    """At most `limit` boxes (the highest scores: detections come sorted), xyxy in input pixels."""
    scores = getattr(found, "scores", None)
    boxes, labels = found.boxes[:limit].tolist(), found.labels[:limit].tolist()
    kept = [None] * len(labels) if scores is None else [round(s, 5) for s in scores[:limit].tolist()]
    return [
        {"box": [round(v, 3) for v in box], "score": score, "label": int(label)}
        for box, score, label in zip(boxes, kept, labels, strict=True)
    ]


class DetectionTask:
    """The detection task adapter (see the module docstring)."""

    name = "detection"

    def __init__(self) -> None:
        self.primary_output = ""
        self.options: dict[str, Any] = {}
        self.truth: tuple[np.ndarray, np.ndarray] | None = None
        self.image_size: tuple[float, float] | None = None
        self.golden: list[Detections] = []
        self.compressed: list[Detections] = []
        self.invalid = {"golden": 0, "compressed": 0}
        self.capped = {"golden": 0, "compressed": 0}

    def start(self, context: TaskContext) -> None:
        opts = {k: v for k, v in context.options.items() if v is not None}  # null: the option's default
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            raise OutputMismatchError(
                f"task 'detection' does not know task_options {unknown}; it reads {list(OPTIONS)}"
            )
        shapes = context.output_shapes
        fmt = opts.get("format", "yolo" if "head_output" in opts else "post_nms")
        if fmt not in ("post_nms", "yolo"):
            raise OutputMismatchError(f"task 'detection': format is 'post_nms' or 'yolo', not {fmt!r}")
        box_format = opts.get("box_format", "xyxy")
        if box_format not in ("xyxy", "xywh"):
            raise OutputMismatchError(f"task 'detection': box_format is 'xyxy' or 'xywh', not {box_format!r}")
        self.options = {
            "format": fmt,
            "box_format": box_format,
            "score_threshold": _fraction(opts, "score_threshold", 0.25 if fmt == "yolo" else 0.0),
            "iou_threshold": _fraction(opts, "iou_threshold", 0.45),
        }
        if fmt == "yolo":
            default = next(iter(shapes)) if len(shapes) == 1 else "output0"
            head = self._output(shapes, opts.get("head_output", default), "head_output")
            if len(shapes[head]) != 2 or shapes[head][0] < 5:
                raise OutputMismatchError(
                    f"task 'detection': the YOLO head '{head}' has per-sample shape {list(shapes[head])}; "
                    "it must be [4 + classes, anchors]"
                )
            self.options["head_output"] = self.primary_output = head
        else:
            for key, default in (
                ("boxes_output", "boxes"),
                ("scores_output", "scores"),
                ("labels_output", "labels"),
            ):
                self.options[key] = self._output(shapes, opts.get(key, default), key)
            if "count_output" in opts:
                self.options["count_output"] = self._output(shapes, opts["count_output"], "count_output")
            self._check_post_nms_shapes(shapes)
            self.primary_output = self.options["boxes_output"]
        self.image_size = _image_size(opts, context.dataset)
        self.truth = _truth(context.dataset, context.n_samples)

    @staticmethod
    def _output(shapes: Mapping[str, tuple[int, ...]], name: Any, key: str) -> str:
        if name not in shapes:
            raise OutputMismatchError(
                f"task 'detection': {key} names output {name!r}, which the model does not have; its outputs "
                f"are {list(shapes)}"
            )
        return str(name)

    def _check_post_nms_shapes(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        boxes = shapes[self.options["boxes_output"]]
        if len(boxes) != 2 or boxes[1] != 4:
            raise OutputMismatchError(f"task 'detection': boxes must be [K, 4] per image, got {list(boxes)}")
        for key in ("scores_output", "labels_output"):
            got = shapes[self.options[key]]
            if int(np.prod(got)) != boxes[0] or len(got) > 2:
                raise OutputMismatchError(
                    f"task 'detection': {key} '{self.options[key]}' has per-image shape {list(got)}; the "
                    f"boxes need [{boxes[0]}]"
                )
        if "count_output" in self.options and int(np.prod(shapes[self.options["count_output"]])) != 1:
            raise OutputMismatchError("task 'detection': the count output must hold one number per image")

    def _decode(self, out: Mapping[str, Any]) -> DecodedBatch:
        o = self.options
        if o["format"] == "yolo":
            return decode_yolo(
                out[o["head_output"]], o["score_threshold"], o["iou_threshold"], self.image_size
            )
        count = out[o["count_output"]] if "count_output" in o else None
        return decode_post_nms(
            out[o["boxes_output"]],
            out[o["scores_output"]],
            out[o["labels_output"]],
            count,
            o["box_format"],
            o["score_threshold"],
            self.image_size,
        )

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]:
        g, c = self._decode(golden), self._decode(compressed)
        self.golden.extend(g.images)
        self.compressed.extend(c.images)
        for who, batch in (("golden", g), ("compressed", c)):
            self.invalid[who] += int(batch.invalid.sum())
            self.capped[who] += int(batch.capped.sum())
        scores = image_scores([as_truth(d) for d in g.images], c.images)
        values: dict[str, Any] = {f"{k}_vs_golden": scores[k] for k in PER_IMAGE}
        values["golden_detections"] = np.array([len(d) for d in g.images])
        values["compressed_detections"] = np.array([len(d) for d in c.images])
        values["golden_invalid_boxes"] = g.invalid
        values["compressed_invalid_boxes"] = c.invalid
        return values

    def sample_views(self) -> dict[str, Any]:
        """Each kept image's boxes of both models (and its truth): what the inspector draws over it."""
        n = min(len(self.golden), SAMPLE_VIEWS_MAX)
        truths = self._truths()[:n] if self.truth is not None else None
        samples = [
            {
                "golden": _boxes(self.golden[i]),
                "compressed": _boxes(self.compressed[i]),
                "truth": None if truths is None else _boxes(truths[i]),
            }
            for i in range(n)
        ]
        size = None if self.image_size is None else list(self.image_size)
        return {"task": self.name, "n_samples": n, "image_size": size, "samples": samples}

    def _truths(self) -> list[Truth]:
        assert self.truth is not None
        boxes, labels = self.truth
        return [Truth(boxes[i][labels[i] >= 0], labels[i][labels[i] >= 0]) for i in range(len(labels))]

    def to_dict(self) -> dict[str, Any]:
        vs_golden = coco_scores([as_truth(d) for d in self.golden], self.compressed)
        empty: dict[str, Any] = {"map": None, "map50": None}
        golden, compressed, against_labels = empty, empty, None
        if self.truth is not None:
            truths = self._truths()
            golden, compressed = coco_scores(truths, self.golden), coco_scores(truths, self.compressed)
            against_labels = {"golden": golden, "compressed": compressed}
        return {
            "name": self.name,
            **self.options,
            "image_size": None if self.image_size is None else list(self.image_size),
            "n_images": len(self.golden),
            "detections": {
                "golden": sum(map(len, self.golden)),
                "compressed": sum(map(len, self.compressed)),
            },
            "invalid_boxes": dict(self.invalid),
            "images_capped": dict(self.capped),
            "map_vs_golden": vs_golden["map"],
            "map50_vs_golden": vs_golden["map50"],
            "golden_map": golden["map"],
            "golden_map50": golden["map50"],
            "compressed_map": compressed["map"],
            "compressed_map50": compressed["map50"],
            "map_drop": _points(golden["map"], compressed["map"]),
            "map50_drop": _points(golden["map50"], compressed["map50"]),
            "against_golden": vs_golden,
            "against_labels": against_labels,
        }
