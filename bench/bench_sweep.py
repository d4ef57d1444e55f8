"""A 12-point sweep of a real pretrained model (EfficientNet-Lite0 from its PyPI package, exported to ONNX)
with one worker process and with two, against evaluating the same points in this process (the baseline).

Embedded mode (SQLite, filesystem broker); every worker runs onnxruntime on one thread, so two workers can
use the machine's two cores. Latency timing is on (few repeats) as in a real sweep.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_sensitivity import _through_the_queue_job
from bench.common import report

CONFIGS: list[dict[str, Any]] = [
    {"type": "weight_quant", "bits": 8, "per_channel": True},
    {"type": "weight_quant", "bits": 8},
    {"type": "weight_quant", "bits": 6, "per_channel": True},
    {"type": "weight_quant", "bits": 4, "per_channel": True},
    {"type": "float_cast", "dtype": "fp16"},
    {"type": "float_cast", "dtype": "bf16"},
    {"type": "magnitude_prune", "sparsity": 0.3},
    {"type": "magnitude_prune", "sparsity": 0.6},
    {"type": "low_rank", "rank_ratio": 0.75},
    {"type": "noise", "bits": 6},
    {
        "type": "schedule",
        "stages": [{"type": "magnitude_prune", "sparsity": 0.3}, {"type": "weight_quant", "bits": 8}],
    },
]  # + the golden fp32 point: 12 points
SAMPLES = 8
PARAMS = {
    "max_samples": SAMPLES,
    "batch_size": 8,
    "latency_batch_sizes": [1],
    "latency_repeats": 5,
    "threads": 1,
}


def _files(folder: Path) -> tuple[Path, Path]:
    import torch

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from tests.support.sample_images import sample_images
    from worker.demo.models import export_onnx

    images = sample_images().images[:SAMPLES]
    model = efficientnet_lite0().eval()
    with torch.inference_mode():
        onnx_path = export_onnx(model, images[:2], folder / "efficientnet_lite0.onnx")
    data = folder / "photos.npz"
    np.savez(data, input=images)
    return onnx_path, data


def _in_process(model: Path, data: Path) -> float:
    from worker.engine.compression import open_compressible
    from worker.engine.compression.configs import config_from_dict
    from worker.engine.compression.model import Calibration, first_sample
    from worker.engine.sweep import GoldenReference, evaluate_point, measure_latency

    feeds = {"input": np.load(data)["input"]}
    start = time.perf_counter()
    handle = open_compressible(model, "onnx", intra_op_threads=1)
    handle.prepare(first_sample(feeds))
    reference = GoldenReference(handle, feeds, SAMPLES)
    calibration = Calibration(handle, feeds, SAMPLES)
    for raw in [None, *CONFIGS]:
        with tempfile.TemporaryDirectory() as tmp:
            point = evaluate_point(
                handle,
                feeds,
                None,
                None if raw is None else config_from_dict(raw),
                batch_size=SAMPLES,
                calibration=calibration,
                reference=reference,
                export_dir=Path(tmp),
            )
            export = point.exports[-1]
            measure_latency(Path(tmp) / export["file"], feeds, batch_sizes=[1], repeats=5, threads=1)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model, data = _files(root)
        baseline = _in_process(model, data)
        params = PARAMS | {"configs": CONFIGS}
        one, _ = _through_the_queue_job(root, model, data, 1, "sweep", params)
        two, used = _through_the_queue_job(root, model, data, 2, "sweep", params)
        print(
            f"sweep: EfficientNet-Lite0 (ONNX), {len(CONFIGS) + 1} points on {SAMPLES} photos, export + latency"
        )
        report("the 12 points evaluated in this process", baseline, "baseline", baseline)
        report("sweep job, 1 worker process", one, "baseline", baseline)
        report(f"sweep job, 2 worker processes ({len(used)} used)", two, "baseline", baseline)
        print(f"{'speed-up of 2 workers over 1':<46} {one / two:10.2f}x")


if __name__ == "__main__":
    main()
