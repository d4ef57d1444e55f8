"""The detection task's cost (worker/engine/tasks/detection.py) on a real detector at 320 px, 100 pictures:

* the task on top of the output comparison: `compare_models` with task "detection" (decoding both
  models, per-image matching, COCO evaluation of golden vs truth, compressed vs truth, compressed vs
  golden) against the same comparison with the outputs compared as plain tensors (task "auto"), measured
  in the same run (goal ≤ 1.2×);
* the vectorised class-wise NMS against a straightforward per-box Python loop (the greedy walk of
  tests/support/detection_reference.py), on the same candidates of every picture: the detector's at the
  default score threshold 0.25 and at 0.001 (what mAP evaluations usually decode with), and 100 or 1000
  boxes in 30 clusters per picture (a detector with thousands of anchors at a low threshold; the tiny one
  here is too sure of itself to make many).

The detector is tests/support/tiny_detector.py's, trained at 64 px (its convolutions slide, so the same
weights run at 320 px on scenes of objects of the same pixel sizes), exported to ONNX, against a copy
with 6-bit weights. One torch / onnxruntime thread. `.venv/bin/python -m bench.bench_detection`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import best_of, report

SIZE, N, BATCH = 320, 100, 20


def _models(folder: Path) -> tuple[Any, Any]:
    import torch

    from tests.support.tiny_detector import TinyYolo, scenes, train_tiny_yolo
    from worker.engine.compression import compress_module
    from worker.engine.compression.configs import WeightQuant
    from worker.engine.formats.exporters import export_onnx
    from worker.engine.loaders import load_model

    trained = train_tiny_yolo(seed=0)
    big = TinyYolo(SIZE)
    big.load_state_dict({k: v for k, v in trained.state_dict().items() if k != "grid"}, strict=False)
    convs = [name for name, m in big.named_modules() if isinstance(m, torch.nn.Conv2d)]
    small = compress_module(big.eval(), {name: WeightQuant(6) for name in convs})[0].eval()
    sample = scenes(2, seed=1, size=SIZE)[0]
    paths = [
        export_onnx(m, sample, folder / f"{t}.onnx", "images", "output0")
        for m, t in ((big, "g"), (small, "c"))
    ]
    return load_model(paths[0], "onnx", intra_op_threads=1), load_model(paths[1], "onnx", intra_op_threads=1)


def _nms_line(title: str, per_image: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Both NMS on the same candidates (boxes xyxy, scores, labels) of each picture, with a check that they
    keep the same boxes."""
    from tests.support.detection_reference import greedy_nms
    from worker.engine.tasks.detection_decode import nms_classwise

    lists = [(b.tolist(), s.tolist(), lab.tolist()) for b, s, lab in per_image]
    same = all(
        nms_classwise(*arrays, 0.45).tolist() == greedy_nms(*plain, 0.45)
        for arrays, plain in zip(per_image, lists, strict=True)
    )
    t_loop = best_of(lambda: [greedy_nms(*plain, 0.45) for plain in lists], 3)
    t_vec = best_of(lambda: [nms_classwise(*arrays, 0.45) for arrays in per_image], 3)
    per = sum(len(s) for _, s, _ in per_image) / len(per_image)
    print(f"NMS, {title}: {per:.0f} candidates per picture, same kept boxes: {same}")
    report("  per-box Python loop", t_loop, "per-box loop", t_loop)
    report("  vectorised fixed point", t_vec, "per-box loop", t_loop)


def _model_candidates(head: np.ndarray, threshold: float) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    from worker.engine.tasks.detection_decode import cxcywh_to_xyxy

    out = []
    for i in range(len(head)):
        cls = head[i, 4:].astype(np.float64)
        keep = cls.max(0) >= threshold
        out.append((cxcywh_to_xyxy(head[i, :4].T)[keep], cls.max(0)[keep], cls.argmax(0)[keep]))
    return out


def _dense_candidates(k: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """What a detector with thousands of anchors hands NMS at a low threshold: `k` boxes in 30 clusters
    (objects), 3 classes."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N):
        centres = rng.uniform(20, SIZE - 20, size=(30, 2))
        c = centres[rng.integers(0, 30, size=k)] + rng.normal(0, 4, size=(k, 2))
        wh = rng.uniform(10, 40, size=(k, 2))
        out.append(
            (np.concatenate([c - wh / 2, c + wh / 2], axis=1), rng.random(k), rng.integers(0, 3, size=k))
        )
    return out


def main() -> None:
    import torch

    from tests.support.tiny_detector import scenes
    from worker.engine.fidelity.compare import FidelityParams, compare_models

    torch.set_num_threads(1)
    pictures, gt_boxes, gt_labels = scenes(N, seed=5, size=SIZE)
    with tempfile.TemporaryDirectory() as tmp:
        golden, compressed = _models(Path(tmp))
        data = {"images": pictures, "gt_boxes": gt_boxes, "gt_labels": gt_labels}
        plain = FidelityParams(batch_size=BATCH)
        task = FidelityParams(batch_size=BATCH, task="detection", task_options={"format": "yolo"})
        # Interleaved, best of 7 each: the machine is shared, and its load drifts within seconds.
        times: dict[str, list[float]] = {"plain": [], "task": []}

        def run(params: FidelityParams) -> None:
            compare_models(golden, compressed, data, None, params)

        for _ in range(7):
            times["plain"].append(best_of(lambda: run(plain), 1))
            times["task"].append(best_of(lambda: run(task), 1))
        t_plain, t_task = min(times["plain"]), min(times["task"])
        block = compare_models(golden, compressed, data, None, task).outputs["output0"]["task"]
        head = golden.run({"images": pictures})["output0"]
    print(
        f"Detection at {SIZE} px, {N} pictures, batch {BATCH}: golden mAP@.5 {block['golden_map50']:.3f}, "
        f"compressed {block['compressed_map50']:.3f}, {block['detections']['golden']} golden detections"
    )
    report("compare_models, outputs as tensors", t_plain, "tensors only", t_plain)
    report("compare_models, task 'detection'", t_task, "tensors only", t_plain)
    _nms_line("the detector's candidates at score ≥ 0.25", _model_candidates(head, 0.25))
    _nms_line("the detector's candidates at score ≥ 0.001", _model_candidates(head, 0.001))
    for k in (100, 1000):
        _nms_line(f"{k} clustered boxes per picture", _dense_candidates(k))


if __name__ == "__main__":
    main()
