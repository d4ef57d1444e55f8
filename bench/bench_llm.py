"""A language model at real size on this machine (issue 31, "Real size"): a LLaMA-style decoder of 0.56 B
parameters (tests/support/llama_decoder.py: RMSNorm, rotary positions, SwiGLU, 24 layers of width 1280,
vocabulary 32 000; random weights), exported to ONNX with a KV cache — 2.23 GB of float32, so the file keeps its
weights as external data — and its group-wise int4 version made by the sweep's real-matmulnbits export
(onnxruntime's MatMulNBitsQuantizer, blocks of 128, asymmetric; the embedding table stays float).

Then, in a fresh interpreter (bench/llm_fidelity_child.py), what a fidelity job of task "language_model" runs:
teacher-forced next-token fidelity over 64 prompts × 128 tokens (KL per position over the whole vocabulary,
perplexity of both) and 32 greedy tokens generated per prompt by both models with their KV caches. Printed:
the child's peak RSS against 2.5 × the fp32 weights (the goal), the file sizes, the time of each step, and the
time per generated token of both models (the int4 model on onnxruntime's 4-bit kernels).

    .venv/bin/python -m bench.bench_llm [--quick]      (--quick: a 4-layer model of width 512, 8 prompts)
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RSS_GOAL = 2.5
"""Peak RSS of the fidelity run at most this many times the fp32 weights (issue 31)."""


def _export(folder: Path, quick: bool) -> tuple[Path, Path, int]:
    """The fp32 file, the int4 file, and the fp32 weights' bytes."""
    import onnx
    import torch

    from tests.support.llama_decoder import LLAMA_HALF_B, LlamaConfig, LlamaDecoder, export_with_cache
    from worker.engine.compression.configs import WeightQuant
    from worker.engine.sweep.export_common import file_bytes
    from worker.engine.sweep.export_nbits import matmul_nbits

    config = LlamaConfig(32000, 512, 4, 8, 1376) if quick else LLAMA_HALF_B
    torch.set_num_threads(2)
    started = time.perf_counter()
    model = LlamaDecoder(config).eval()
    weights = 4 * config.parameters
    print(
        f"LLaMA-style decoder: {config.parameters / 1e9:.3f} B parameters ({config.layers} layers, width "
        f"{config.width}, {config.heads} heads, ffn {config.ffn}, vocabulary {config.vocabulary}), "
        f"{weights / 2**30:.2f} GiB fp32, built in {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    golden = export_with_cache(model, folder / "decoder.onnx")
    del model
    gc.collect()
    sidecars = sorted(p.name for p in folder.iterdir() if p.name != golden.name)
    print(
        f"exported with a KV cache in {time.perf_counter() - started:.1f} s: "
        f"{sum(p.stat().st_size for p in folder.iterdir()) / 2**30:.2f} GiB on disk "
        f"({len(sidecars)} external-data file(s) beside the graph)"
    )
    started = time.perf_counter()
    base = onnx.load(str(golden))
    notes: list[str] = []
    int4 = folder / "decoder.int4.onnx"
    made = matmul_nbits(base, int4, WeightQuant(4, symmetric=False, group_size=128), notes)
    del base
    gc.collect()
    print(
        f"int4 (MatMulNBits, blocks of 128, asymmetric) in {time.perf_counter() - started:.1f} s: "
        f"{file_bytes(int4) / 2**30:.2f} GiB on disk, {len(made['weights'])} MatMul layers packed, "
        f"{len(made['left_float'])} left float"
    )
    return golden, int4, weights


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    prompts, length, new, batch, threads = (8, 32, 8, 4, 2) if quick else (64, 128, 32, 8, 2)
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        golden, int4, weights = _export(Path(tmp), quick)
        args = [str(golden), str(int4), *(str(v) for v in (prompts, length, new, batch, threads))]
        started = time.perf_counter()
        child = subprocess.run(
            [sys.executable, "-m", "bench.llm_fidelity_child", *args], capture_output=True, text=True
        )
        if child.returncode != 0:
            raise SystemExit(f"the fidelity run failed:\n{child.stderr[-4000:]}")
        wall = time.perf_counter() - started
    r = json.loads(child.stdout.strip().splitlines()[-1])
    goal = RSS_GOAL * weights / 2**20
    met = "met" if r["peak_rss_mib"] <= goal else "NOT met"
    print(
        f"fidelity run, {prompts} prompts x {length} tokens + {new} generated, batch {batch}, {threads} threads: "
        f"{wall:.0f} s in all (load {r['load_s']:.1f} s, teacher-forced {r['teacher_forced_s']:.1f} s, "
        f"generation {r['generation_s']:.1f} s)"
    )
    print(
        f"  peak RSS {r['peak_rss_mib']:.0f} MiB = {r['peak_rss_mib'] * 2**20 / weights:.2f}x the fp32 weights "
        f"(goal <= {RSS_GOAL}x, {goal:.0f} MiB): {met}; after loading both models {r['after_load_rss_mib']:.0f} MiB, "
        f"peak by the end of the teacher-forced pass {r['peak_teacher_forced_mib']:.0f} MiB"
    )
    g, c = r["ms_per_token_golden"], r["ms_per_token_compressed"]
    print(
        f"  time per generated token (KV cache {r['kv_cache']}): fp32 {g:.1f} ms, int4 {c:.1f} ms "
        f"({c / g:.2f}x fp32)"
    )
    print(
        f"  next-token KL {r['kl_mean']:.4f} nats, top-1 agreement {r['top1_agreement']:.3f}, perplexity "
        f"{r['ppl_golden']:.1f} -> {r['ppl_compressed']:.1f}; generations identical {r['exact_match']:.2f}, "
        f"BLEU vs golden {r['bleu_vs_golden']:.1f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
