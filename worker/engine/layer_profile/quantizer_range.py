"""The representable range of a QDQ model's QuantizeLinear, and the thresholds beyond which a value
saturates (shift.py's clipping counts): constants read from the ONNX graph, thresholds in float64 from the
stored scale and zero point, compared with float32 values through their float32 neighbours."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

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
