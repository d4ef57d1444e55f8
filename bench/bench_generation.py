"""Generation with and without the KV cache (worker/engine/tasks/generation), per generated token, on a decoder a
few layers deep: tests/engine/tiny_decoder.py's GPT at 6 layers × 256 wide (4 heads; about 5.1 M parameters,
random weights: timing only), exported to ONNX in the Hugging Face layout with the cache. The same file runs the
KV-cache loop (prefill, then one token a call) and the full-recompute loop (`use_cache=False`: the whole
sequence every step, an empty past), and a second export without cache inputs runs the full-recompute loop
too; the three must generate the same tokens. 8 prompts of 128 tokens, 64 new tokens, batch 8, one
onnxruntime thread. `.venv/bin/python -m bench.bench_generation`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bench.common import onnxruntime_run_time, report

LAYERS, WIDTH, HEADS, VOCABULARY = 6, 256, 4, 512
PROMPTS, PROMPT_TOKENS, NEW_TOKENS = 8, 128, 64


def main() -> None:
    import torch

    from tests.engine.tiny_decoder import TinyDecoder, export
    from worker.engine.loaders import load_model
    from worker.engine.tasks.generation import GenerationConfig, generate

    torch.manual_seed(0)
    model = TinyDecoder(VOCABULARY, LAYERS, WIDTH, HEADS, context=PROMPT_TOKENS + NEW_TOKENS).eval()
    parameters = sum(p.numel() for p in model.parameters())
    rng = np.random.default_rng(0)
    prompts = list(rng.integers(0, VOCABULARY, (PROMPTS, PROMPT_TOKENS)))
    with tempfile.TemporaryDirectory() as tmp:
        cached = load_model(export(model, Path(tmp) / "cached.onnx", cache=True), "onnx", intra_op_threads=1)
        plain = load_model(export(model, Path(tmp) / "plain.onnx", cache=False), "onnx", intra_op_threads=1)
        with onnxruntime_run_time() as inside:
            first = generate(cached, prompts, GenerationConfig(NEW_TOKENS, batch_size=PROMPTS))
        runs = {
            "KV cache": first,
            "same file, full recompute": generate(
                cached, prompts, GenerationConfig(NEW_TOKENS, batch_size=PROMPTS, use_cache=False)
            ),
            "no-cache export, full recompute": generate(
                plain, prompts, GenerationConfig(NEW_TOKENS, batch_size=PROMPTS)
            ),
        }
    tokens = [[t.tolist() for t in run.tokens] for run in runs.values()]
    same = all(t == tokens[0] for t in tokens)
    print(
        f"Generation, {LAYERS} layers x {WIDTH} wide ({parameters / 1e6:.1f} M parameters), {PROMPTS} prompts x "
        f"{PROMPT_TOKENS} tokens + {NEW_TOKENS} new, batch {PROMPTS}, 1 thread: same tokens in all three: {same}"
    )
    per_token = {name: run.seconds / (PROMPTS * NEW_TOKENS) for name, run in runs.items()}
    base = per_token["KV cache"]
    for name, seconds in per_token.items():
        report(f"per generated token, {name}", seconds, "KV cache", base)
    # the loop's own cost (feeds, copying the presents back in, choosing tokens) beside onnxruntime's
    report(
        "per generated token, KV cache, in onnxruntime", inside[0] / (PROMPTS * NEW_TOKENS), "KV cache", base
    )


if __name__ == "__main__":
    main()
