"""Text generation by a causal LM for the language-model task (issue 31, "Generated text").

`generate(runner, prompts, config)` produces `config.new_tokens` new tokens per prompt, greedy or with seeded
sampling, using the model's KV cache when it has the Hugging Face exporters' `past_key_values.*` inputs and
`present.*` outputs (`cache_loop`), and the full-recompute loop otherwise (`plain`). Both loops go through the
`Runner` protocol: the engine's ONNX and torch runners (`worker.engine.loaders`) keep the runtime code, this
package holds none.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from worker.engine.tasks.generation.cache_loop import cached_generate
from worker.engine.tasks.generation.choose import SAMPLING_MODES, Sampling
from worker.engine.tasks.generation.config import Generated, GenerationConfig, cut_at_eos
from worker.engine.tasks.generation.layout import DecoderLayout, decoder_layout
from worker.engine.tasks.generation.plain import plain_generate
from worker.engine.tasks.generation.prompts import Padding, read_prompts
from worker.engine.types import Runner

__all__ = [
    "SAMPLING_MODES",
    "DecoderLayout",
    "Generated",
    "GenerationConfig",
    "Padding",
    "Sampling",
    "decoder_layout",
    "generate",
    "read_prompts",
]


def generate(
    runner: Runner,
    prompts: Sequence[np.ndarray],
    config: GenerationConfig,
    *,
    logits: str | None = None,
    sample_indices: Sequence[int] | None = None,
) -> Generated:
    """Generate for every prompt (1-D token ids, no padding). `logits` names the logits output (default
    "logits" or the first rank-3 output); `sample_indices` are the prompts' dataset indices, which pick each
    one's stream of draws under seeded sampling (default 0..n-1), so a prompt draws the same numbers whatever
    batch it runs in."""
    layout = decoder_layout(runner.inputs, runner.outputs, logits)
    indices = list(range(len(prompts))) if sample_indices is None else list(sample_indices)
    notes: list[str] = []
    cached = config.use_cache and layout.has_cache and layout.fixed_length is None
    if cached and not layout.cache_startable():
        cached = False
        notes.append("the model's cache sizes are not declared as fixed numbers: generated without the cache")
    started = time.perf_counter()
    loop = cached_generate if cached else plain_generate
    rows, calls = loop(runner, layout, prompts, indices, config)
    tokens, stopped = cut_at_eos(rows, config.eos_token_id)
    return Generated(tokens, stopped, cached, calls, time.perf_counter() - started, notes)
