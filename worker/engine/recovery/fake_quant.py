"""Fake quantization of weights with a straight-through estimator (Bengio et al. 2013; the form of Jacob et
al. 2018 for quantization-aware training).

Forward: ŵ = Δ·(clamp(round(w/Δ) + z, qmin, qmax) − z) on the layer's grid (`common.grid_of`: the same
scale, zero point and integer range the plan's quantizer uses). Backward: ∂ŵ/∂w is taken as 1 where w lies
inside the grid's range [Δ·(qmin − z), Δ·(qmax − z)] and 0 outside (the clipped STE: a clamped weight
does not move the output, so it gets no gradient). The grid is recomputed from the current weights at every
forward pass and treated as a constant (no gradient through Δ), as the plan's quantizer recomputes it from
the final weights: for symmetric per-channel grids the range is then the weights' own range, every weight is
inside, and the STE is exactly the identity.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from worker.engine.compression import WeightQuant
from worker.engine.recovery.common import Grid, Layer, grid_of


class _RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, w: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, qmin: int, qmax: int
    ) -> torch.Tensor:
        lo, hi = (qmin - zero) * scale, (qmax - zero) * scale
        ctx.save_for_backward((w >= lo) & (w <= hi))
        q = torch.clamp(torch.round(w / scale) + zero, qmin, qmax)
        return (q - zero) * scale

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (inside,) = ctx.saved_tensors
        return grads[0] * inside.to(grads[0].dtype), None, None, None, None


def fake_quant_ste(w: torch.Tensor, grid: Grid) -> torch.Tensor:
    """`grid.fake(w)` forward, the clipped straight-through gradient backward (see the module docstring)."""
    result: torch.Tensor = _RoundSTE.apply(w, grid.scale, grid.zero, grid.qmin, grid.qmax)
    return result


class FakeQuantWeight(nn.Module):
    """A parametrization (torch.nn.utils.parametrize) that fake-quantizes a layer's weight with the STE on
    the grid the plan's WeightQuant gives the current weight."""

    def __init__(self, wq: WeightQuant) -> None:
        super().__init__()
        self.wq = wq

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return fake_quant_ste(w, grid_of(w.detach().to(torch.float32), self.wq))


def attach(layers: dict[str, tuple[Layer, WeightQuant]]) -> None:
    for module, wq in layers.values():
        parametrize.register_parametrization(module, "weight", FakeQuantWeight(wq))


def detach_quantized(layers: dict[str, tuple[Layer, WeightQuant]]) -> None:
    """Remove the parametrizations, leaving each layer's weight as its fake-quantized value (on the grid)."""
    for module, _ in layers.values():
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
