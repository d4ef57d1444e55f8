"""Options and result of a generation run (`worker.engine.tasks.generation.generate`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from worker.engine.tasks.generation.choose import SAMPLING_MODES, Sampling


@dataclass(frozen=True)
class GenerationConfig:
    """new_tokens: tokens generated per prompt (each stops earlier at `eos_token_id` when given).
    sampling: "greedy" (argmax) or "seeded" (inverse-CDF sampling with the uniform draws of `seed`, the same
        for both models of a comparison: `worker.engine.tasks.generation.choose`).
    batch_size: prompts run together. use_cache: use the model's KV cache when it has one (False forces the
        full-recompute loop, e.g. to check one against the other)."""

    new_tokens: int
    sampling: Sampling = "greedy"
    seed: int = 0
    eos_token_id: int | None = None
    batch_size: int = 8
    use_cache: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.new_tokens, bool) or not isinstance(self.new_tokens, int) or self.new_tokens < 1:
            raise ValueError(f"new_tokens must be an integer >= 1, got {self.new_tokens!r}")
        if self.sampling not in SAMPLING_MODES:
            raise ValueError(f"sampling must be one of {', '.join(SAMPLING_MODES)}, got {self.sampling!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")


@dataclass
class Generated:
    """tokens: each prompt's generated ids, cut before its first EOS (the EOS itself is not kept);
    stopped_at_eos: whether it met one. cached: the KV-cache loop ran (else the full-recompute loop).
    model_calls: forward passes run; seconds: time spent in them and in choosing tokens."""

    tokens: list[np.ndarray]
    stopped_at_eos: list[bool]
    cached: bool
    model_calls: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def cut_at_eos(rows: np.ndarray, eos: int | None) -> tuple[list[np.ndarray], list[bool]]:
    """Each row of generated ids (B, n) up to (not including) its first `eos`."""
    out: list[np.ndarray] = []
    stopped: list[bool] = []
    for row in rows:
        hits = np.flatnonzero(row == eos) if eos is not None else np.empty(0, dtype=np.int64)
        out.append(row[: hits[0]].copy() if hits.size else row.copy())
        stopped.append(bool(hits.size))
    return out, stopped
