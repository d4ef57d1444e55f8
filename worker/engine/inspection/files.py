"""The file inspection reads for a model: an onnx_zip (an .onnx file with its external data, zipped) is
extracted once to a temporary folder and read as plain ONNX; other formats are read where they are."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from worker.engine.loaders import extract_onnx_zip
from worker.engine.types import ModelFormat


@contextmanager
def readable_model(path: Path, fmt: ModelFormat) -> Iterator[tuple[Path, ModelFormat]]:
    """(path, format) to read the model from while the context lasts; the extraction is removed after."""
    if fmt != "onnx_zip":
        yield Path(path), fmt
        return
    with tempfile.TemporaryDirectory(prefix="kneeboard-inspect-") as tmp:
        yield extract_onnx_zip(Path(path), Path(tmp)), "onnx"
