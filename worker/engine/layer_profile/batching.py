"""The profile's own batches: the incoming feeds re-cut into batches sized from a memory budget.

One profile batch holds every captured layer of both models and the local sub-graphs' outputs at once, so
its memory is (bytes per sample of all those tensors) x (samples in the batch). The first batch is a
single-sample probe; its measured bytes per sample set the size of every later batch, whatever the size of
the batches the caller streams in (the fidelity comparison's batch_size)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from worker.engine.layer_profile.sides import Feeds, batch_size_of

DEFAULT_MEMORY_BUDGET_MB = 384.0
"""The default budget for one profile batch (see backend/settings.py profile_memory_budget_mb)."""

PEAK_FACTOR = 2.0
"""Peak memory of a profile batch over the bytes of the tensors it captures: onnxruntime holds the
requested outputs of a run while they are converted to numpy arrays, so for a moment each captured tensor
exists twice."""

MAX_PROFILE_BATCH = 1024
"""A ceiling on samples per profile batch even when the budget allows more: progress and cancellation are
checked between batches, and larger batches run no faster."""


def profile_batch_size(bytes_per_sample: float, budget_mb: float, fixed: int | None = None) -> int:
    """Samples per profile batch: as many as fit `budget_mb` at PEAK_FACTOR x `bytes_per_sample`, at least
    1 and at most MAX_PROFILE_BATCH; `fixed` (a model whose batch dimension is fixed) wins."""
    if fixed is not None:
        return fixed
    per_sample = max(bytes_per_sample * PEAK_FACTOR, 1.0)
    return int(min(MAX_PROFILE_BATCH, max(1, budget_mb * 2**20 // per_sample)))


class Rebatcher:
    """Yields the samples of `batches` in batches of `size` samples (the last one may be smaller); `size`
    may be changed between two batches. Incoming batches are sliced (views) and concatenated only when a
    profile batch spans several of them."""

    def __init__(self, batches: Iterable[Feeds], size: int) -> None:
        self._incoming = iter(batches)
        self._pending: list[Feeds] = []
        self._pending_n = 0
        self.size = size

    def _fill(self) -> None:
        while self._pending_n < self.size:
            feeds = next(self._incoming, None)
            if feeds is None:
                return
            n = batch_size_of(feeds)
            if n:
                self._pending.append(feeds)
                self._pending_n += n

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        while True:
            self._fill()
            if not self._pending_n:
                return
            yield self._take(min(self.size, self._pending_n))

    def _take(self, n: int) -> dict[str, np.ndarray]:
        """The next `n` pending samples, one array per input."""
        parts: list[Feeds] = []
        left = n
        while left:
            head = self._pending[0]
            size = batch_size_of(head)
            if size <= left:
                parts.append(self._pending.pop(0))
                left -= size
            else:
                parts.append({name: a[:left] for name, a in head.items()})
                self._pending[0] = {name: a[left:] for name, a in head.items()}
                left = 0
        self._pending_n -= n
        if len(parts) == 1:
            return {name: np.asarray(a) for name, a in parts[0].items()}
        return {name: np.concatenate([np.asarray(p[name]) for p in parts]) for name in parts[0]}
