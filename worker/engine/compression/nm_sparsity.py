"""N:M semi-structured sparsity (issue 33): in every group of m consecutive weights along the input
dimension, keep the n largest |w| and zero the rest (2:4 is what NVIDIA's sparse tensor cores run).

Groups follow NVIDIA's ASP convention: along the input channels, for each output channel and (for a
convolution) each kernel position — the weight is moved to (out, kernel…, in) and cut into groups of m along
`in`. A row whose length is not a multiple of m keeps its last, partial group dense. Ties keep the lower
index (a stable sort). The model stays dense float32 in every runtime Kneeboard measures (onnxruntime CPU
has no N:M kernels), so a point with this config is marked "needs sparse kernels" and claims no speed or
size: its fidelity is what the sparsity costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from worker.engine.compression.config_fields import check_int, fail, fields_of


@dataclass(frozen=True)
class NMSparsity:
    """Keep `n` of every `m` consecutive weights along the input dimension (2:4 by default)."""

    n: int = 2
    m: int = 4
    type: ClassVar[str] = "nm_sparsity"

    def __post_init__(self) -> None:
        check_int("NMSparsity", "m", self.m, 2, 16)
        check_int("NMSparsity", "n", self.n, 1, 15)
        if self.n >= self.m:
            raise fail("NMSparsity", "n", f"less than m ({self.m})", self.n)

    @property
    def id(self) -> str:
        return f"sparse-{self.n}of{self.m}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "n": self.n, "m": self.m}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NMSparsity:
        return cls(**fields_of("NMSparsity", data, {"n", "m"}))


def nm_prune(w: torch.Tensor, n: int, m: int, out_axis: int = 0) -> torch.Tensor:
    """`w` with all but the n largest |w| of each group of m input weights zeroed (see the module docstring).
    `out_axis`: the output-channel axis (0 for Conv / Linear / RNN weights, 1 for an ONNX MatMul's (in, out))."""
    x = w.detach().to(torch.float32).clone()
    if x.ndim < 2:
        return x
    out_axis %= x.ndim
    in_axis = 1 if out_axis == 0 else 0
    rest = [a for a in range(x.ndim) if a not in (out_axis, in_axis)]
    moved = x.permute(out_axis, *rest, in_axis)  # (out, kernel…, in)
    length = moved.shape[-1]
    full = length - length % m
    if full == 0:
        return x
    groups = moved[..., :full].reshape(*moved.shape[:-1], full // m, m)
    order = torch.sort(groups.abs(), dim=-1, descending=True, stable=True).indices
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, order[..., :n], True)
    pruned = moved.clone()
    pruned[..., :full] = (groups * mask).reshape(*moved.shape[:-1], full)
    inverse = [0] * x.ndim
    for position, axis in enumerate((out_axis, *rest, in_axis)):
        inverse[axis] = position
    return pruned.permute(*inverse).contiguous()
