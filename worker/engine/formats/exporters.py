"""Exporting torch models to ONNX, torch.export programs and TorchScript, and int8 QDQ quantization of ONNX
models with onnxruntime: what sweeps use to export compressed models, and the demo and tests to build models.

(Moved from the demo models, `worker/demo/models.py`, which re-exports these names.)
"""

from __future__ import annotations

import json
import logging
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from worker.engine.loaders import TORCHSCRIPT_SPEC_FILE

logger = logging.getLogger(__name__)


def _batch_dim() -> Any:
    return torch.export.Dim("batch")


@contextmanager
def quiet_exporter() -> Iterator[None]:
    """The exporters warn about optional packages (torchvision) and deprecations; none concern us."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exporter_logger = logging.getLogger("torch.onnx")
        previous = exporter_logger.level
        exporter_logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            exporter_logger.setLevel(previous)


def export_onnx(
    model: nn.Module,
    sample: np.ndarray,
    path: Path,
    input_name: str = "input",
    output_name: str = "logits",
    *,
    external_data: bool = False,
) -> Path:
    """Export to ONNX with a dynamic batch dimension named "batch".

    Uses the dynamo exporter; falls back to the TorchScript-based exporter if it fails. With
    `external_data=True` the weights go to a side file next to `path` (what an `onnx_zip` bundles).
    """
    path = Path(path)
    args = (torch.from_numpy(sample),)
    with quiet_exporter():
        try:
            torch.onnx.export(
                model,
                args,
                str(path),
                input_names=[input_name],
                output_names=[output_name],
                dynamo=True,
                dynamic_shapes=({0: _batch_dim()},),
                external_data=external_data,
                verbose=False,
            )
        except Exception as exc:  # the dynamo exporter's failures have no common base class
            logger.warning("dynamo ONNX export failed (%s); using the legacy exporter", exc)
            torch.onnx.export(
                model,
                args,
                str(path),
                input_names=[input_name],
                output_names=[output_name],
                dynamo=False,
                dynamic_axes={input_name: {0: "batch"}, output_name: {0: "batch"}},
            )
    return path


def export_torch_program(model: nn.Module, sample: np.ndarray, path: Path) -> Path:
    """Save a `torch.export` program (.pt2) with a dynamic batch dimension."""
    path = Path(path)
    with quiet_exporter():  # e.g. nn.LSTM's flat-weights warning, which concerns torch's own code
        program = torch.export.export(model, (torch.from_numpy(sample),), dynamic_shapes=({0: _batch_dim()},))
    torch.export.save(program, str(path))
    return path


def export_torchscript(
    model: nn.Module,
    sample: np.ndarray,
    path: Path,
    input_name: str = "input",
    output_name: str = "output",
) -> Path:
    """Trace to TorchScript (.pt) and store the I/O specs as an extra file (batch dim = "batch").

    TorchScript keeps neither shapes nor dtypes of the inputs, so without that extra file a loader
    could only report them as unknown.
    """
    path = Path(path)
    example = torch.from_numpy(sample)
    with torch.no_grad():
        scripted = torch.jit.trace(model, (example,))
        output = model(example)
    specs = {
        "inputs": [_io_spec(input_name, example)],
        "outputs": [_io_spec(output_name, output)],
    }
    torch.jit.save(scripted, str(path), _extra_files={TORCHSCRIPT_SPEC_FILE: json.dumps(specs)})
    return path


def _io_spec(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    shape: list[int | str] = ["batch", *tensor.shape[1:]]
    return {"name": name, "shape": shape, "dtype": str(tensor.dtype).removeprefix("torch.")}


class _ArrayCalibrationReader:
    """Feeds calibration samples to onnxruntime's calibrator in batches (a CalibrationDataReader)."""

    def __init__(self, samples: np.ndarray, input_name: str, batch_size: int = 64) -> None:
        self._batches = iter(
            [
                {input_name: np.ascontiguousarray(samples[i : i + batch_size])}
                for i in range(0, len(samples), batch_size)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def _calibration_reader(samples: np.ndarray, input_name: str) -> Any:
    """Wrap `_ArrayCalibrationReader` in onnxruntime's abstract base class (imported lazily)."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(_ArrayCalibrationReader, CalibrationDataReader):
        pass

    return Reader(samples, input_name)


def _pre_process(src: Path, dst: Path) -> Path:
    """Run onnxruntime's quantization pre-processing (shape inference + optimisation) if it works."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    try:
        quant_pre_process(str(src), str(dst))
    except Exception as exc:  # pre-processing is an optimisation; quantizing without it still works
        logger.warning("quant_pre_process failed (%s); quantizing the model as is", exc)
        return src
    return dst


def quantize_onnx_int8(
    src: Path,
    dst: Path,
    calibration: np.ndarray,
    input_name: str = "input",
    activation_type: Literal["uint8", "int8"] = "uint8",
    reduce_range: bool = False,
) -> Path:
    """Static int8 quantization in QDQ format: per-channel int8 weights, MinMax-calibrated activations.

    `reduce_range` stores 7-bit weights, which ONNX Runtime recommends with per-channel weights on x86-64:
    without VNNI its fused U8S8 kernels can saturate (see worker/engine/layer_profile/kernel_gap.py)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    activations = QuantType.QUInt8 if activation_type == "uint8" else QuantType.QInt8
    dst = Path(dst)
    with tempfile.TemporaryDirectory() as tmp:
        prepared = _pre_process(Path(src), Path(tmp) / "prepared.onnx")
        quantize_static(
            str(prepared),
            str(dst),
            _calibration_reader(calibration, input_name),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=activations,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            reduce_range=reduce_range,
        )
    return dst
