"""The segmentation task (issue 30, "task-level truth"): per-pixel class outputs scored by mIoU, per-class
IoU, pixel accuracy and boundary F1 instead of tensor divergence.

The output read is logits (N, C, H, W), C ≥ 2, decoded by argmax over C, or label maps (N, H, W) of class
indices. Scores (defined in `worker.engine.tasks.segmentation_metrics`):
- label-free, always: the compressed model's label maps against the golden model's taken as the truth
  (`miou_vs_golden`, `pixel_agreement`, `boundary_f1_vs_golden`, per-class IoU in `against_golden`);
- with a dataset array `masks` (N, H, W) of class indices (`ignore_index` pixels left out): both models
  against the masks, and the drops golden − compressed (`miou_drop`, `pixel_accuracy_drop`,
  `boundary_f1_drop`), as fractions like the scores themselves (0.01 = one IoU point); lower is better.

Per-sample values: `iou_vs_golden` (mIoU of one image over the classes either model predicts there),
`pixel_agreement`, `boundary_f1_vs_golden`.

Sample inspector (`sample_views`): the first SEGMENTATION_VIEWS_MAX samples' golden and compressed label maps
(and the truth mask) as lossless PNGs (`worker.engine.tasks.view_encoding`), drawn over the input picture.

Memory: the confusion matrices are summed batch by batch (one bincount per batch, O(B·C²)); masks are read
one batch slice at a time, so a memory-mapped `masks` array is never loaded whole.

task_options: `output` (default: the first output of a fitting shape), `ignore_index` (default 255),
`boundary_tolerance` (pixels, default 2). Unknown keys are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from task_specs import TASK_OPTIONS
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.tasks.interface import TaskContext
from worker.engine.tasks.segmentation_metrics import (
    Confusion,
    boundary_f1,
    mean_iou,
    per_image_confusion,
    pixel_accuracy,
)
from worker.engine.tasks.view_encoding import ViewBudget, label_map_png

MASKS_KEY = "masks"
"""Dataset array of ground-truth label maps (N, H, W) for the segmentation task."""

DEFAULT_IGNORE_INDEX = 255
DEFAULT_BOUNDARY_TOLERANCE = 2
OPTION_KEYS = TASK_OPTIONS["segmentation"]  # one list for the launch check (task_specs) and the adapter
SEGMENTATION_VIEWS_MAX = 100
"""Samples whose label maps the inspector can show. Measured (base64 of the three 8-bit PNGs, the compressed
map with 2 % of its pixels changed): 128 x 128 with 4 smooth classes, 5.1 kB a sample (0.5 MB for 100);
512 x 512 with 20 classes, 117 kB (smooth regions) to 253 kB (ragged ones) a sample, where VIEW_BYTES_MAX
stops it after 32–68 samples."""


def _shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why an output of this per-sample shape is not a segmentation, or None."""
    if len(shape) == 2:
        return None
    if len(shape) == 3 and shape[0] >= 2:
        return None
    return f"per-sample shape {shape} is neither logits (C, H, W) with C >= 2 nor a label map (H, W)"


def _int_option(options: Mapping[str, Any], key: str, default: int, low: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < low:
        raise OutputMismatchError(f"task option {key!r} must be an integer >= {low}, got {value!r}")
    return int(value)


class _Scores:
    """One model's running scores against one truth: confusion matrix and per-image boundary F1 sum."""

    def __init__(self, n_classes: int) -> None:
        self.confusion = Confusion(n_classes)
        self.f1_sum = 0.0
        self.n_images = 0

    def add(self, per_image: np.ndarray, f1: np.ndarray) -> None:
        self.confusion.add(per_image)
        self.f1_sum += float(f1.sum())
        self.n_images += len(f1)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.confusion.scores())
        out["boundary_f1"] = self.f1_sum / self.n_images if self.n_images else None
        return out


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _drop(golden: dict[str, Any], compressed: dict[str, Any], key: str) -> float | None:
    g, c = golden.get(key), compressed.get(key)
    return None if g is None or c is None else g - c


