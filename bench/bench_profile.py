"""What the per-layer profile costs: EfficientNet-Lite0 fp32 vs its int8 QDQ version at 224 px.

Every measurement runs in a fresh child process (like a worker pool process: runtimes imported, the dataset
memory-mapped from a .npy) and reports its wall time and its peak RSS (VmHWM). Baseline: the bare
forward passes of both models (onnxruntime sessions, default optimizations) over the same samples in
batches of 64, the fidelity job's default. Measured in the same run:

- the output metrics (compare_models) without the profile: goal <= 1.05x the bare passes;
- the profile with default parameters (memory budget DEFAULT_MEMORY_BUDGET_MB): goal peak RSS <= 1.5 GB
  and time <= 1.5x the bare passes (must: <= 3x);
- growth: the profile's time per sample at 64 and 256 samples (and 1024 with --full): flat;
- a 500-layer residual conv stack (16 px), int8 QDQ, profiled over 32 samples: time and peak RSS.

All runtimes on 1 thread. `--quick` (or KNEEBOARD_BENCH_QUICK=1) for small sizes while developing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import onnxruntime_run_time, peak_rss_mib, report

FIDELITY_BATCH = 64
DEEP_BLOCKS = 167  # 3 profiled layers per block (the quantizer fuses Conv+Relu): 501 layers
DEEP_SIZE = 16


def _lite0(folder: Path) -> tuple[Path, Path, np.ndarray]:
    """EfficientNet-Lite0 fp32 and int8 QDQ ONNX (as tests/engine/test_pretrained_fidelity.py builds them)
    and its 16 sample images."""
    from tests.support.pretrained_lite0 import efficientnet_lite0
    from tests.support.sample_images import sample_images
    from worker.demo.models import export_onnx, quantize_onnx_int8

    images = sample_images().images
    golden = export_onnx(efficientnet_lite0(), images[:2], folder / "lite0.onnx")
    int8 = quantize_onnx_int8(golden, folder / "lite0_int8.onnx", images, reduce_range=True)
    return golden, int8, images


def _deep(folder: Path) -> tuple[Path, Path, np.ndarray]:
    """A stack of DEEP_BLOCKS residual conv blocks (8 channels), fp32 and int8 QDQ, with 32 inputs."""
    import torch
    from torch import nn

    from worker.demo.models import export_onnx, quantize_onnx_int8

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x + self.b(torch.relu(self.a(x))))

    torch.manual_seed(0)
    model = nn.Sequential(*(Block() for _ in range(DEEP_BLOCKS))).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.3)  # keeps the activations of 200 convolutions in range
    x = np.random.default_rng(0).normal(size=(32, 8, DEEP_SIZE, DEEP_SIZE)).astype(np.float32)
    golden = export_onnx(model, x[:2], folder / "deep.onnx")
    return golden, quantize_onnx_int8(golden, folder / "deep_int8.onnx", x[:16]), x


def child(kind: str, golden: str, compressed: str, data: str, n: int) -> None:
    """In a fresh process: run one measurement and print {"seconds", "peak_mb", "layers", "runtime"} as JSON
    (runtime: seconds inside onnxruntime's runs, measured for the profile)."""
    import time

    import onnxruntime  # noqa: F401  # a pool process imports both runtimes when it starts
    import torch  # noqa: F401

    from worker.engine.fidelity.compare import FidelityParams, compare_models
    from worker.engine.layer_profile import profile_layers
    from worker.engine.loaders import load_model

    x = np.load(data, mmap_mode="r")[:n]
    layers = 0
    runtime = [0.0]
    start = time.perf_counter()
    if kind == "profile":
        feeds = ({"input": x[i : i + FIDELITY_BATCH]} for i in range(0, n, FIDELITY_BATCH))
        with onnxruntime_run_time() as runtime:
            profile = profile_layers(
                Path(golden), "onnx", Path(compressed), "onnx", feeds, intra_op_threads=1
            )
        layers = len(profile.layers)
    else:
        runners = [load_model(Path(p), "onnx", intra_op_threads=1) for p in (golden, compressed)]
        if kind == "bare":
            for i in range(0, n, FIDELITY_BATCH):
                for runner in runners:
                    runner.run({"input": np.asarray(x[i : i + FIDELITY_BATCH])})
        else:
            compare_models(
                runners[0], runners[1], {"input": x}, None, FidelityParams(batch_size=FIDELITY_BATCH)
            )
    seconds = time.perf_counter() - start
    peak_mb = peak_rss_mib()
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "layers": layers, "runtime": runtime[0]}))


def _measure(kind: str, golden: Path, compressed: Path, data: Path, n: int) -> dict[str, Any]:
    code = f"from bench.bench_profile import child; child({kind!r}, {str(golden)!r}, {str(compressed)!r}, {str(data)!r}, {n})"
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _line(name: str, m: dict[str, Any], base: dict[str, Any] | None = None, n: int = 0) -> None:
    if base is None:
        report(name, m["seconds"], "baseline", m["seconds"])
    else:
        report(name, m["seconds"], "bare passes", base["seconds"])
    per_sample = f"   {m['seconds'] / n * 1000:7.1f} ms/sample" if n else ""
    print(f"{'':<46} peak RSS {m['peak_mb']:7.0f} MB{per_sample}")


def main(quick: bool = False, full: bool = False) -> None:
    quick = quick or os.environ.get("KNEEBOARD_BENCH_QUICK") == "1"
    sizes = [8, 16] if quick else [64, 256, 1024] if full else [64, 256]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        golden, int8, images = _lite0(folder)
        data = folder / "images.npy"
        np.save(data, np.tile(images, (-(-max(sizes) // len(images)), 1, 1, 1))[: max(sizes)])
        n = sizes[-1]
        print(
            f"profile: EfficientNet-Lite0 fp32 vs int8 QDQ, 224 px, {n} samples, 1 thread, fresh process each"
        )
        bare = _measure("bare", golden, int8, data, n)
        _line("bare forward passes (both models)", bare, n=n)
        _line("output metrics (compare_models)", _measure("metrics", golden, int8, data, n), bare, n)
        profiled = _measure("profile", golden, int8, data, n)
        _line(f"layer profile ({profiled['layers']} layers)", profiled, bare, n)
        # the floor under the profile as it is made (captures with graph optimisation off, local sub-graphs):
        # its onnxruntime runs alone, with every sum and counter free
        report("  of which onnxruntime runs", profiled["runtime"], "bare passes", bare["seconds"])
        per_sample = profiled["seconds"] / n
        for size in sizes[:-1]:  # growth: time per sample against the one at n samples, should be flat
            m = _measure("profile", golden, int8, data, size)
            report(f"layer profile per sample, {size} samples", m["seconds"] / size, f"at {n}", per_sample)
            print(f"{'':<46} peak RSS {m['peak_mb']:7.0f} MB")
        deep_golden, deep_int8, x = _deep(folder)
        deep_data = folder / "deep.npy"
        np.save(deep_data, x)
        deep = _measure("profile", deep_golden, deep_int8, deep_data, len(x))
        print(
            f"profile: {deep['layers']}-layer residual conv stack, int8 QDQ, {DEEP_SIZE} px, {len(x)} samples"
        )
        _line("layer profile", deep, n=len(x))


if __name__ == "__main__":
    main(quick="--quick" in sys.argv, full="--full" in sys.argv)
