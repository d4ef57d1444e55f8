"""The full-recompute loop: every step runs the whole sequence so far and reads the logits at each row's last
token. It drives any causal LM runner (ONNX without a cache, torch programs, TorchScript).

Rows of a batch are padded on the right: in a causal model a position sees only the tokens before it, so the
padding after a row's last token cannot change that token's logits whatever the model does with the mask
(it is fed all the same, zero on the padding). A model whose `input_ids` has a fixed length L is always fed L
tokens, which is its whole context: prompt + new tokens must fit in it. A model with a cache input is fed an
empty past."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.tasks.generation.choose import choose, uniforms
from worker.engine.tasks.generation.config import GenerationConfig
from worker.engine.tasks.generation.layout import DecoderLayout
from worker.engine.types import Runner


def empty_past(layout: DecoderLayout, batch: int) -> dict[str, np.ndarray]:
    feeds: dict[str, np.ndarray] = {}
    for slot in layout.cache:
        shape = slot.empty_shape(batch)
        if shape is None:
            raise OutputMismatchError(
                f"the cache input {slot.past!r} is declared {list(slot.shape)}: its sizes other than batch and "
                "sequence must be fixed numbers to start an empty cache"
            )
        feeds[slot.past] = np.zeros(shape, dtype=np.dtype(slot.dtype))
    return feeds


def check_context(layout: DecoderLayout, prompts: Sequence[np.ndarray], new_tokens: int) -> None:
    if layout.fixed_length is None:
        return
    longest = max(len(p) for p in prompts)
    if longest + new_tokens > layout.fixed_length:
        raise DatasetMismatchError(
            f"the model's input_ids holds {layout.fixed_length} tokens (its context); the longest prompt "
            f"({longest} tokens) + {new_tokens} new tokens does not fit"
        )


def logits_at_last(
    out: dict[str, np.ndarray], layout: DecoderLayout, lengths: np.ndarray, width: int
) -> np.ndarray:
    logits = out[layout.logits]
    if logits.ndim != 3 or logits.shape[1] != width:
        raise OutputMismatchError(
            f"output {layout.logits!r} is {list(logits.shape)} for input_ids of {width} tokens; generation "
            "needs logits for every position (batch, sequence, V)"
        )
    return logits[np.arange(len(lengths)), lengths - 1]


def plain_generate(
    runner: Runner,
    layout: DecoderLayout,
    prompts: Sequence[np.ndarray],
    indices: Sequence[int],
    config: GenerationConfig,
) -> tuple[np.ndarray, int]:
    """(len(prompts), new_tokens) generated ids and the number of model calls."""
    check_context(layout, prompts, config.new_tokens)
    out_rows = np.zeros((len(prompts), config.new_tokens), dtype=np.int64)
    calls = 0
    for start in range(0, len(prompts), config.batch_size):
        batch = [np.asarray(p, dtype=np.int64) for p in prompts[start : start + config.batch_size]]
        rows = len(batch)
        draws = (
            uniforms(config.seed, indices[start : start + rows], config.new_tokens)
            if config.sampling == "seeded"
            else None
        )
        lengths = np.array([len(p) for p in batch])
        width_max = layout.fixed_length or int(lengths.max()) + config.new_tokens
        ids = np.zeros((rows, width_max), dtype=np.int64)
        for r, p in enumerate(batch):
            ids[r, : len(p)] = p
        done = np.zeros(rows, dtype=bool)
        for step in range(config.new_tokens):
            width = layout.fixed_length or int(lengths.max())
            feeds: dict[str, np.ndarray] = {layout.input_ids: ids[:, :width]}
            if layout.attention_mask is not None:
                feeds[layout.attention_mask] = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
            if layout.position_ids is not None:
                feeds[layout.position_ids] = np.broadcast_to(np.arange(width), (rows, width)).copy()
            if layout.use_cache_branch is not None:
                feeds[layout.use_cache_branch] = np.array([False])
            feeds.update(empty_past(layout, rows))
            last = logits_at_last(runner.run(feeds), layout, lengths, width)
            calls += 1
            tokens = choose(last, config.sampling, None if draws is None else draws[:, step])
            out_rows[start : start + rows, step] = tokens
            ids[np.arange(rows), lengths] = tokens
            lengths = lengths + 1
            if config.eos_token_id is not None:
                done |= tokens == config.eos_token_id
                if done.all():
                    out_rows[start : start + rows, step + 1 :] = config.eos_token_id
                    break
    return out_rows, calls
