"""AdaRound (Nagel et al. 2020, "Up or Down? Adaptive Rounding for Post-Training Quantization").

Per layer, each weight is floor(w/Δ) or floor(w/Δ)+1 on the layer's own quantization grid; which one is
learned: Ŵ = Δ·clamp(floor(w/Δ) + h(V) + z, qmin, qmax) − Δ·z with the rectified sigmoid
h(V) = clamp(sigmoid(V)·(ζ−γ) + γ, 0, 1), ζ = 1.1, γ = −0.1, minimising

    ‖W x − Ŵ x‖² (mean over the golden inputs x of that layer) + λ Σ (1 − |2h(V) − 1|^β)

with β annealed from 20 to 2 after a warm-up (the regulariser then pushes every h to 0 or 1). V starts
where h(V) equals the fractional part (round-to-nearest's soft form). The result is hard-rounded (h ≥ ½),
so every weight stays within one step of nearest. The elements holding each channel's range (its min and
max) keep nearest rounding: the plan's quantizer recomputes Δ from the weights' range, and these make the
recovered weights a fixed point of it (re-compressing the recovered model changes nothing).

The optimisation runs the layer as its own torch op (F.linear / F.convN with the module's stride,
padding, dilation and groups) on captured inputs, so any Conv/Linear works the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from worker.engine.compression import Config
from worker.engine.compression.model import Feeds
from worker.engine.recovery.common import (
    Grid,
    Layer,
    Progress,
    RecoveryError,
    capturing,
    grid_of,
    linear_layers,
    no_progress,
    run_all,
    weight_quant_of,
)

ZETA, GAMMA = 1.1, -0.1


@dataclass(frozen=True)
class AdaRoundParams:
    iterations: int = 1200
    """Adam steps per layer (the paper's 10k fits a GPU). On the digits CNN at 4 bits per channel, 600 gave
    0.37x RTN's held-out KL in one environment and 0.58x in another (a retrained CNN after a dependency
    update); 1200 gives 0.42x there (seeds 1 and 2 with 1024 samples: 0.30x, 0.22x), ~1 s per layer."""
    batch_size: int = 64
    """Calibration inputs per step (rows for a Linear, images for a Conv)."""
    learning_rate: float = 1e-2
    reg_weight: float = 0.01
    """λ of the rounding regulariser."""
    beta_start: float = 20.0
    beta_end: float = 2.0
    warmup: float = 0.2
    """Fraction of the iterations without the regulariser."""
    max_samples: int = 512
    """Calibration samples whose layer inputs are kept."""
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "iterations": 1 <= self.iterations <= 100_000,
            "batch_size": 1 <= self.batch_size <= 65_536,
            "learning_rate": 0 < self.learning_rate <= 1,
            "reg_weight": 0 <= self.reg_weight <= 100,
            "beta_start": 1 <= self.beta_end <= self.beta_start <= 1000,
            "warmup": 0 <= self.warmup < 1,
            "max_samples": 1 <= self.max_samples <= 1_000_000,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise RecoveryError(f"AdaRound parameters out of range: {bad} ({self})")


@dataclass
class LayerRounding:
    name: str
    flipped: int
    """Weights rounded the other way than nearest."""
    total: int
    loss_nearest: float
    loss_adaround: float
    """‖W x − Ŵ x‖² mean on the captured inputs, round-to-nearest vs the learned rounding."""


@dataclass
class AdaRoundResult:
    layers: list[LayerRounding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _op(module: Layer, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    if isinstance(module, nn.Linear):
        return F.linear(x, w)
    conv: Any = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[w.dim() - 2]
    result: torch.Tensor = conv(x, w, None, module.stride, module.padding, module.dilation, module.groups)
    return result


def h_of(v: torch.Tensor) -> torch.Tensor:
    return torch.clamp(torch.sigmoid(v) * (ZETA - GAMMA) + GAMMA, 0.0, 1.0)


def _range_holders(w: torch.Tensor, per_channel: bool) -> torch.Tensor:
    """Elements equal to their channel's (or the tensor's) min or max."""
    flat = w.reshape(w.shape[0], -1) if per_channel else w.reshape(1, -1)
    mask = (flat == flat.amax(dim=1, keepdim=True)) | (flat == flat.amin(dim=1, keepdim=True))
    return mask.reshape(w.shape)


def round_layer(
    module: Layer, inputs: torch.Tensor, grid: Grid, params: AdaRoundParams, per_channel: bool
) -> tuple[torch.Tensor, LayerRounding]:
    """The learned weights of one layer (on the grid) and how they differ from nearest rounding."""
    w = module.weight.detach().to(torch.float32)
    scaled = w / grid.scale
    floor = torch.floor(scaled)
    rest = scaled - floor
    v0 = -torch.log((ZETA - GAMMA) / (rest.clamp(1e-4, 1 - 1e-4) - GAMMA) - 1)
    v = v0.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([v], lr=params.learning_rate)
    generator = torch.Generator().manual_seed(params.seed)
    with torch.no_grad():
        target_all = _op(module, inputs, w)

    def weights(h: torch.Tensor) -> torch.Tensor:
        return (torch.clamp(floor + h + grid.zero, grid.qmin, grid.qmax) - grid.zero) * grid.scale

    warm = int(params.warmup * params.iterations)
    n = inputs.shape[0]
    for step in range(params.iterations):
        index = torch.randint(0, n, (min(params.batch_size, n),), generator=generator)
        x, target = inputs[index], target_all[index]
        h = h_of(v)
        loss = (_op(module, x, weights(h)) - target).pow(2).sum(dim=1).mean()
        if step >= warm:
            progress = (step - warm) / max(1, params.iterations - warm)
            beta = params.beta_end + 0.5 * (params.beta_start - params.beta_end) * (
                1 + math.cos(math.pi * progress)
            )
            loss = loss + params.reg_weight * (1 - (2 * h - 1).abs().pow(beta)).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        up = (h_of(v) >= 0.5).to(torch.float32)
        nearest = torch.round(scaled) - floor
        up = torch.where(_range_holders(w, per_channel), nearest, up)
        learned = weights(up)
        rtn = grid.fake(w)

        def err(candidate: torch.Tensor) -> float:
            return float((_op(module, inputs, candidate) - target_all).pow(2).sum(dim=1).mean())

        report = LayerRounding(
            name="",
            flipped=int((up != nearest).sum()),
            total=int(w.numel()),
            loss_nearest=err(rtn),
            loss_adaround=err(learned),
        )
    return learned, report


def adaround(
    recovered: nn.Module,
    plan: Mapping[str, Config],
    order: Sequence[str],
    feeds: Feeds,
    params: AdaRoundParams | None = None,
    *,
    batch_size: int = 64,
    progress: Progress = no_progress,
) -> AdaRoundResult:
    """Replace the weights of every weight-quantized Conv/Linear layer of `recovered` (in place) by their
    learned rounding. The inputs of each layer come from the module's own float forward pass."""
    params = params or AdaRoundParams()
    result = AdaRoundResult()
    wanted: dict[str, Layer] = {}
    for name, module in linear_layers(recovered, [n for n in order if n in plan]).items():
        if weight_quant_of(plan[name]) is None:
            result.notes.append(f"{name}: {plan[name].id} has no final integer weight grid; left as it is")
        else:
            wanted[name] = module
    if not wanted:
        raise RecoveryError(
            "AdaRound needs a configuration that quantizes the weights of a Conv or Linear layer"
        )
    limited = {name: array[: params.max_samples] for name, array in feeds.items()}
    with capturing(recovered, wanted, inputs=True) as seen:
        run_all(recovered, limited, batch_size)
    inputs = {name: torch.cat(chunks) for name, chunks in seen.items()}
    names = [name for name in order if name in wanted]
    for index, name in enumerate(names):
        progress("adaround", index, len(names), f"AdaRound: {name}")
        module = wanted[name]
        wq = weight_quant_of(plan[name])
        assert wq is not None
        grid = grid_of(module.weight.detach().to(torch.float32), wq)
        x = inputs[name]
        if isinstance(module, nn.Linear):
            x = x.reshape(-1, x.shape[-1])
        learned, report = round_layer(module, x, grid, params, wq.per_channel)
        report.name = name
        with torch.no_grad():
            module.weight.copy_(learned.to(module.weight.dtype))
        result.layers.append(report)
    progress("adaround", len(names), len(names), "AdaRound done")
    return result
