"""The onnxruntime side of `load_model`: a CPU session wrapped as a `Runner` (plain .onnx or extracted zip)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.loaders.archive import extract_onnx_zip
from worker.engine.loaders.feeds import check_feeds
from worker.engine.types import Dim, TensorSpec

if TYPE_CHECKING:
    import onnxruntime

_ORT_TO_NUMPY = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(bfloat16)": "bfloat16",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(uint16)": "uint16",
    "tensor(int32)": "int32",
    "tensor(uint32)": "uint32",
    "tensor(int64)": "int64",
    "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
    "tensor(string)": "str",
}


class OnnxRunner:
    """An onnxruntime CPU session. Owns the temporary folder of an extracted `onnx_zip`, if any."""

    def __init__(
        self, session: onnxruntime.InferenceSession, workdir: tempfile.TemporaryDirectory[str] | None = None
    ) -> None:
        self._session: onnxruntime.InferenceSession | None = session
        self._workdir = workdir  # kept alive as long as the session may read external data
        self._inputs = [_ort_spec(arg) for arg in session.get_inputs()]
        self._outputs = [_ort_spec(arg) for arg in session.get_outputs()]

    @property
    def inputs(self) -> list[TensorSpec]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return list(self._outputs)

    @property
    def extracted_to(self) -> Path | None:
        """Folder an `onnx_zip` was extracted into (deleted by close()); None for a plain .onnx."""
        return Path(self._workdir.name) if self._workdir is not None else None

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._session is None:
            raise EngineError("This ONNX model was closed; load it again to run it.")
        arrays = check_feeds(feeds, self._inputs)
        names = [spec.name for spec in self._outputs]
        try:
            results = self._session.run(names, dict(zip([s.name for s in self._inputs], arrays, strict=True)))
        except Exception as exc:  # onnxruntime raises its own pybind exception types
            raise EngineError(f"onnxruntime failed to run the model: {exc}") from exc
        return {name: np.asarray(value) for name, value in zip(names, results, strict=True)}

    def close(self) -> None:
        """Drop the session and delete the extracted files (if any) now rather than at exit."""
        self._session = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None


def _ort_spec(arg: Any) -> TensorSpec:
    shape: tuple[Dim, ...] = tuple(
        dim if isinstance(dim, int | str) and dim != "" else None for dim in (arg.shape or [])
    )
    return TensorSpec(name=arg.name, shape=shape, dtype=_ORT_TO_NUMPY.get(arg.type, arg.type))


def load_onnx(
    path: Path, intra_op_threads: int | None, workdir: tempfile.TemporaryDirectory[str] | None = None
) -> OnnxRunner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if intra_op_threads is not None:
        options.intra_op_num_threads = intra_op_threads
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # InvalidProtobuf, Fail, NoSuchFile... share no public base class
        raise ModelLoadError(f"onnxruntime could not load {path.name}: {exc}") from exc
    return OnnxRunner(session, workdir)


def load_onnx_zip(path: Path, intra_op_threads: int | None) -> OnnxRunner:
    workdir = tempfile.TemporaryDirectory(prefix="kneeboard-onnx-")
    try:
        model_path = extract_onnx_zip(path, Path(workdir.name))
        return load_onnx(model_path, intra_op_threads, workdir)
    except BaseException:
        workdir.cleanup()
        raise
