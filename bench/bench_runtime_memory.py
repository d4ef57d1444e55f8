"""Run-time memory of sweep points (issue 33): what the per-point measurement costs, and the memory an
onnxruntime session needs for the fp32 model against its int8 exports, on the demo's digits CNN and on
EfficientNet-Lite0 (ONNX) at 224 px.

Each file is exported as a sweep exports it (evaluate_point on 8 samples; the chosen export is the last one,
as worker/engine/sweep/deployed_fidelity.py `chosen_export`), then measured by `measure_runtime_memory` in a child process at
batch 1 (the sweep's first latency batch size by default): session MiB = peak RSS - RSS before the session.
"Cost" is the whole measurement (interpreter start, imports, load, 3 runs) against the point's evaluation
and export in this process.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import photo_crops

SAMPLES = 8
W8 = {"type": "weight_quant", "bits": 8, "per_channel": True}
W8A8 = {
    "type": "quantize",
    "weights": {"type": "weight_quant", "bits": 8, "per_channel": True},
    "activations": {"type": "activation_quant", "bits": 8},
}


def _lite0(folder: Path) -> tuple[Path, np.ndarray]:
    import torch

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from worker.demo.models import export_onnx

    images = photo_crops(SAMPLES, 224, seed=0)
    model = efficientnet_lite0().eval()
    with torch.inference_mode():
        return export_onnx(model, images[:2], folder / "efficientnet_lite0.onnx"), images


def _digits(folder: Path) -> tuple[Path, np.ndarray]:
    from worker.demo.models import write_demo_bundle

    bundle = write_demo_bundle(folder)
    return bundle.golden_onnx, np.load(bundle.test_npz)["input"][:SAMPLES]


def _points(model: Path, images: np.ndarray, folder: Path) -> dict[str, tuple[Path, str, float]]:
    """label → (the chosen export, its kind, seconds to evaluate and export the point)."""
    from worker.engine.compression import open_compressible
    from worker.engine.compression.configs import config_from_dict
    from worker.engine.compression.model import Calibration, first_sample
    from worker.engine.sweep import GoldenReference, evaluate_point

    feeds = {"input": images}
    handle = open_compressible(model, "onnx", intra_op_threads=1)
    handle.prepare(first_sample(feeds))
    reference = GoldenReference(handle, feeds, SAMPLES)
    calibration = Calibration(handle, feeds, SAMPLES)
    out: dict[str, tuple[Path, str, float]] = {}
    for label, raw in (("fp32", None), ("w8", W8), ("w8a8", W8A8)):
        target = folder / label
        target.mkdir()
        started = time.perf_counter()
        point = evaluate_point(
            handle,
            feeds,
            None,
            None if raw is None else config_from_dict(raw),
            batch_size=SAMPLES,
            calibration=calibration,
            reference=reference,
            export_dir=target,
        )
        seconds = time.perf_counter() - started
        real = [m for m in point.exports if m.get("kind") != "simulated-float"] or point.exports
        out[label] = (target / real[-1]["file"], str(real[-1].get("kind")), seconds)
    return out


def _bench(name: str, model: Path, images: np.ndarray, folder: Path) -> None:
    from worker.engine.sweep.runtime_memory import measure_runtime_memory

    points = _points(model, images, folder)
    memory: dict[str, dict[str, Any]] = {}
    for label, (path, _kind, _seconds) in points.items():
        memory[label] = measure_runtime_memory(path, batch_size=1, sample={"input": images})
    print(f"runtime memory: {name}, batch 1, 3 runs, 1 thread (child process, VmHWM)")
    for label, (path, kind, seconds) in points.items():
        m = memory[label]
        ratio = m["session_mib"] / memory["fp32"]["session_mib"]
        print(
            f"  {label:<5} {kind:<18} file {path.stat().st_size / 2**20:7.2f} MiB   session {m['session_mib']:7.1f} "
            f"MiB ({ratio:4.2f}x fp32)   peak {m['peak_rss_mib']:6.1f} MiB (baseline {m['baseline_rss_mib']:5.1f})"
            f"   measured in {m['wall_s']:5.2f} s (point evaluated + exported in {seconds:6.2f} s)"
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "digits").mkdir()
        model, images = _digits(root / "digits")
        _bench("digits CNN (demo, ONNX)", model, images, root / "digits")
        print()
        (root / "lite0").mkdir()
        model, images = _lite0(root / "lite0")
        _bench("EfficientNet-Lite0 (ONNX) at 224 px", model, images, root / "lite0")


if __name__ == "__main__":
    main()
