"""Channel pruning that shrinks the exported file (issue 33): the physically pruned export against the
dense file, on real-size models at 224 px, engine only (the sweep's own path: `evaluate_point` with an
export folder, then `compare_latency` timing both files interleaved in this run).

1. ResNet-18 shape (basic blocks 64-128-256-512, 1000 classes; random weights: timing and size do not
   depend on them), ChannelPrune(0.5) on the first conv of every basic block (its channels are internal:
   no residual group), and ChannelPrune(0.5) on every layer (the residual stream's channels are removed
   only where every member of a group zeroes them: per-layer norms choose different channels).
2. EfficientNet-Lite0 (pretrained, ONNX) with ChannelPrune(0.5) on every layer.

Each line: parameters, file size and MACs of the pruned export / the dense one (counted on the files),
p50 latency ratio at batch 1 and 8 (ratio < 1: faster), layers pruned / left dense, and the largest
difference between the pruned file's outputs and the zeroed dense graph's (the masked simulation).

    .venv/bin/python -m bench.bench_pruning [--quick]
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


def _resnet18() -> Any:
    import torch
    from torch import nn

    from tests.support.residual import BasicBlock as Block  # the shape the scan benchmark uses too

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
            )
            widths = (64, 128, 256, 512)
            blocks: list[nn.Module] = []
            cin = 64
            for stage, width in enumerate(widths):
                for i in range(2):
                    blocks.append(Block(cin, width, 2 if stage and not i else 1))
                    cin = width
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.blocks(self.stem(x)).mean((2, 3)))

    torch.manual_seed(0)
    return ResNet18().eval()


def _export(model: Any, path: Path) -> Path:
    import torch

    from worker.demo.models import export_onnx

    with torch.inference_mode():
        return export_onnx(model, photo_crops(2, SIZE, seed=0), path)


def _masked_difference(handle: Any, plan: dict[str, Any], pruned: Path, crops: np.ndarray) -> float:
    """Largest |pruned file − zeroed dense graph| over the crops' outputs."""
    import onnxruntime as ort

    from worker.engine.sweep.export_onnx import onnx_builder

    dense = onnx_builder(handle, None)(plan)
    run = {
        name: ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": crops})[0]
        for name, model in (("dense", dense.SerializeToString()), ("pruned", str(pruned)))
    }
    return float(np.max(np.abs(run["dense"] - run["pruned"])))


def _line(name: str, handle: Any, golden_file: Path, plan: dict[str, Any], folder: Path, quick: bool) -> None:
    from worker.engine.sweep import compare_latency, evaluate_point

    crops = photo_crops(4 if quick else 8, SIZE, seed=1)
    started = time.perf_counter()
    point = evaluate_point(
        handle, {"input": crops}, None, plan, batch_size=8, export_dir=folder, layers=False
    )
    spent = time.perf_counter() - started
    (manifest,) = point.exports
    structured = manifest["structured_pruning"]
    pruned = folder / manifest["file"]
    timing = compare_latency(
        {"dense": golden_file, "pruned": pruned},
        baseline="dense",
        batch_sizes=(1, 8),
        warmup=3 if quick else 5,
        repeats=5 if quick else 20,
        threads=2,
        sample={"input": crops},
    )
    ratios = {r["batch_size"]: r["p50_ratio"] for r in timing["relative"]["pruned"]}
    p50 = {b["batch_size"]: b["p50_ms"] for b in timing["models"]["pruned"]["batches"]}
    dense_p50 = {b["batch_size"]: b["p50_ms"] for b in timing["models"]["dense"]["batches"]}
    size_ratio = pruned.stat().st_size / golden_file.stat().st_size
    reasons: dict[str, int] = {}
    for entry in structured["left_dense"]:
        key = entry["reason"].split(":")[0][:70]
        reasons[key] = reasons.get(key, 0) + 1
    print(f"{name}")
    print(
        f"  params {structured['params'] / structured['params_dense']:.3f}x, file {size_ratio:.3f}x "
        f"({pruned.stat().st_size / 1e6:.1f} / {golden_file.stat().st_size / 1e6:.1f} MB), "
        f"MACs {structured['macs'] / structured['macs_dense']:.3f}x; "
        f"{len(structured['pruned'])} layers pruned, {len(structured['left_dense'])} left dense"
    )
    print(
        f"  p50 latency b1 {p50[1]:.1f} ms vs {dense_p50[1]:.1f} ms ({ratios[1]:.2f}x), "
        f"b8 {p50[8]:.1f} ms vs {dense_p50[8]:.1f} ms ({ratios[8]:.2f}x); "
        f"max |pruned - zeroed dense| {_masked_difference(handle, point.spec.plan, pruned, crops):.2e}; "
        f"point evaluated + exported in {spent:.1f} s"
    )
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]:
        print(f"  left dense ({count}): {reason}")


def main(quick: bool = False) -> None:
    from tests.support.pretrained_lite0 import efficientnet_lite0
    from worker.engine.compression import ChannelPrune, open_compressible
    from worker.engine.compression.model import first_sample

    sample = {"input": photo_crops(1, SIZE, seed=1)}
    print("pruning: physically pruned ONNX export vs the dense file (2 threads, p50 ratios in this run)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        resnet = _export(_resnet18(), folder / "resnet18.onnx")
        handle = open_compressible(resnet, "onnx", intra_op_threads=2)
        handle.prepare(first_sample(sample))
        layers = [layer.name for layer in handle.layers()]
        internal = {name: ChannelPrune(0.5) for name in layers if name.endswith(("conv1", "bn1"))}
        _line(
            f"ResNet-18 shape, 50% of internal channels ({len(internal)} layers)",
            handle,
            resnet,
            internal,
            folder,
            quick,
        )
        uniform = {name: ChannelPrune(0.5) for name in layers}
        _line("ResNet-18 shape, 50% of every layer's channels", handle, resnet, uniform, folder, quick)
        lite0 = _export(efficientnet_lite0(), folder / "efficientnet_lite0.onnx")
        handle = open_compressible(lite0, "onnx", intra_op_threads=2)
        handle.prepare(first_sample(sample))
        every = {layer.name: ChannelPrune(0.5) for layer in handle.layers()}
        _line("EfficientNet-Lite0, 50% of every layer's channels", handle, lite0, every, folder, quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
