"""Running sums of the profile's comparisons, folded in batch by batch (memory does not grow with the
dataset, and no float64 copy of a whole layer is made: see metrics.numerical.sample_sums)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from worker.engine.layer_profile.results import LayerStats
from worker.engine.layer_profile.shift import ShiftAccumulator
from worker.engine.metrics.numerical import SampleSums, sample_sums, shared_sample_sums, sqnr_db


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
        if self.accepts(a.shape, b.shape, batch_size):
            self.add(sample_sums(a, b))

    def accepts(self, a_shape: tuple[int, ...], b_shape: tuple[int, ...], batch_size: int) -> bool:
        """Whether a batch of these shapes is to be folded in (records a shape problem, or a batch that is
        not on axis 0)."""
        if self.problem is not None:
            return False
        if a_shape != b_shape:
            self.problem = f"shapes differ (golden {list(a_shape)}, compressed {list(b_shape)})"
            return False
        if len(a_shape) == 0 or a_shape[0] != batch_size:
            self.batch_first = False
        return True

    def add(self, sums: SampleSums) -> None:
        """Fold one batch's per-sample sums in."""
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
    shift: ShiftAccumulator | None = None
    """Activation range, histograms, clipping and dead units (shift.py); None when not planned."""

    def drop_local(self, reason: str) -> None:
        self.local, self.local_note = None, reason

    def fold(
        self, g: np.ndarray, c: np.ndarray, local: np.ndarray | None, qdq_input: np.ndarray | None, n: int
    ) -> None:
        """Fold one batch of the layer in: accumulated (golden vs compressed), local (golden vs the local
        output, if given) and qdq_err (the quantizer's input vs compressed, if given), the arrays shared by
        two comparisons converted to float64 once (metrics.numerical.shared_sample_sums)."""
        arrays = [g, c]
        comparisons: list[tuple[int, int]] = []
        targets: list[StatsAccumulator] = []
        if self.accumulated.accepts(g.shape, c.shape, n):
            comparisons.append((0, 1))
            targets.append(self.accumulated)
        if self.local is not None and local is not None and self.local.accepts(g.shape, local.shape, n):
            arrays.append(local)
            comparisons.append((0, len(arrays) - 1))
            targets.append(self.local)
        if self.qdq is not None and qdq_input is not None and self.qdq.accepts(qdq_input.shape, c.shape, n):
            arrays.append(qdq_input)
            comparisons.append((len(arrays) - 1, 1))
            targets.append(self.qdq)
        if not comparisons:
            return
        if self.shift is not None and comparisons[0] == (0, 1):
            self.shift.update(
                g, c, qdq_input if qdq_input is not None and qdq_input.shape == c.shape else None
            )
        if all(a.shape == g.shape for a in arrays):
            sums = shared_sample_sums(arrays, comparisons)
        else:  # e.g. golden and compressed shapes differ but the quantizer's input matches its output
            sums = [sample_sums(arrays[i], arrays[j]) for i, j in comparisons]
        for target, value in zip(targets, sums, strict=True):
            target.add(value)
