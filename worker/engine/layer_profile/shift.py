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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.metrics.numerical import json_float

if TYPE_CHECKING:
    import onnx

HISTOGRAM_BINS = 32
HISTOGRAM_SAMPLE = 1 << 12
"""Most values per layer and batch that the histograms bin. numpy.histogram costs 5-10 ns a value: on
EfficientNet-Lite0 (1-sample profile batches) binning every value made the profile 2.7x slower, 65536 a
batch 1.38x; at 4096 a batch a 1024-sample Lite0 profile still bins ~4 M values per layer."""
RELU_FAMILY = frozenset({"Relu", "Clip", "ReLU", "ReLU6", "relu", "relu6", "Hardtanh"})
"""Golden op types whose outputs are clamped at 0 from below (ONNX op types and torch module classes)."""

_INTEGER_RANGES = {
    2: (0, 255),  # UINT8
    3: (-128, 127),  # INT8
    4: (0, 65535),  # UINT16
    5: (-32768, 32767),  # INT16
    21: (0, 15),  # UINT4
    22: (-8, 7),  # INT4
}
"""onnx.TensorProto data type -> the integer range a QuantizeLinear saturates to."""


def _float32_below(threshold: np.ndarray) -> np.ndarray:
    """The largest float32 <= each float64 threshold: for float32 x, x > it exactly when x > threshold."""
    f = threshold.astype(np.float32)
    return np.where(f.astype(np.float64) > threshold, np.nextafter(f, np.float32(-np.inf)), f)


def _float32_above(threshold: np.ndarray) -> np.ndarray:
    """The smallest float32 >= each float64 threshold: for float32 x, x < it exactly when x < threshold."""
    f = threshold.astype(np.float32)
    return np.where(f.astype(np.float64) < threshold, np.nextafter(f, np.float32(np.inf)), f)


@dataclass(frozen=True)
class QuantizerRange:
    """What a QuantizeLinear can represent: `low` = (qmin − zero_point)·scale, `high` = (qmax −
    zero_point)·scale and `scale`, per channel along `axis` or scalars (float64)."""

    low: np.ndarray
    high: np.ndarray
    scale: np.ndarray
    zero_point: np.ndarray
    qmin: int
    qmax: int
    axis: int | None

    def _shaped(self, value: np.ndarray, ndim: int) -> np.ndarray:
        if self.axis is None:
            return value
        shape = [1] * ndim
        shape[self.axis % ndim] = -1
        return value.reshape(shape)

    def saturation(self, act_min: float, act_max: float) -> tuple[np.ndarray, np.ndarray]:
        """The thresholds beyond which a value saturates: (qmin − zero_point − ½)·scale and (qmax −
        zero_point + ½)·scale (a value within half a step of the range rounds into it), ±inf where the
        layer's own activation clamp (act_min, act_max) already keeps values inside (a Relu or Clip that
        onnxruntime's quantizer dropped, leaving the clamp to the quantizer)."""
        low = (self.qmin - self.zero_point - 0.5) * self.scale
        high = (self.qmax - self.zero_point + 0.5) * self.scale
        return np.where(act_min < low, low, -np.inf), np.where(act_max > high, high, np.inf)

    def outside(self, values: np.ndarray, act_min: float = -np.inf, act_max: float = np.inf) -> int:
        """How many of `values` saturate (see `saturation`; NaN never does). float32 values are compared
        with the float32 neighbours of the thresholds, which gives the float64 comparison's answer."""
        low, high = self.saturation(act_min, act_max)
        if values.dtype == np.float32:
            low, high = _float32_above(low), _float32_below(high)
        low, high = self._shaped(low, values.ndim), self._shaped(high, values.ndim)
        below = 0 if np.all(np.isneginf(low)) else int(np.count_nonzero(values < low))
        above = 0 if np.all(np.isposinf(high)) else int(np.count_nonzero(values > high))
        return below + above


def activation_bounds(
    model: onnx.ModelProto | None, node: onnx.NodeProto | None, folder: Any
) -> tuple[float, float]:
    """The clamp a golden ONNX node applies itself: Relu [0, inf), Clip [min, max] (constant inputs or
    attributes), anything else (-inf, inf)."""
    if model is None or node is None:
        return -np.inf, np.inf
    if node.op_type == "Relu":
        return 0.0, np.inf
    if node.op_type != "Clip":
        return -np.inf, np.inf
    bounds = [-np.inf, np.inf]
    attrs = {attr.name: attr.f for attr in node.attribute}
    for i, key in ((1, "min"), (2, "max")):
        if len(node.input) > i and node.input[i]:
            value = _constant(model, node.input[i], folder)
            if value is not None:
                bounds[i - 1] = float(value)
        elif key in attrs:
            bounds[i - 1] = float(attrs[key])
    return bounds[0], bounds[1]


def _constant(model: onnx.ModelProto, name: str, folder: Any) -> np.ndarray | None:
    """An initializer or Constant node's value, None when `name` is neither."""
    from onnx import numpy_helper

    for init in model.graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init, base_dir=str(folder))
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output and node.output[0] == name:
            for attr in node.attribute:
                if attr.name == "value":
                    return numpy_helper.to_array(attr.t)
    return None


def quantizer_range(model: onnx.ModelProto, quantize: onnx.NodeProto, folder: Any) -> QuantizerRange | None:
    """The representable range of a QuantizeLinear node; None when its scale or zero point is not a
    constant or its integer type is not one listed in _INTEGER_RANGES."""
    scale = _constant(model, quantize.input[1], folder) if len(quantize.input) > 1 else None
    if scale is None:
        return None
    zero_name = quantize.input[2] if len(quantize.input) > 2 else ""
    attrs = {attr.name: attr for attr in quantize.attribute}
    if zero_name:
        zero = _constant(model, zero_name, folder)
        if zero is None:
            return None
        from onnx import helper

        dtype = int(helper.np_dtype_to_tensor_dtype(zero.dtype))
    else:
        zero = np.zeros_like(scale, dtype=np.int64)
        dtype = attrs["output_dtype"].i if "output_dtype" in attrs else 2
    if dtype not in _INTEGER_RANGES:
        return None
    qmin, qmax = _INTEGER_RANGES[dtype]
    s = np.asarray(scale, np.float64)
    z = np.asarray(zero, np.float64)
    axis = None if s.ndim == 0 or s.size == 1 else (attrs["axis"].i if "axis" in attrs else 1)
    if axis is None:
        s, z = s.reshape(()), z.reshape(())
    return QuantizerRange((qmin - z) * s, (qmax - z) * s, s, z, qmin, qmax, axis)


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
    """Share of evaluation activations outside the range seen on a calibration set: always None, fidelity
    jobs have no calibration set (golden_outside_rate is the nearest measure: the quantizer's range is
    the calibrated one)."""

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
