"""Running sums of the profile's comparisons, folded in batch by batch (memory does not grow with the
dataset, and no float64 copy of a whole layer is made: see metrics.numerical.sample_sums)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from worker.engine.layer_profile.results import LayerStats
from worker.engine.metrics.numerical import sample_sums, sqnr_db


class StatsAccumulator:
    """SQNR and per-sample cosine totals of one comparison; remembers shape problems and whether every
    batch had the batch on axis 0."""

    def __init__(self) -> None:
        self.n_samples = 0
        self.sum_signal = 0.0
        self.sum_error = 0.0
        self.sum_cosine = 0.0
        self.min_cosine = float("inf")
        self.batch_first = True
        self.problem: str | None = None

    def update(self, a: np.ndarray, b: np.ndarray, batch_size: int) -> None:
        """Fold one batch in; a shape mismatch is recorded in `problem` and stops further updates."""
        if self.problem is not None:
            return
        if a.shape != b.shape:
            self.problem = f"shapes differ (golden {list(a.shape)}, compressed {list(b.shape)})"
            return
        if a.ndim == 0 or a.shape[0] != batch_size:
            self.batch_first = False
        sums = sample_sums(a, b)
        if sums.signal.shape[0] == 0:
            return
        cosine = sums.cosine()
        self.n_samples += int(sums.signal.shape[0])
        self.sum_signal += float(sums.signal.sum())
        self.sum_error += float(sums.error.sum())
        self.sum_cosine += float(cosine.sum())
        self.min_cosine = min(self.min_cosine, float(cosine.min()))

    def result(self) -> LayerStats:
        """The totals so far (cosine None unless every batch was batch-first)."""
        sqnr = float("nan") if self.n_samples == 0 else sqnr_db(self.sum_signal, self.sum_error)
        if not self.batch_first or self.n_samples == 0:
            return LayerStats(sqnr, None, None)
        return LayerStats(sqnr, self.sum_cosine / self.n_samples, self.min_cosine)


@dataclass
class LayerPair:
    """A matched layer while the dataset is being processed. `qdq_input` is the compressed tensor that
    enters the QuantizeLinear whose DequantizeLinear gives `compressed` (QDQ ONNX), if there is one."""

    golden: str
    compressed: str
    op_type: str
    accumulated: StatsAccumulator = field(default_factory=StatsAccumulator)
    local: StatsAccumulator | None = None
    local_note: str | None = None
    qdq_input: str | None = None
    qdq: StatsAccumulator | None = None

    def drop_local(self, reason: str) -> None:
        self.local, self.local_note = None, reason
