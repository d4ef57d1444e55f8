"""The onnxruntime converters behind three real export kinds, each applied to the float graph of a
point (its prune / low-rank stages only): fp16 (onnxruntime.transformers.float16, float32 inputs and
outputs kept), real-int8-dynamic (quantize_dynamic) and real-int8-qdq (quantize_static on the
calibration feeds). Each writes the file and returns the converter's settings for the manifest."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression import Config
from worker.engine.compression.model import Feeds, batches
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import bind_inputs
from worker.engine.sweep.cost import storage_of
from worker.engine.sweep.export_common import save_proto
from worker.engine.sweep.runtime_forms import last_weight_quant
from worker.engine.types import TensorSpec

if TYPE_CHECKING:
    import onnx


@contextmanager
def _quiet() -> Iterator[None]:
    """onnxruntime.quantization logs advice (pre-processing) on the root logger."""
    root = logging.getLogger()
    previous = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(previous)


def fp16(base: onnx.ModelProto, path: Path) -> dict[str, Any]:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    converted = convert_float_to_float16(base, keep_io_types=True)
    save_proto(converted, path)
    return {"method": "onnxruntime.transformers.float16.convert_float_to_float16", "keep_io_types": True}


def _weights_of(config: Config) -> Any:
    found = last_weight_quant(config)
    if found is None:
        raise EngineError(f"{config.id} has no final weight quantization")
    return found[1]


def dynamic(base: onnx.ModelProto, path: Path, config: Config) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    wq = _weights_of(config)
    weight_type = QuantType.QInt8 if wq.symmetric else QuantType.QUInt8
    with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp, _quiet():
        src = Path(tmp) / "float.onnx"
        save_proto(base, src)
        quantize_dynamic(str(src), str(path), per_channel=wq.per_channel, weight_type=weight_type)
    return {
        "method": "onnxruntime.quantization.quantize_dynamic",
        "weight_type": weight_type.name,
        "per_channel": wq.per_channel,
        "activations": "uint8, range computed per batch at run time",
    }


class _Reader:
    """A CalibrationDataReader over bound feeds (subclassed lazily from onnxruntime's ABC)."""

    def __init__(self, feeds: Feeds, batch_size: int) -> None:
        self._batches = iter(list(batches(feeds, batch_size)))

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def _proto_inputs(proto: onnx.ModelProto) -> list[TensorSpec]:
    """The graph inputs that are not initializers, as TensorSpecs (batch dimension unknown)."""
    from onnx import helper

    inits = {init.name for init in proto.graph.initializer}
    specs = []
    for value in proto.graph.input:
        if value.name in inits:
            continue
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "float32"
        specs.append(TensorSpec(value.name, (None, *dims[1:]) if dims else (), dtype))
    return specs


def qdq(
    base: onnx.ModelProto, path: Path, config: Config, feeds: Feeds, batch_size: int, notes: list[str]
) -> dict[str, Any]:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    wq = _weights_of(config)
    aq = storage_of(config).activation_quant
    assert aq is not None
    extra: dict[str, Any] = {}
    method = CalibrationMethod.MinMax
    if aq.calibration == "percentile":
        method = CalibrationMethod.Percentile
        extra["CalibPercentile"] = aq.percentile
    elif aq.calibration == "entropy":
        notes.append(
            "quantize_static does not pass a bin count to onnxruntime's Entropy calibrator, whose default (128 "
            "bins, 128 levels: one window) is the min-max range: MinMax used for the QDQ export"
        )
    elif aq.calibration == "mse":
        notes.append("onnxruntime has no MSE calibration: MinMax used for the QDQ export")
    weight_type = QuantType.QInt8 if wq.symmetric else QuantType.QUInt8

    class Reader(_Reader, CalibrationDataReader):
        pass

    feeds = bind_inputs(feeds, _proto_inputs(base))
    with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp, _quiet():
        src = Path(tmp) / "float.onnx"
        save_proto(base, src)
        prepared = Path(tmp) / "prepared.onnx"
        try:
            quant_pre_process(str(src), str(prepared))
        except Exception as exc:  # an optimisation only: quantize the model as is
            notes.append(f"quant_pre_process failed ({exc}); quantized without it")
            prepared = src
        quantize_static(
            str(prepared),
            str(path),
            Reader(feeds, batch_size),
            quant_format=QuantFormat.QDQ,
            per_channel=wq.per_channel,
            activation_type=QuantType.QUInt8,
            weight_type=weight_type,
            calibrate_method=method,
            extra_options=extra or None,
        )
    return {
        "method": "onnxruntime.quantization.quantize_static (QDQ)",
        "weight_type": weight_type.name,
        "activation_type": "QUInt8",
        "per_channel": wq.per_channel,
        "calibrate_method": method.name,
        "calibration_samples": len(next(iter(feeds.values()))),
    }
