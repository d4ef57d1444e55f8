"""Prompts read from a padded dataset array: each row's kept tokens (attention mask non-zero), which must form
one block at the start (right padding) or the end (left padding) of the row."""

from __future__ import annotations

from typing import Literal

import numpy as np

from worker.engine.errors import DatasetMismatchError

Padding = Literal["none", "left", "right"]


def read_prompts(ids: np.ndarray, mask: np.ndarray | None) -> tuple[list[np.ndarray], Padding]:
    """Every row's prompt (int64) and the padding the rows use. Raises DatasetMismatchError for an empty
    prompt, a mask with holes, or rows padded on both sides."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise DatasetMismatchError(f"prompts must be integer token ids (N, T); got {ids.shape} {ids.dtype}")
    if mask is None:
        return [row.astype(np.int64) for row in ids], "none"
    keep = np.asarray(mask) != 0
    if keep.shape != ids.shape:
        raise DatasetMismatchError(f"attention_mask is {keep.shape}; the prompts are {ids.shape}")
    prompts: list[np.ndarray] = []
    sides: set[str] = set()
    for i, (row, kept) in enumerate(zip(ids, keep, strict=True)):
        where = np.flatnonzero(kept)
        if where.size == 0:
            raise DatasetMismatchError(f"prompt {i} is empty: its attention_mask keeps no token")
        first, last = int(where[0]), int(where[-1])
        if last - first + 1 != where.size:
            raise DatasetMismatchError(
                f"prompt {i}'s attention_mask has holes (kept positions {first}..{last} with gaps); a prompt "
                "is one block of tokens, padded on the left or on the right"
            )
        if first > 0:
            sides.add("left")
        if last < kept.size - 1:
            sides.add("right")
        prompts.append(row[first : last + 1].astype(np.int64))
    if len(sides) > 1:
        raise DatasetMismatchError(
            "the prompts are padded on both sides (some rows on the left, some on the right); pad them all "
            "on one side"
        )
    return prompts, "left" if "left" in sides else "right" if "right" in sides else "none"
