"""Reading what a sweep exports: the initializers and float parameters of an ONNX file, a point's
export of one kind, and a run of an ONNX file in onnxruntime on one thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from worker.engine.sweep import SweepPoint


def initializers(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def float_params(path: Path) -> dict[str, np.ndarray]:
    return {k: v for k, v in initializers(path).items() if v.dtype == np.float32 and v.size > 1}


def export_of(point: SweepPoint, kind: str) -> dict:
    return next(e for e in point.exports if e["kind"] == kind)


def run_onnx(path: Path, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0])
