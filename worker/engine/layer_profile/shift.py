"""Activation-shift diagnostics of one matched layer, folded batch by batch like the profile's sums
(memory does not grow with the dataset: a few counters and two fixed-bin histograms per layer).

- range: min/max of the golden and compressed activations over the dataset.
- histogram: HISTOGRAM_BINS equal-width bins over the golden range of the profile's first batch (its
  one-sample probe), shared by both models, plus counts below and above; of each batch it counts every
  histogram_step-th value (all of them up to HISTOGRAM_SAMPLE values per layer and batch). Bins from the first batch cost
  nothing; a pre-pass over the dataset would cost a whole extra golden capture (the most expensive run of
  the profile). Values outside the first batch's range land in the below/above counts, and the dataset's
  true range is reported next to the histogram.
- clipping (QDQ ONNX): the QuantizeLinear that produces the compressed layer has a representable range
  [(qmin − zero_point)·scale, (qmax − zero_point)·scale] (per tensor, or per channel along its axis); a
  value saturates when it lies more than half a step outside it. `clip_rate` is the share of the
  compressed model's own values entering that quantizer that saturate; `golden_outside_rate` the share of
  the golden model's values at the same tensor that would. Thresholds are computed in float64 from the
  stored scale and zero point. Where the golden layer clamps by itself (Relu [0, inf), Clip [min, max]),
  a side the clamp already covers does not count: onnxruntime's quantizer drops a Relu or ReLU6 Clip
  after a Conv and leaves its clamp to the quantizer, so those values are the activation's, not clipping.
- dead units (ReLU-family golden layers): among the golden values > 0, the share that is exactly 0 in the
  compressed model; and dead channels (axis 1), positive somewhere in the golden model and 0 everywhere in
  the compressed one.
- calibration range (when the profile is given a calibration set, calibration.py): the share of the
  golden values outside the golden layer's [min, max] on the calibration set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from worker.engine.layer_profile.quantizer_range import QuantizerRange
from worker.engine.metrics.numerical import json_float

HISTOGRAM_BINS = 32
HISTOGRAM_SAMPLE = 1 << 12
"""Most values per layer and batch that the histograms bin. numpy.histogram costs 5-10 ns a value: on
EfficientNet-Lite0 (1-sample profile batches) binning every value made the profile 2.7x slower, 65536 a
batch 1.38x; at 4096 a batch a 1024-sample Lite0 profile still bins ~4 M values per layer."""
RELU_FAMILY = frozenset({"Relu", "Clip", "ReLU", "ReLU6", "relu", "relu6", "Hardtanh"})
"""Golden op types whose outputs are clamped at 0 from below (ONNX op types and torch module classes)."""


class CalibrationCounter:
    """One layer's calibration range and the evaluation values counted below and above it."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high
        self.below = 0
        self.above = 0

    def update(self, values: np.ndarray) -> None:
        """Count one evaluation batch (the range's bounds are values of the layer's own dtype, so the
        comparison is exact)."""
        self.below += int(np.count_nonzero(values < self.low))
        self.above += int(np.count_nonzero(values > self.high))


