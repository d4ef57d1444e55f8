"""Load a model file into a `Runner`: one small adapter per `ModelFormat`.

Every runtime failure while loading becomes a `ModelLoadError` whose text keeps the runtime's own
message, because that message is usually the only clue a user gets (protobuf parse errors, missing
external data, a zip that is not a TorchScript archive...). Nothing here unpickles on its own:
TorchScript and torch.export archives are read by their own loaders only.

torch and onnxruntime are imported inside the functions that need them, so that loading an ONNX
model does not pay for importing torch and vice versa.
"""

from __future__ import annotations

from pathlib import Path

from worker.engine.errors import ModelLoadError
from worker.engine.loaders.archive import ArchiveCheck, extract_onnx_zip
from worker.engine.loaders.onnx_runner import OnnxRunner, load_onnx, load_onnx_zip
from worker.engine.loaders.torch_runner import (
    TORCHSCRIPT_SPEC_FILE,
    TorchRunner,
    load_torch_export,
    load_torchscript,
    torch_export_specs,
    torchscript_specs,
)
from worker.engine.types import ModelFormat, Runner

__all__ = [
    "TORCHSCRIPT_SPEC_FILE",
    "ArchiveCheck",
    "OnnxRunner",
    "TorchRunner",
    "extract_onnx_zip",
    "load_model",
    "torch_export_specs",
    "torchscript_specs",
]


def load_model(path: Path, fmt: ModelFormat, *, intra_op_threads: int | None = None) -> Runner:
    """Load `path` as `fmt` and return a runner; any load failure raises `ModelLoadError`.

    `intra_op_threads` limits the runtime's intra-op thread pool. For the torch formats this calls
    torch.set_num_threads, which is process-wide: the last loaded torch model's setting wins.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"Model file {path.name} does not exist or is not a file.")
    if fmt == "onnx":
        return load_onnx(path, intra_op_threads)
    if fmt == "onnx_zip":
        return load_onnx_zip(path, intra_op_threads)
    if fmt == "torch_export":
        return load_torch_export(path, intra_op_threads)
    if fmt == "torchscript":
        return load_torchscript(path, intra_op_threads)
    raise ModelLoadError(
        f"Unknown model format {fmt!r}; expected onnx, onnx_zip, torch_export or torchscript."
    )
