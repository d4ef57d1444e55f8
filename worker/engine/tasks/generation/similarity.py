"""Semantic similarity of generated text (issue 31): an embedding model the user picks from the project's
models (e.g. an uploaded sentence-embedding MiniLM, zipped with its tokenizer.json) embeds both models'
generations, and the cosine of the two embeddings says whether the compressed text still means what the
golden one did, where BLEU and ROUGE count only shared words.

An embedding is sentence-transformers' mean pooling: the token embeddings of the model's first float output
shaped (batch, sequence, hidden) (`last_hidden_state` of a BERT export), averaged over the tokens the
attention mask keeps. Cosine needs no normalisation first (it is scale-free). Texts are tokenized with the
embedding model's own tokenizer.json, padding and truncation as this module does them (its shipped settings
switched off): cut at `max_tokens` on the right, as sentence-transformers cuts at its max_seq_length (256 for
all-MiniLM-L6-v2), then padded to the batch's longest (the model's fixed length, when it has one).
A text of 0 tokens (an empty generation, with a tokenizer that adds no special tokens) has no embedding: its
cosines are NaN, left out of the means and counted in `semantic_n_empty`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.errors import OutputMismatchError
from worker.engine.types import Runner

if TYPE_CHECKING:
    from tokenizers import Tokenizer

INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS = "input_ids", "attention_mask", "token_type_ids"
MAX_TOKENS = 256
"""sentence-transformers' max_seq_length of all-MiniLM-L6-v2, the model this was built around."""


def _fixed(dim: object) -> int | None:
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None


@dataclass
class Embedder:
    """A model and its tokenizer that turn texts into mean-pooled embeddings (`embed`)."""

    runner: Runner
    tokenizer: Tokenizer
    output: str
    name: str
    batch_size: int = 16
    max_tokens: int = MAX_TOKENS

    def _feeds(self, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        rows = [list(e.ids) for e in self.tokenizer.encode_batch(list(texts))]
        spec = next(s for s in self.runner.inputs if s.name == INPUT_IDS)
        width = _fixed(spec.shape[1]) if len(spec.shape) == 2 else None
        width = width or max(1, max(len(r) for r in rows))
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, row in enumerate(rows):
            ids[i, : len(row)], mask[i, : len(row)] = row[:width], 1
        names = {s.name for s in self.runner.inputs}
        feeds = {INPUT_IDS: ids}
        if ATTENTION_MASK in names:
            feeds[ATTENTION_MASK] = mask
        if TOKEN_TYPE_IDS in names:
            feeds[TOKEN_TYPE_IDS] = np.zeros_like(ids)
        return feeds, mask

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), hidden) float64 mean-pooled embeddings; a row of NaN for a text of 0 tokens."""
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            feeds, kept = self._feeds(texts[start : start + self.batch_size])
            mask = kept.astype(np.float64)
            hidden = np.asarray(self.runner.run(feeds)[self.output], dtype=np.float64)
            if hidden.ndim != 3 or hidden.shape[:2] != mask.shape:
                raise OutputMismatchError(
                    f"the embedding model {self.name!r}'s output {self.output!r} is {hidden.shape} for inputs "
                    f"{mask.shape}; mean pooling needs token embeddings (batch, sequence, hidden)"
                )
            counts = mask.sum(axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                parts.append((hidden * mask[:, :, None]).sum(axis=1) / counts)
        return np.concatenate(parts) if parts else np.zeros((0, 0))


def embedder(runner: Runner, tokenizer: Tokenizer, name: str, batch_size: int = 16) -> Embedder:
    """An Embedder of `runner`, or OutputMismatchError saying why it cannot embed text: it must take
    `input_ids` (and only `attention_mask` / `token_type_ids` besides) and give a float output shaped
    (batch, sequence, hidden)."""
    from tokenizers import Tokenizer

    names = [s.name for s in runner.inputs]
    if INPUT_IDS not in names:
        raise OutputMismatchError(
            f"the embedding model {name!r} takes {', '.join(names)}; it needs an input 'input_ids' for the text"
        )
    other = [n for n in names if n not in (INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS)]
    if other:
        raise OutputMismatchError(
            f"the embedding model {name!r} needs input(s) {', '.join(map(repr, other))}, which text does not give "
            "(it feeds input_ids, attention_mask and token_type_ids)"
        )
    output = next((s.name for s in runner.outputs if len(s.shape) == 3 and "int" not in s.dtype), None)
    if output is None:
        listed = ", ".join(f"{s.name} {list(s.shape)}" for s in runner.outputs)
        raise OutputMismatchError(
            f"the embedding model {name!r} has no output of token embeddings (batch, sequence, hidden) to "
            f"mean-pool (its outputs: {listed})"
        )
    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.no_padding()
    copy.enable_truncation(MAX_TOKENS)
    return Embedder(runner, copy, output, name, batch_size)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine in float64; NaN where a row has no embedding or a zero norm."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(
            (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)), dtype=np.float64
        )


def _mean(values: np.ndarray) -> float | None:
    kept = values[np.isfinite(values)]
    return float(kept.mean()) if kept.size else None


def semantic_similarity(
    model: Embedder, golden: Sequence[str], compressed: Sequence[str], references: Sequence[str] | None
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The block's semantic numbers and the per-sample cosines: compressed vs golden generation and, with
    references, each generation vs its reference (and the drop, golden minus compressed)."""
    g, c = model.embed(golden), model.embed(compressed)
    vs_golden = cosines(c, g)
    per_sample = {"semantic_similarity": vs_golden}
    block: dict[str, Any] = {
        "similarity_model": model.name,
        "semantic_similarity": _mean(vs_golden),
        "semantic_similarity_min": float(np.nanmin(vs_golden)) if np.isfinite(vs_golden).any() else None,
        "semantic_n_empty": int((~np.isfinite(vs_golden)).sum()),
        "semantic_golden_vs_reference": None,
        "semantic_compressed_vs_reference": None,
        "semantic_drop": None,
    }
    if references is not None:
        r = model.embed(references)
        golden_ref, compressed_ref = cosines(g, r), cosines(c, r)
        per_sample |= {"semantic_golden": golden_ref, "semantic_compressed": compressed_ref}
        g_mean, c_mean = _mean(golden_ref), _mean(compressed_ref)
        block |= {
            "semantic_golden_vs_reference": g_mean,
            "semantic_compressed_vs_reference": c_mean,
            "semantic_drop": None if g_mean is None or c_mean is None else g_mean - c_mean,
        }
    return block, per_sample