@dataclass(frozen=True)
class Histogram:
    """Equal-width bins over [lower, upper] (the last bin includes `upper`, as numpy.histogram), counts of
    both models, and the values below / above."""

    lower: float
    upper: float
    golden: list[int]
    compressed: list[int]
    golden_below: int
    golden_above: int
    compressed_below: int
    compressed_above: int
    n_counted: int
    """Values counted per model (every histogram_step-th value of each batch)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "lower": self.lower,
            "upper": self.upper,
            "golden": list(self.golden),
            "compressed": list(self.compressed),
            "golden_below": self.golden_below,
            "golden_above": self.golden_above,
            "compressed_below": self.compressed_below,
            "compressed_above": self.compressed_above,
            "n_counted": self.n_counted,
        }


@dataclass(frozen=True)
class ActivationShift:
    """A layer's activation shift over the dataset. Rates are shares in [0, 1]; None when not applicable
    (no quantizer at the tensor, not a ReLU-family layer, no local value)."""

    n_values: int
    golden_min: float
    golden_max: float
    compressed_min: float
    compressed_max: float
    histogram: Histogram | None
    quantizer_min: float | None = None
    quantizer_max: float | None = None
    clip_rate: float | None = None
    golden_outside_rate: float | None = None
    dead_unit_rate: float | None = None
    golden_positive: int | None = None
    dead_channels: int | None = None
    """ReLU-family layers with a channel axis (axis 1 of a batch-first tensor): channels positive somewhere in
    the golden model and 0 everywhere in the compressed one, over the whole dataset."""
    active_channels: int | None = None
    """Channels positive somewhere in the golden model."""
    error_amplification: float | None = None
    """Accumulated error power / local error power (Σ(golden − compressed)² over Σ(golden − local)²): 1
    when the layer's own error is all there is, large when error from earlier layers dominates."""
    calibration_outside_rate: float | None = None
    """Share of the (evaluation) golden values outside [calibration_min, calibration_max], the golden
    layer's range on the calibration set; None without a calibration set (calibration.py)."""
    calibration_min: float | None = None
    calibration_max: float | None = None
    calibration_below: int | None = None
    calibration_above: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_values": self.n_values,
            "golden_min": json_float(self.golden_min),
            "golden_max": json_float(self.golden_max),
            "compressed_min": json_float(self.compressed_min),
            "compressed_max": json_float(self.compressed_max),
            "histogram": None if self.histogram is None else self.histogram.to_dict(),
            "quantizer_min": self.quantizer_min,
            "quantizer_max": self.quantizer_max,
            "clip_rate": self.clip_rate,
            "golden_outside_rate": self.golden_outside_rate,
            "dead_unit_rate": self.dead_unit_rate,
            "golden_positive": self.golden_positive,
            "dead_channels": self.dead_channels,
            "active_channels": self.active_channels,
            "error_amplification": None
            if self.error_amplification is None
            else json_float(self.error_amplification),
            "calibration_outside_rate": self.calibration_outside_rate,
            "calibration_min": None if self.calibration_min is None else json_float(self.calibration_min),
            "calibration_max": None if self.calibration_max is None else json_float(self.calibration_max),
            "calibration_below": self.calibration_below,
            "calibration_above": self.calibration_above,
        }


