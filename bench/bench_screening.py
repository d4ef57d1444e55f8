"""Screening vs the exact sensitivity scan: `.venv/bin/python -m bench.bench_screening [--quick]`.

Per model, the same run times the exact "only" scan of every layer (the product path, prefix reuse) and a
screened scan (`screen_layers`: every layer estimated from one probe pass per config, exact cells for the
top K layers and a seeded control sample), and prints Spearman's rank correlation (scipy) between the
screened estimate and the exact scan, over every cell per config and over the overall layer ranking, and
the speed-up (exact seconds / screening seconds). Goals (issue 31): Spearman >= 0.8 and a speed-up >= 10x at
100+ layers.

Models: a 501-Linear residual MLP whose layers differ in sensitivity (`tests.support.varied_mlp`), the
bench_sensitivity 500-layer residual MLP (uniform initialisation: every layer about equally sensitive), and
all-MiniLM-L6-v2 (36 Linear layers, real pretrained weights, 32 sentences of 32 random tokens).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

CONFIGS = [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}]
THREADS = 1
TOP_K, CONTROL = 10, 10


def _compare(
    name: str, path: Path, feeds: dict[str, np.ndarray], top_k: int = TOP_K, control: int = CONTROL
) -> None:
    from scipy.stats import spearmanr

    from worker.engine.compression import open_compressible
    from worker.engine.sensitivity.scan import layer_sensitivity
    from worker.engine.sensitivity.screening import screen_layers

    def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out

    exact_s, exact = timed(
        lambda: layer_sensitivity(open_compressible(path, "onnx", intra_op_threads=THREADS), feeds, CONFIGS)
    )
    screen_s, screened = timed(
        lambda: screen_layers(
            open_compressible(path, "onnx", intra_op_threads=THREADS),
            feeds,
            CONFIGS,
            top_k=top_k,
            control=control,
        )
    )
    names = exact.layer_names
    metric = exact.ranking_metric
    print(f"{name}: {len(names)} layers x {len(CONFIGS)} configs, {THREADS} thread, metric {metric}")
    for config in exact.config_ids:
        truth = [exact.cell(n, config).score(metric) for n in names]
        estimate = [-(screened.cell(n, config).estimate or 300.0) for n in names]
        rho = spearmanr(truth, estimate).statistic
        print(f"  {config}: Spearman(estimate, exact) over all {len(names)} layers {rho:.3f}")
    er, sr = exact.ranking(), screened.ranking()
    overall = spearmanr([er.index(n) for n in names], [sr.index(n) for n in names]).statistic
    summary = screened.screening or {}
    top = set(summary.get("top_layers", []))
    print(
        f"  overall ranking (screened: exact + estimated cells) vs exact scan: Spearman {overall:.3f} "
        f"(goal >= 0.8: {'met' if overall >= 0.8 else 'NOT met'}); exact top 10 in screening's top {top_k}: "
        f"{len(top & set(er[:10]))}"
    )
    speedup = exact_s / screen_s
    print(
        f"  exact scan {exact_s:.2f} s, screening {screen_s:.2f} s ({summary.get('exact_cells')} of "
        f"{summary.get('total_cells')} cells exact): {speedup:.1f}x"
        + (
            f" (goal >= 10x at 100+ layers: {'met' if speedup >= 10 else 'NOT met'})"
            if len(names) >= 100
            else ""
        )
    )


def _uniform_mlp(folder: Path, layers: int, samples: int) -> tuple[Path, np.ndarray]:
    from bench.bench_sensitivity import _deep_mlp

    return _deep_mlp(folder, samples, layers)


def _minilm(folder: Path) -> tuple[Path, dict[str, np.ndarray]]:
    from tests.support.pretrained_minilm import minilm_fp32_onnx

    path = minilm_fp32_onnx(folder)
    rng = np.random.default_rng(0)
    n, length = 32, 32
    return path, {
        "input_ids": rng.integers(1000, 30000, size=(n, length)).astype(np.int64),
        "attention_mask": np.ones((n, length), dtype=np.int64),
        "token_type_ids": np.zeros((n, length), dtype=np.int64),
    }


def main(argv: list[str] | None = None) -> None:
    from tests.support.varied_mlp import varied_mlp_onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="121-layer MLPs only (development)")
    args = parser.parse_args(argv)
    blocks = 60 if args.quick else 250
    with tempfile.TemporaryDirectory(prefix="bench-screening-") as root:
        folder = Path(root)
        path, x = varied_mlp_onnx(folder, blocks=blocks)
        _compare(f"residual MLP, varied branch scales ({2 * blocks + 1} Linear)", path, {"input": x})
        path, x = _uniform_mlp(folder, 2 * blocks + 1, 64)
        _compare(f"residual MLP, uniform init ({2 * blocks + 1} Linear)", path, {"input": x})
        if not args.quick:
            path, feeds = _minilm(folder)
            _compare("all-MiniLM-L6-v2 (36 Linear)", path, feeds, top_k=5, control=5)


if __name__ == "__main__":
    main()
