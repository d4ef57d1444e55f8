"""Calibration kept apart (issue 33), on a real pretrained model: EfficientNet-Lite0 (ONNX) at W8A8 (8-bit
weights per channel, 8-bit activations per tensor), engine only.

1. The in-sample gap: the same evaluation crops, calibrated on themselves (what sweeps did before) and on
   other crops of the same photos (held out), KL(P‖Q) and KL(Q‖P) both ways; the ratio held-out / in-sample
   says how much in-sample calibration flattered the point.
2. The calibration study: the same config calibrated on 32, 128 and 512 crops, from two different sets
   (other seeds), min-max and entropy; the spread of the KL each reaches on the same evaluation crops.

Crops: `bench.common.photo_crops` (random squares of scikit-learn's two photos, some mirrored) with
different seeds, so no crop is shared between sets but every set shows the same two scenes: a held-out
set here is as close to the evaluation data as a split of one dataset is.

    .venv/bin/python -m bench.bench_calibration [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import photo_crops

SIZE = 224
EVALUATION_SEED = 1
SET_SEEDS = (2, 3)


def _config(calibration: str) -> Any:
    from worker.engine.compression.configs import config_from_dict

    return config_from_dict(
        {
            "type": "quantize",
            "weights": {"type": "weight_quant", "bits": 8, "per_channel": True},
            "activations": {"type": "activation_quant", "bits": 8, "calibration": calibration},
        }
    )


def _model(folder: Path) -> Path:
    import torch

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from worker.demo.models import export_onnx

    model = efficientnet_lite0().eval()
    with torch.inference_mode():
        return export_onnx(model, photo_crops(2, SIZE, seed=0), folder / "efficientnet_lite0.onnx")


def _kl(
    handle: Any, evaluation: np.ndarray, reference: Any, calibration: np.ndarray, method: str
) -> tuple[float, float, float]:
    """(KL(P‖Q) mean, KL(Q‖P) mean, seconds) of W8A8 `method` calibrated on `calibration`."""
    from worker.engine.compression.model import Calibration
    from worker.engine.sweep import evaluate_point

    start = time.perf_counter()
    point = evaluate_point(
        handle,
        {"input": evaluation},
        None,
        _config(method),
        batch_size=reference.batch_size,
        calibration=Calibration(handle, {"input": calibration}, reference.batch_size),
        reference=reference,
        layers=False,
    )
    return (
        float(point.fidelity["kl_mean"]),
        float(point.fidelity["kl_reverse_mean"]),
        time.perf_counter() - start,
    )


def main(quick: bool = False) -> None:
    from worker.engine.compression import open_compressible
    from worker.engine.compression.model import first_sample
    from worker.engine.sweep import GoldenReference

    n_eval = 32 if quick else 64
    sizes = (8, 32) if quick else (32, 128, 512)
    batch = 16
    with tempfile.TemporaryDirectory() as tmp:
        model = _model(Path(tmp))
        evaluation = photo_crops(n_eval, SIZE, seed=EVALUATION_SEED)
        handle = open_compressible(model, "onnx", intra_op_threads=2)
        handle.prepare(first_sample({"input": evaluation}))
        reference = GoldenReference(handle, {"input": evaluation}, batch)
        sets = {seed: photo_crops(max(sizes), SIZE, seed=seed) for seed in SET_SEEDS}
        print(f"calibration: EfficientNet-Lite0 (ONNX) W8A8, {n_eval} evaluation crops ({SIZE} px)")

        print("1. in-sample vs held-out calibration (the same evaluation crops)")
        for method in ("minmax", "entropy"):
            inside = _kl(handle, evaluation, reference, evaluation, method)
            held = sets[SET_SEEDS[0]][:n_eval]
            outside = _kl(handle, evaluation, reference, held, method)
            print(
                f"   {method:<8} KL(P‖Q) in-sample {inside[0]:.5f}  held-out {outside[0]:.5f}  "
                f"ratio {outside[0] / inside[0]:5.2f}x | KL(Q‖P) in-sample {inside[1]:.5f}  held-out "
                f"{outside[1]:.5f}  ratio {outside[1] / inside[1]:5.2f}x   ({inside[2] + outside[2]:.0f} s)"
            )

        print(f"2. calibration study: {', '.join(map(str, sizes))} calibration crops x sets {SET_SEEDS}")
        for method in ("minmax", "entropy"):
            reached: list[float] = []
            for n in sizes:
                values = [_kl(handle, evaluation, reference, sets[seed][:n], method)[0] for seed in SET_SEEDS]
                reached.extend(values)
                print(
                    f"   {method:<8} n={n:<4} KL(P‖Q) "
                    + "  ".join(f"set {s}: {v:.5f}" for s, v in zip(SET_SEEDS, values, strict=True))
                    + f"  spread between sets {max(values) / min(values):5.2f}x"
                )
            print(
                f"   {method:<8} over all: min {min(reached):.5f}  max {max(reached):.5f}  spread {max(reached) / min(reached):5.2f}x"
            )


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
