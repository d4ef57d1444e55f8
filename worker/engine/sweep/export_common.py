"""What the sweep's ONNX exporters share: the builder type, saving and reading back an ONNX file, its
digest, and running it in onnxruntime."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.engine.compression import Config

if TYPE_CHECKING:
    import onnx

Builder = Callable[[Mapping[str, Config]], "onnx.ModelProto"]
"""plan → the ONNX graph of the golden model compressed (simulated) by that plan."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_proto(proto: onnx.ModelProto, path: Path) -> None:
    import onnx

    onnx.save(proto, str(path))


def default_opset(proto: onnx.ModelProto) -> int | None:
    """The version of the default (ai.onnx) domain the graph imports."""
    return next((int(o.version) for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)


def file_opset(path: Path) -> int | None:
    import onnx

    return default_opset(onnx.load(str(path), load_external_data=False))


def ort_runner(path: Path) -> Any:
    from worker.engine.loaders import load_model

    return load_model(path, "onnx", intra_op_threads=1)
