"""The KV-cache loop: one pass over the prompt (prefill), then one token per call, feeding each call's
`present.*` outputs back as the next call's `past_key_values.*` inputs (the Hugging Face exporters' decoder
layout, `worker.engine.tasks.generation.layout`). It drives the model through the `Runner` protocol, so it knows
no runtime; in practice the models with such inputs are ONNX exports.

Batching: with both `attention_mask` and `position_ids` inputs, prompts of different lengths share a batch,
padded on the left (the mask hides the padding; positions count kept tokens only, as transformers' `generate`
makes them). Without them the model could not tell padding from text, so a batch holds prompts of one length.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from worker.engine.tasks.generation.choose import choose, uniforms
from worker.engine.tasks.generation.config import GenerationConfig
from worker.engine.tasks.generation.layout import DecoderLayout
from worker.engine.tasks.generation.plain import empty_past
from worker.engine.types import Runner


def batches(layout: DecoderLayout, prompts: Sequence[np.ndarray], size: int) -> list[list[int]]:
    """Prompt indices run together: in order when the model can take left padding, else by equal length."""
    if layout.attention_mask is not None and layout.position_ids is not None:
        order = list(range(len(prompts)))
        return [order[i : i + size] for i in range(0, len(order), size)]
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, prompt in enumerate(prompts):
        by_length[len(prompt)].append(i)
    return [group[i : i + size] for group in by_length.values() for i in range(0, len(group), size)]


def cached_generate(
    runner: Runner,
    layout: DecoderLayout,
    prompts: Sequence[np.ndarray],
    indices: Sequence[int],
    config: GenerationConfig,
) -> tuple[np.ndarray, int]:
    """(len(prompts), new_tokens) generated ids and the number of model calls."""
    out_rows = np.zeros((len(prompts), config.new_tokens), dtype=np.int64)
    calls = 0
    for members in batches(layout, prompts, config.batch_size):
        rows = len(members)
        draws = (
            uniforms(config.seed, [indices[m] for m in members], config.new_tokens)
            if config.sampling == "seeded"
            else None
        )
        width = max(len(prompts[m]) for m in members)
        ids = np.zeros((rows, width), dtype=np.int64)
        mask = np.zeros((rows, width), dtype=np.int64)
        for r, m in enumerate(members):
            ids[r, width - len(prompts[m]) :] = prompts[m]
            mask[r, width - len(prompts[m]) :] = 1
        positions = np.where(mask != 0, np.cumsum(mask, axis=1) - 1, 1)
        past = empty_past(layout, rows)
        done = np.zeros(rows, dtype=bool)
        for step in range(config.new_tokens):
            feeds: dict[str, np.ndarray] = {layout.input_ids: ids, **past}
            if layout.attention_mask is not None:
                feeds[layout.attention_mask] = mask
            if layout.position_ids is not None:
                feeds[layout.position_ids] = positions
            if layout.use_cache_branch is not None:
                feeds[layout.use_cache_branch] = np.array([step > 0])
            out = runner.run(feeds)
            calls += 1
            tokens = choose(
                out[layout.logits][:, -1], config.sampling, None if draws is None else draws[:, step]
            )
            out_rows[members, step] = tokens
            if config.eos_token_id is not None:
                done |= tokens == config.eos_token_id
                if done.all():
                    out_rows[members, step + 1 :] = config.eos_token_id
                    break
            past = {slot.past: out[slot.present] for slot in layout.cache}
            ids = tokens[:, None]
            mask = np.concatenate([mask, np.ones((rows, 1), dtype=np.int64)], axis=1)
            positions = positions[:, -1:] + 1
    return out_rows, calls