def histogram_step(size: int) -> int:
    """Every how many values of a batch's (flattened) layer the histogram counts: 1 up to HISTOGRAM_SAMPLE
    values, so that at most about HISTOGRAM_SAMPLE are binned per batch."""
    return max(1, -(-size // HISTOGRAM_SAMPLE))


def _histogram_range(values: np.ndarray) -> tuple[float, float] | None:
    """The first batch's golden range as float32-exact bounds (widened by 1 when constant); None when
    not finite."""
    low, high = np.float32(values.min()), np.float32(values.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    if high == low:
        high = np.float32(low + np.float32(1))
    return float(low), float(high)


class ShiftAccumulator:
    """Running range, histograms, clipping and dead-unit counts of one layer."""

    def __init__(
        self,
        relu_family: bool,
        quantizer: QuantizerRange | None,
        activation: tuple[float, float] = (-np.inf, np.inf),
    ) -> None:
        self.relu_family = relu_family
        self.quantizer = quantizer
        self.activation = activation
        self.n_counted = 0
        self.n_values = 0
        self.minmax = [np.inf, -np.inf, np.inf, -np.inf]  # golden min/max, compressed min/max
        self.range: tuple[float, float] | None = None
        self.no_histogram = False
        self.hist_g = np.zeros(HISTOGRAM_BINS, np.int64)
        self.hist_c = np.zeros(HISTOGRAM_BINS, np.int64)
        self.outside = [0, 0, 0, 0]  # golden below/above, compressed below/above
        self.clipped = 0
        self.n_quantized = 0
        self.golden_outside = 0
        self.positive = 0
        self.dead = 0
        self.golden_fires: np.ndarray | None = None  # per channel: golden > 0 somewhere
        self.compressed_fires: np.ndarray | None = None  # per channel: compressed != 0 somewhere
        self.channels = True
        self.calibration: CalibrationCounter | None = None
        """Set before the evaluation pass when the profile has a calibration set (calibration.py)."""

    def update(self, g: np.ndarray, c: np.ndarray, qdq_input: np.ndarray | None) -> None:
        """Fold one batch in (golden and compressed of the same shape; `qdq_input` the tensor entering the
        compressed layer's quantizer, if it has one)."""
        if g.size == 0:
            return
        self.n_values += int(g.size)
        for i, (array, pick) in enumerate(((g, np.min), (g, np.max), (c, np.min), (c, np.max))):
            value = float(pick(array))
            fold = min if i % 2 == 0 else max
            current = self.minmax[i]
            self.minmax[i] = np.nan if np.isnan(value) or np.isnan(current) else fold(current, value)
        self._histogram(g, c)
        if self.calibration is not None:
            self.calibration.update(g)
        if self.quantizer is not None and qdq_input is not None:
            self.clipped += self.quantizer.outside(qdq_input, *self.activation)
            self.n_quantized += int(qdq_input.size)
            self.golden_outside += self.quantizer.outside(g, *self.activation)
        if self.relu_family:
            positive = g > 0
            self.positive += int(np.count_nonzero(positive))
            self.dead += int(np.count_nonzero(positive & (c == 0)))
            self._channels(positive, c)

    def _channels(self, positive: np.ndarray, c: np.ndarray) -> None:
        """Fold which channels (axis 1) fire; a tensor without one, or whose channel count changes, has none."""
        if not self.channels or positive.ndim < 2:
            self.channels = False
            return
        axes = (0, *range(2, positive.ndim))
        golden = np.asarray(positive.any(axis=axes))
        compressed = np.asarray((c != 0).any(axis=axes))
        if self.golden_fires is None or self.compressed_fires is None:
            self.golden_fires, self.compressed_fires = golden, compressed
        elif self.golden_fires.shape != golden.shape:
            self.channels = False
        else:
            self.golden_fires |= golden
            self.compressed_fires |= compressed

    def _histogram(self, g: np.ndarray, c: np.ndarray) -> None:
        if self.no_histogram:
            return
        if self.range is None:
            self.range = _histogram_range(g)
            if self.range is None:
                self.no_histogram = True
                return
        low, high = self.range
        step = histogram_step(g.size)
        for array, counts, offset in ((g, self.hist_g, 0), (c, self.hist_c, 2)):
            array = array.reshape(-1)[::step]
            counts += np.histogram(array, bins=HISTOGRAM_BINS, range=(low, high))[0]
            self.outside[offset] += int(np.count_nonzero(array < low))
            self.outside[offset + 1] += int(np.count_nonzero(array > high))
        self.n_counted += -(-g.size // step)

    def result(self, error_amplification: float | None) -> ActivationShift:
        histogram = None
        if self.range is not None and not self.no_histogram:
            histogram = Histogram(
                self.range[0],
                self.range[1],
                [int(v) for v in self.hist_g],
                [int(v) for v in self.hist_c],
                golden_below=self.outside[0],
                golden_above=self.outside[1],
                compressed_below=self.outside[2],
                compressed_above=self.outside[3],
                n_counted=self.n_counted,
            )
        q = self.quantizer
        quantized = q is not None and self.n_quantized > 0
        cal = self.calibration
        return ActivationShift(
            n_values=self.n_values,
            golden_min=self.minmax[0],
            golden_max=self.minmax[1],
            compressed_min=self.minmax[2],
            compressed_max=self.minmax[3],
            histogram=histogram,
            quantizer_min=float(np.min(q.low)) if q is not None else None,
            quantizer_max=float(np.max(q.high)) if q is not None else None,
            clip_rate=self.clipped / self.n_quantized if quantized else None,
            golden_outside_rate=self.golden_outside / self.n_values if quantized and self.n_values else None,
            dead_unit_rate=self.dead / self.positive if self.relu_family and self.positive else None,
            golden_positive=self.positive if self.relu_family else None,
            dead_channels=self._dead_channels(),
            active_channels=self._active_channels(),
            error_amplification=error_amplification,
            calibration_outside_rate=(cal.below + cal.above) / self.n_values
            if cal and self.n_values
            else None,
            calibration_min=cal.low if cal else None,
            calibration_max=cal.high if cal else None,
            calibration_below=cal.below if cal else None,
            calibration_above=cal.above if cal else None,
        )

    def _has_channels(self) -> bool:
        return self.relu_family and self.channels and self.golden_fires is not None

    def _active_channels(self) -> int | None:
        if not self._has_channels() or self.golden_fires is None:
            return None
        return int(np.count_nonzero(self.golden_fires))

    def _dead_channels(self) -> int | None:
        if not self._has_channels() or self.golden_fires is None or self.compressed_fires is None:
            return None
        return int(np.count_nonzero(self.golden_fires & ~self.compressed_fires))
