"""How the next token is chosen from a row of logits: greedy (argmax) or seeded sampling.

Seeded sampling draws, for sample i and step t, the t-th uniform number of `numpy.random.default_rng([seed, i])`
and takes the token where the cumulative softmax (float64) first exceeds it (inverse-CDF sampling). Both models
of a comparison get the same numbers, so their draws differ only where their distributions do: two identical
models sample identical text, and a divergence in the text is the compression's, not the dice's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

Sampling = Literal["greedy", "seeded"]
SAMPLING_MODES: tuple[Sampling, ...] = ("greedy", "seeded")


def uniforms(seed: int, sample_indices: Sequence[int], steps: int) -> np.ndarray:
    """(len(sample_indices), steps) uniform numbers in [0, 1): row i is sample sample_indices[i]'s own stream."""
    return np.stack([np.random.default_rng([seed, int(i)]).random(steps) for i in sample_indices])


def choose(logits: np.ndarray, sampling: Sampling, draws: np.ndarray | None = None) -> np.ndarray:
    """Next token ids (B,) from logits (B, V); `draws` (B,) uniform numbers for "seeded"."""
    if sampling == "greedy":
        return np.asarray(logits).argmax(axis=-1).astype(np.int64)
    if draws is None:
        raise ValueError("seeded sampling needs one uniform draw per row")
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    cdf = np.cumsum(np.exp(z), axis=-1)
    cdf /= cdf[:, -1:]
    picks = (cdf <= np.asarray(draws, dtype=np.float64)[:, None]).sum(axis=-1)
    return np.minimum(picks, z.shape[-1] - 1).astype(np.int64)
