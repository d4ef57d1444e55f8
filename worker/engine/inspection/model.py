"""What inspection returns: the model's I/O, its parameter-owning layers and its totals."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from worker.engine.types import TensorSpec


@dataclass(frozen=True)
class LayerInfo:
    """One parameter-owning layer. `name` is its canonical id (identity.py: the torch module path when the
    model records it, else the ONNX node name); `aliases` every other name it goes by (node name, output
    tensors, parameter tensors), which layer queries accept as well."""

    name: str
    type: str
    params: int
    macs: int | None
    aliases: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    param_tensors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ModelInspection:
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    layers: list[LayerInfo]
    total_params: int
    macs: int | None
    flops: int | None
    input_shapes_used: dict[str, list[int]] | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (lists, dicts, str, int, None)."""
        return {
            "inputs": [spec.to_dict() for spec in self.inputs],
            "outputs": [spec.to_dict() for spec in self.outputs],
            "layers": [asdict(layer) for layer in self.layers],
            "total_params": self.total_params,
            "macs": self.macs,
            "flops": self.flops,
            "input_shapes_used": self.input_shapes_used,
            "notes": list(self.notes),
        }
