"""Shared value types of the engine: tensor descriptions and the runner protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

ModelFormat = Literal["onnx", "onnx_zip", "torch_export", "torchscript"]
"""onnx: a single .onnx file; onnx_zip: a zip holding one .onnx plus its external data files;
torch_export: a torch.export program saved with torch.export.save (.pt2);
torchscript: a TorchScript archive saved with torch.jit.save (.pt)."""

ONNX_FORMATS: tuple[ModelFormat, ...] = ("onnx", "onnx_zip")
"""The formats onnxruntime runs (an onnx_zip once its .onnx and external data are extracted)."""

Dim = int | str | None
"""A dimension: a fixed size, a symbolic name (e.g. "batch"), or None when unknown."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[Dim, ...]
    dtype: str  # numpy dtype name, e.g. "float32", "int64"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"shape": list(self.shape)}


@runtime_checkable
class Runner(Protocol):
    """A loaded model that maps named input arrays to named output arrays (batch first)."""

    @property
    def inputs(self) -> list[TensorSpec]: ...

    @property
    def outputs(self) -> list[TensorSpec]: ...

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one batch. Keys of the result are the output names, in the order of `outputs`."""
        ...
