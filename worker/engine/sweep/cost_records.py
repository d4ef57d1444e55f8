"""The records of what a compression configuration costs — per tensor, per layer, per model — with
their totals and JSON form. How each figure is computed is defined in `cost`'s docstring."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FLOAT_BITS = 32
SCALE_BYTES = 4


@dataclass
class TensorCost:
    name: str
    layer: str
    role: str
    """"weight", "bias" or "other"."""
    elements: int
    bits: int
    stored_elements: int
    """Elements a deployment stores: the factors of a low-rank weight, else all of them."""
    kept: int
    """Parameters kept: nonzero entries of a pruned tensor, stored elements otherwise."""
    nonzero: int
    bytes: int
    quant_param_bytes: int
    sparse_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "elements": self.elements,
            "bits": self.bits,
            "stored_elements": self.stored_elements,
            "kept": self.kept,
            "nonzero": self.nonzero,
            "bytes": self.bytes,
            "quant_param_bytes": self.quant_param_bytes,
            "sparse_bytes": self.sparse_bytes,
        }


@dataclass
class LayerCost:
    name: str
    type: str
    config: str | None
    weight_bits: int
    activation_bits: int
    macs: int | None
    macs_effective: int | None
    tensors: list[TensorCost] = field(default_factory=list)
    activation_param_bytes: int = 0

    @property
    def bops(self) -> int | None:
        return None if self.macs is None else self.macs * self.weight_bits * self.activation_bits

    @property
    def bops_effective(self) -> int | None:
        if self.macs_effective is None:
            return None
        return self.macs_effective * self.weight_bits * self.activation_bits

    @property
    def size_bytes(self) -> int:
        return sum(t.bytes + t.quant_param_bytes for t in self.tensors) + self.activation_param_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "config": self.config,
            "weight_bits": self.weight_bits,
            "activation_bits": self.activation_bits,
            "params": sum(t.elements for t in self.tensors),
            "params_kept": sum(t.kept for t in self.tensors),
            "size_bytes": self.size_bytes,
            "macs": self.macs,
            "macs_effective": self.macs_effective,
            "bops": self.bops,
            "bops_effective": self.bops_effective,
            "tensors": [t.to_dict() for t in self.tensors],
        }


@dataclass
class ModelCost:
    layers: list[LayerCost]
    other_params: int
    notes: list[str] = field(default_factory=list)

    def _tensors(self) -> list[TensorCost]:
        return [t for layer in self.layers for t in layer.tensors]

    @property
    def params_total(self) -> int:
        return sum(t.elements for t in self._tensors()) + self.other_params

    @property
    def params_kept(self) -> int:
        return sum(t.kept for t in self._tensors()) + self.other_params

    @property
    def params_nonzero(self) -> int:
        return sum(t.nonzero for t in self._tensors()) + self.other_params

    @property
    def quant_param_bytes(self) -> int:
        return sum(t.quant_param_bytes for t in self._tensors()) + sum(
            layer.activation_param_bytes for layer in self.layers
        )

    @property
    def size_bytes(self) -> int:
        return sum(layer.size_bytes for layer in self.layers) + SCALE_BYTES * self.other_params

    @property
    def size_bytes_sparse(self) -> int:
        tensors = sum(t.sparse_bytes + t.quant_param_bytes for t in self._tensors())
        acts = sum(layer.activation_param_bytes for layer in self.layers)
        return tensors + acts + SCALE_BYTES * self.other_params

    @property
    def size_bytes_fp32(self) -> int:
        return SCALE_BYTES * self.params_total

    def _total(self, values: list[int | None]) -> int | None:
        return (
            None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)
        )

    @property
    def macs(self) -> int | None:
        return self._total([layer.macs for layer in self.layers])

    @property
    def macs_effective(self) -> int | None:
        return self._total([layer.macs_effective for layer in self.layers])

    @property
    def bops(self) -> int | None:
        return self._total([layer.bops for layer in self.layers])

    @property
    def bops_effective(self) -> int | None:
        return self._total([layer.bops_effective for layer in self.layers])

    @property
    def bops_fp32(self) -> int | None:
        macs = self.macs
        return None if macs is None else macs * FLOAT_BITS * FLOAT_BITS

    def to_dict(self, *, layers: bool = True) -> dict[str, Any]:
        size = self.size_bytes
        out: dict[str, Any] = {
            "size_bytes": size,
            "size_bytes_fp32": self.size_bytes_fp32,
            "size_bytes_sparse": self.size_bytes_sparse,
            "compression_ratio": self.size_bytes_fp32 / size if size else None,
            "quant_param_bytes": self.quant_param_bytes,
            "params_total": self.params_total,
            "params_kept": self.params_kept,
            "params_nonzero": self.params_nonzero,
            "other_params": self.other_params,
            "macs": self.macs,
            "macs_effective": self.macs_effective,
            "bops": self.bops,
            "bops_effective": self.bops_effective,
            "bops_fp32": self.bops_fp32,
            "notes": list(self.notes),
        }
        if layers:
            out["layers"] = [layer.to_dict() for layer in self.layers]
        return out
