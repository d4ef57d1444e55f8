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


PROTOBUF_LIMIT_BYTES = 2**31 - 1
"""A protobuf message cannot be serialised past 2 GiB: a bigger graph keeps its weights in a sidecar file."""
EXTERNAL_MARGIN_BYTES = 64 << 20
"""Headroom under the limit for the graph itself (ByteSize counts it; the nodes of a 0.5 B decoder are ~1 MB)."""


def external_data_path(path: Path) -> Path:
    """The sidecar holding the weights of a graph saved with external data (`save_proto`)."""
    return path.with_name(path.name + ".data")


def _files(path: Path) -> list[Path]:
    sidecar = external_data_path(path)
    return [path, sidecar] if sidecar.exists() else [path]


def sha256_file(path: Path) -> str:
    """The digest of an ONNX file, and of its external-data sidecar after it when it has one."""
    h = hashlib.sha256()
    for part in _files(path):
        with open(part, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def file_bytes(path: Path) -> int:
    """Size on disk of an ONNX file with its external-data sidecar."""
    return sum(part.stat().st_size for part in _files(path))


def save_proto(proto: onnx.ModelProto, path: Path, limit_bytes: int = PROTOBUF_LIMIT_BYTES) -> None:
    """Write `proto` to `path`; a graph past `limit_bytes` (less a margin) keeps every initializer in
    `external_data_path(path)`, which onnxruntime reads from beside the file (a 0.56 B-parameter decoder is
    2.23 GB of float32: onnx.save alone refuses it)."""
    import onnx

    if proto.ByteSize() <= max(limit_bytes - EXTERNAL_MARGIN_BYTES, 0):
        onnx.save(proto, str(path))
        return
    sidecar = external_data_path(path)
    sidecar.unlink(missing_ok=True)  # onnx appends to an existing location
    onnx.save(
        proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=sidecar.name
    )
    # onnx.save moved the weights out of `proto` (raw_data cleared): read them back, so the caller's graph
    # is still whole, as after the plain save
    from onnx.external_data_helper import load_external_data_for_model

    load_external_data_for_model(proto, str(path.parent))


def default_opset(proto: onnx.ModelProto) -> int | None:
    """The version of the default (ai.onnx) domain the graph imports."""
    return next((int(o.version) for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)


def file_opset(path: Path) -> int | None:
    import onnx

    return default_opset(onnx.load(str(path), load_external_data=False))


def ort_runner(path: Path) -> Any:
    from worker.engine.loaders import load_model

    return load_model(path, "onnx", intra_op_threads=1)
