"""Random token replacement for token-id inputs (seed 003: noisy text), at a rate per severity.

Which arrays: integer arrays of rank 2 ([N, T]) whose name does not say they are a mask, token types,
segments or positions (`is_token_ids`); the attention mask and the others are never changed.

Which positions are never replaced (decided here, for BERT-style encoders such as MiniLM):
- padding: positions whose attention mask is 0. Replacing them would change nothing the model attends
  to, and a token dropped into padding of a model that ignores the mask would not be "noisy text".
- special tokens: an id found at the first attended position of every sample ([CLS]) or at the last
  attended position of every sample ([SEP]) is special; its positions are kept and it is never drawn.
  (Detected from the data, since the engine has no tokenizer; a dataset whose sequences do not share a
  first or last id has none.)

Replacement ids are drawn uniformly from the distinct ids seen at attended, non-special positions of
the dataset (`TokenStats.pool`), so a replacement is always an id the model's vocabulary has and never a
special one. The rate is the chance that each eligible position is redrawn; a draw equal to the
original id (chance 1 / pool size) leaves it as it was.

Draws follow the slices' block rule (transforms.block_rng): per block of rows, one uniform per position
and one pool index per position; a sample takes its row, so the result depends on its index only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOT_TOKEN_WORDS = ("mask", "type", "segment", "position")


@dataclass(frozen=True)
class TokenStats:
    """pool: sorted ids a replacement is drawn from; special: sorted ids never replaced nor drawn."""

    pool: np.ndarray
    special: np.ndarray


def is_token_ids(name: str, array: np.ndarray) -> bool:
    """Whether the dataset array `name` holds token ids (see the module's rule)."""
    lowered = name.lower()
    return (
        array.ndim == 2
        and np.issubdtype(array.dtype, np.integer)
        and not any(word in lowered for word in NOT_TOKEN_WORDS)
    )


def attended_ends(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first and last positions whose mask is non-zero (0 and T-1 for an empty row)."""
    on = mask != 0
    t = on.shape[1]
    first = np.where(on.any(1), on.argmax(1), 0)
    last = np.where(on.any(1), t - 1 - on[:, ::-1].argmax(1), t - 1)
    return first, last


def token_stats(ids: np.ndarray, mask: np.ndarray | None, chunk: int = 4096) -> TokenStats:
    """The pool of replacement ids and the special ids of a token-id array (streamed over rows; both
    arrays may be memory-mapped)."""
    seen: set[int] = set()
    firsts: set[int] = set()
    lasts: set[int] = set()
    for start in range(0, len(ids), chunk):
        part = np.asarray(ids[start : start + chunk]).astype(np.int64)
        m = np.ones(part.shape, dtype=bool) if mask is None else np.asarray(mask[start : start + chunk]) != 0
        first, last = attended_ends(m)
        rows = np.arange(len(part))
        firsts.update(np.unique(part[rows, first]).tolist())
        lasts.update(np.unique(part[rows, last]).tolist())
        seen.update(np.unique(part[m]).tolist())
    special = {next(iter(s)) for s in (firsts, lasts) if len(s) == 1}
    return TokenStats(
        pool=np.array(sorted(seen - special), dtype=np.int64),
        special=np.array(sorted(special), dtype=np.int64),
    )


def eligible(ids: np.ndarray, mask: np.ndarray | None, stats: TokenStats) -> np.ndarray:
    """Positions that may be replaced: attended and not holding a special id."""
    keep = np.isin(ids, stats.special)
    if mask is not None:
        keep |= np.asarray(mask) == 0
    return ~keep


def draw_block(rng: np.random.Generator, rows: int, length: int, pool_size: int) -> np.ndarray:
    """One block's draws, shaped (rows, 2, T): a uniform in [0, 1) per position, then a pool index per
    position (exact in float64)."""
    uniform = rng.random((rows, length))
    pick = rng.integers(0, pool_size, size=(rows, length))
    return np.stack([uniform, pick.astype(np.float64)], axis=1)
