"""How much a fidelity comparison costs on top of just running the two models.

Baseline: both models (digits CNN fp32 and its int8 QDQ version, ONNX Runtime, 1 thread) run over the
same batches with no metrics. Measured: compare_models, which runs them and streams every metric and the
per-sample table. Ratio close to 1 means the metrics are cheap next to inference.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bench.common import best_of, report


def main(n_samples: int = 20_000, batch_size: int = 256) -> None:
    from worker.demo.models import write_demo_bundle
    from worker.engine.fidelity.compare import FidelityParams, compare_models
    from worker.engine.loaders import load_model

    with tempfile.TemporaryDirectory() as tmp:
        bundle = write_demo_bundle(Path(tmp))
        golden = load_model(bundle.golden_onnx, "onnx", intra_op_threads=1)
        compressed = load_model(bundle.int8_onnx, "onnx", intra_op_threads=1)
        data = np.load(bundle.test_npz)
        reps = -(-n_samples // len(data["input"]))
        x = np.tile(data["input"], (reps, 1, 1, 1))[:n_samples]
        labels = np.tile(data["labels"], reps)[:n_samples]

        def inference_only() -> None:
            for start in range(0, n_samples, batch_size):
                feeds = {"input": x[start : start + batch_size]}
                golden.run(feeds)
                compressed.run(feeds)

        def full_comparison() -> None:
            compare_models(golden, compressed, {"input": x}, labels, FidelityParams(batch_size=batch_size))

        base = best_of(inference_only)
        print(f"fidelity: digits CNN fp32 vs int8, {n_samples} samples, batch {batch_size}, ORT 1 thread")
        report("inference only (both models)", base, "baseline", base)
        report("compare_models (all metrics + per-sample)", best_of(full_comparison), "baseline", base)


if __name__ == "__main__":
    main()