class SegmentationTask:
    """Decodes and scores segmentation outputs (see the module docstring)."""

    name = "segmentation"

    def __init__(self) -> None:
        self.primary_output = ""
        self.logits = True
        self.n_classes = 0
        self.ignore_index = DEFAULT_IGNORE_INDEX
        self.tolerance = DEFAULT_BOUNDARY_TOLERANCE
        self.masks: Any = None
        self.vs_golden = _Scores(0)
        self.golden_vs_masks = _Scores(0)
        self.compressed_vs_masks = _Scores(0)
        self.n_ignored = 0
        self.kept: list[dict[str, Any]] = []
        self.budget = ViewBudget(SEGMENTATION_VIEWS_MAX)
        self.image_size: list[int] = []

    def start(self, context: TaskContext) -> None:
        unknown = sorted(set(context.options) - set(OPTION_KEYS))
        if unknown:
            raise OutputMismatchError(
                f"task 'segmentation' has no option {', '.join(map(repr, unknown))}; "
                f"its options are {', '.join(OPTION_KEYS)}"
            )
        self.ignore_index = _int_option(context.options, "ignore_index", DEFAULT_IGNORE_INDEX, 0)
        self.tolerance = _int_option(context.options, "boundary_tolerance", DEFAULT_BOUNDARY_TOLERANCE, 0)
        self.primary_output = self._choose_output(context)
        shape = context.output_shapes[self.primary_output]
        self.image_size = [int(d) for d in shape[-2:]]
        if not context.sample_views:
            self.budget = ViewBudget(0)
        self.logits = len(shape) == 3
        self.n_classes = shape[0] if self.logits else 0  # label maps: grows with the classes seen
        for scores in ("vs_golden", "golden_vs_masks", "compressed_vs_masks"):
            setattr(self, scores, _Scores(self.n_classes))
        raw = context.dataset.get(MASKS_KEY)
        if raw is not None:
            want = (context.n_samples, *shape[-2:])
            if tuple(np.shape(raw)) != want:
                raise DatasetMismatchError(
                    f"'{MASKS_KEY}' has shape {tuple(np.shape(raw))}; the segmentation output "
                    f"'{self.primary_output}' needs label maps of shape {want}"
                )
            if not np.issubdtype(np.asarray(raw[:1]).dtype, np.integer):
                raise DatasetMismatchError(
                    f"'{MASKS_KEY}' must hold integer class indices, not {np.asarray(raw[:1]).dtype}"
                )
            self.masks = raw

    def _choose_output(self, context: TaskContext) -> str:
        wanted = context.options.get("output")
        if wanted is not None:
            if wanted not in context.output_shapes:
                raise OutputMismatchError(
                    f"task 'segmentation': no output {wanted!r} (outputs: {', '.join(context.output_shapes)})"
                )
            problem = _shape_problem(context.output_shapes[str(wanted)])
            if problem:
                raise OutputMismatchError(f"task 'segmentation': output {wanted!r}: {problem}")
            return str(wanted)
        for name, shape in context.output_shapes.items():
            if _shape_problem(shape) is None:
                return name
        problems = "; ".join(f"'{k}': {_shape_problem(s)}" for k, s in context.output_shapes.items())
        raise OutputMismatchError(f"task 'segmentation' found no segmentation output ({problems})")

    def _labels(self, raw: Any, which: str) -> np.ndarray:
        x = np.asarray(raw)
        if self.logits:
            return x.argmax(axis=1)
        if x.size and (x.min() < 0 or not np.array_equal(x, np.round(x))):
            raise OutputMismatchError(
                f"the {which} model's label map '{self.primary_output}' holds values that are not class indices"
            )
        return x.astype(np.int64)

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]:
        g = self._labels(golden[self.primary_output], "golden")
        c = self._labels(compressed[self.primary_output], "compressed")
        n_classes = max(self.n_classes, int(max(g.max(initial=0), c.max(initial=0))) + 1)
        vs_golden = per_image_confusion(g, c, n_classes)
        f1_vs_golden = boundary_f1(g, c, self.tolerance)
        self.vs_golden.add(vs_golden, f1_vs_golden)
        masks = None
        if self.masks is not None:
            masks = np.asarray(self.masks[start:stop]).astype(np.int64)
            n_classes = self._check_masks(masks, n_classes, start)
            for scores, pred in ((self.golden_vs_masks, g), (self.compressed_vs_masks, c)):
                scores.add(
                    per_image_confusion(masks, pred, n_classes, self.ignore_index),
                    boundary_f1(masks, pred, self.tolerance, self.ignore_index),
                )
            self.n_ignored += int((masks == self.ignore_index).sum())
        values = {
            "iou_vs_golden": mean_iou(vs_golden),
            "pixel_agreement": pixel_accuracy(vs_golden),
            "boundary_f1_vs_golden": f1_vs_golden,
        }
        self._keep(g, c, masks, values)
        return values

    def _keep(
        self, g: np.ndarray, c: np.ndarray, masks: np.ndarray | None, values: Mapping[str, np.ndarray]
    ) -> None:
        for i in range(len(g)):
            if not self.budget.room():
                return
            maps = {
                "golden": label_map_png(g[i]),
                "compressed": label_map_png(c[i]),
                "truth": None if masks is None else label_map_png(masks[i]),
            }
            view: dict[str, Any] = {
                **maps,
                "task": self.name,  # with what the answer needs: the API reads one entry, not the document
                "image_size": self.image_size,
                "ignore_index": self.ignore_index,
                "iou_vs_golden": _finite(values["iou_vs_golden"][i]),
                "pixel_agreement": _finite(values["pixel_agreement"][i]),
            }
            self.budget.take(sum(len(m or "") for m in maps.values()))
            self.kept.append(view)

    def sample_views(self) -> dict[str, Any]:
        """The kept samples' label maps (base64 PNGs whose pixels are the class ids) for the inspector."""
        return {
            "task": self.name,
            "n_samples": len(self.kept),
            "image_size": self.image_size,
            "ignore_index": self.ignore_index,
            "samples": list(self.kept),
        }

    def _check_masks(self, masks: np.ndarray, n_classes: int, start: int) -> int:
        kept = masks[masks != self.ignore_index]
        if kept.size and kept.min() < 0:
            raise DatasetMismatchError(f"'{MASKS_KEY}' holds a negative class index near sample {start}")
        top = int(kept.max(initial=-1))
        if self.logits and top >= self.n_classes:
            raise DatasetMismatchError(
                f"'{MASKS_KEY}' holds class {top} near sample {start}, but output '{self.primary_output}' has "
                f"{self.n_classes} classes (0 to {self.n_classes - 1}); ignore_index is {self.ignore_index}"
            )
        return max(n_classes, top + 1)

    def to_dict(self) -> dict[str, Any]:
        vs_golden = self.vs_golden.to_dict()
        against_masks: dict[str, Any] | None = None
        drops: dict[str, float | None] = dict.fromkeys(
            ("miou_drop", "pixel_accuracy_drop", "boundary_f1_drop")
        )
        if self.masks is not None:
            g, c = self.golden_vs_masks.to_dict(), self.compressed_vs_masks.to_dict()
            drops = {
                "miou_drop": _drop(g, c, "miou"),
                "pixel_accuracy_drop": _drop(g, c, "pixel_accuracy"),
                "boundary_f1_drop": _drop(g, c, "boundary_f1"),
            }
            against_masks = {"golden": g, "compressed": c, **drops, "n_ignored_pixels": self.n_ignored}
        n_classes = max(len(vs_golden["per_class_iou"]), self.n_classes)
        if against_masks is not None:
            n_classes = max(n_classes, len(against_masks["golden"]["per_class_iou"]))
        return {
            "name": self.name,
            "output": self.primary_output,
            "output_form": "logits" if self.logits else "labels",
            "num_classes": n_classes,
            "ignore_index": self.ignore_index,
            "boundary_tolerance": self.tolerance,
            "miou_vs_golden": vs_golden["miou"],
            "pixel_agreement": vs_golden["pixel_accuracy"],
            "boundary_f1_vs_golden": vs_golden["boundary_f1"],
            "against_golden": vs_golden,
            "against_masks": against_masks,
            **drops,
        }
