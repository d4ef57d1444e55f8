"""What robustness slices cost next to the clean fidelity comparison they multiply.

Baseline: compare_models over the dataset (the clean fidelity job's comparison), times the number of
slice x severity points. Measured: evaluate_robustness over the same points, which also corrupts every
chunk. Ratio close to 1 means no overhead beyond the extra forward passes; the corruptions alone are
also timed per slice (numpy / Pillow only, no model) to say where any overhead comes from.

Digits CNN fp32 vs its int8 QDQ copy, ONNX Runtime on 1 thread, the 6 array slices (noise, brightness,
contrast, blur, occlusion, jpeg) x 3 severities. The adversarial slices need a PyTorch golden model:
they are timed with the CNN's torch.export program as golden (torch on 1 thread) against the same
clean comparison x 3 severities; FGSM adds one golden backward pass per severity, PGD ten.

Then the array slices on EfficientNet-Lite0 fp32 vs int8 QDQ at 224 px, the job's way (worst samples'
pictures included): a real-size model, where the corruptions' own cost weighs less than on 8x8 digits.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bench.common import best_of, report


def main(n_samples: int = 10_000, batch_size: int = 256, repeats: int = 3) -> None:
    import torch

    from worker.demo.models import write_demo_bundle
    from worker.engine.fidelity.compare import FidelityParams, compare_models
    from worker.engine.loaders import load_model
    from worker.engine.robustness import (
        SEVERITIES,
        SLICES,
        RobustnessParams,
        array_stats,
        corrupt,
        evaluate_robustness,
    )
    from worker.jobs.robustness_images import WorstPictures

    torch.set_num_threads(1)
    array_slices = tuple(n for n, s in SLICES.items() if s.target in ("float", "image"))
    with tempfile.TemporaryDirectory() as tmp:
        bundle = write_demo_bundle(Path(tmp))
        golden = load_model(bundle.golden_onnx, "onnx", intra_op_threads=1)
        compressed = load_model(bundle.int8_onnx, "onnx", intra_op_threads=1)
        data = np.load(bundle.test_npz)
        reps = -(-n_samples // len(data["input"]))
        x = np.tile(data["input"], (reps, 1, 1, 1))[:n_samples]
        labels = np.tile(data["labels"], reps)[:n_samples]
        params = FidelityParams(batch_size=batch_size)
        points = len(array_slices) * len(SEVERITIES)
        clean = compare_models(golden, compressed, {"input": x}, labels, params)

        def clean_times(runner: object, times: int) -> None:
            for _ in range(times):
                compare_models(runner, compressed, {"input": x}, labels, params)  # type: ignore[arg-type]

        def robustness(runner: object, slices: tuple[str, ...], pictures: bool = False) -> None:
            # pictures: the worst samples' corrupted inputs drawn as PNGs, as the fidelity job does
            sink = WorstPictures({"input": x}).keep if pictures else None
            evaluate_robustness(
                runner, compressed, {"input": x}, labels, params, clean.per_sample, "classification",  # type: ignore[arg-type]
                RobustnessParams(slices=slices), worst_inputs=sink,
            )  # fmt: skip

        stats = array_stats(x)
        idx = np.arange(n_samples)
        base = best_of(lambda: clean_times(golden, points), repeats)
        print(
            f"robustness: digits CNN fp32 vs int8, {n_samples} samples, batch {batch_size}, ORT 1 thread, "
            f"{points} slice x severity points"
        )
        report(f"clean compare_models x {points}", base, "baseline", base)
        report(
            "evaluate_robustness (array slices)",
            best_of(lambda: robustness(golden, array_slices), repeats),
            "baseline",
            base,
        )
        report(
            "  + worst samples' pictures (as the job)",
            best_of(lambda: robustness(golden, array_slices, pictures=True), repeats),
            "baseline",
            base,
        )
        for name in array_slices:

            def corrupt_all(name: str = name) -> None:
                for severity in SEVERITIES:
                    corrupt(name, severity, x, idx, stats)

            report(f"  corruption only: {name} x 3", best_of(corrupt_all, repeats), "baseline", base)

        torch_golden = load_model(bundle.golden_pt2, "torch_export", intra_op_threads=1)
        torch_base = best_of(lambda: clean_times(torch_golden, len(SEVERITIES)), repeats)
        report("clean compare_models, torch golden, x 3", torch_base, "torch baseline", torch_base)
        for name in ("fgsm", "pgd"):
            seconds = best_of(lambda name=name: robustness(torch_golden, (name,)), repeats)  # type: ignore[misc]
            report(f"evaluate_robustness ({name}, torch golden)", seconds, "torch baseline", torch_base)
        _lite0(Path(tmp), slices=array_slices)


def _lite0(folder: Path, slices: tuple[str, ...], n_samples: int = 64, batch_size: int = 16) -> None:
    """The same comparison on a real-size model: EfficientNet-Lite0 fp32 vs its int8 QDQ copy at 224 px (the
    pretrained weights the tests use, their 16 sample photos tiled), where a forward pass costs milliseconds
    and the corruptions (JPEG above all) weigh less than on 8x8 digits. Timed once (about a minute)."""
    import time

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from tests.support.sample_images import sample_images
    from worker.demo.models import export_onnx, quantize_onnx_int8
    from worker.engine.fidelity.compare import FidelityParams, compare_models
    from worker.engine.loaders import load_model
    from worker.engine.robustness import SEVERITIES, RobustnessParams, evaluate_robustness
    from worker.jobs.robustness_images import WorstPictures

    images = sample_images().images
    golden_path = export_onnx(efficientnet_lite0(), images[:2], folder / "lite0.onnx")
    int8_path = quantize_onnx_int8(golden_path, folder / "lite0_int8.onnx", images, reduce_range=True)
    golden, compressed = (load_model(p, "onnx", intra_op_threads=1) for p in (golden_path, int8_path))
    x = np.tile(images, (-(-n_samples // len(images)), 1, 1, 1))[:n_samples]
    params = FidelityParams(batch_size=batch_size)
    points = len(slices) * len(SEVERITIES)
    start = time.perf_counter()
    clean = compare_models(golden, compressed, {"input": x}, None, params)
    one = time.perf_counter() - start
    base = one * points
    start = time.perf_counter()
    evaluate_robustness(
        golden, compressed, {"input": x}, None, params, clean.per_sample, "classification",
        RobustnessParams(slices=slices), worst_inputs=WorstPictures({"input": x}).keep,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    print(f"robustness: EfficientNet-Lite0 fp32 vs int8 QDQ, 224 px, {n_samples} photos, batch {batch_size}")
    report(f"clean compare_models ({one * 1000:.0f} ms) x {points}", base, "baseline", base)
    report("evaluate_robustness with pictures (as the job)", seconds, "baseline", base)


if __name__ == "__main__":
    main()
