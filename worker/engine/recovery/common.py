"""What the recovery methods share: the layers they work on, the grid each layer is quantized to, and
activations captured with forward hooks.

Recovery works on a float torch module R (a private copy of the golden model) whose weights the methods
rewrite; "the compressed model" is always R compressed by the unchanged plan (`compressed_handle`), so a
recovered model is an ordinary float model plus the configuration that compresses it. AdaRound leaves
weights that are fixed points of the plan's quantizer (see adaround), so re-compressing R keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from worker.engine.compression import CompressibleModel, Config, WeightQuant
from worker.engine.compression.model import Feeds, batches
from worker.engine.errors import EngineError

Progress = Callable[[str, int, int, str], None]
"""(method, step done, steps in the method, message); may raise JobCancelled between steps."""


class RecoveryError(EngineError, ValueError):
    """A recovery cannot run on this model or configuration (the text says why)."""


def no_progress(_method: str, _done: int, _total: int, _message: str) -> None:
    return None


@dataclass(frozen=True)
class Grid:
    """The integer grid a weight is quantized to: w ≈ scale·(q − zero), q ∈ [qmin, qmax]; scale and zero
    have one entry per output channel (per channel) or are broadcast scalars (per tensor)."""

    scale: torch.Tensor
    zero: torch.Tensor
    qmin: int
    qmax: int

    def fake(self, w: torch.Tensor) -> torch.Tensor:
        q = torch.clamp(torch.round(w / self.scale) + self.zero, self.qmin, self.qmax)
        return (q - self.zero) * self.scale


def weight_quant_of(config: Config | None) -> WeightQuant | None:
    """The WeightQuant that gives a layer's final weights, when nothing after it rewrites them."""
    if config is None:
        return None
    from worker.engine.sweep.runtime_forms import last_weight_quant

    found = last_weight_quant(config)
    return None if found is None else found[1]


def grid_of(w: torch.Tensor, wq: WeightQuant) -> Grid:
    """The grid `ops.fake_quant_weight` uses for `w` (channels along axis 0), shaped to broadcast."""
    from worker.engine.compression.ops import weight_qparams

    scale, zero, qmin, qmax = weight_qparams(w, wq.bits, wq.symmetric, wq.per_channel, 0)
    shape = (-1,) + (1,) * (w.dim() - 1) if wq.per_channel and scale.dim() else ()
    return Grid(scale.reshape(shape), zero.to(torch.float32).reshape(shape), qmin, qmax)


Layer = nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d


def linear_layers(module: nn.Module, names: Sequence[str]) -> dict[str, Layer]:
    """The Conv1d/2d/3d and Linear modules among `names` (the handle's compressible layers)."""
    found: dict[str, Layer] = {}
    for name in names:
        try:
            sub = module.get_submodule(name)
        except AttributeError:
            continue
        if isinstance(sub, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d):
            found[name] = sub
    return found


def execution_order(module: nn.Module, layers: Mapping[str, Layer], feeds: Feeds) -> list[str]:
    """`layers` in the order a forward pass on one sample calls them (each once; later calls ignored)."""
    order: list[str] = []
    handles = [
        sub.register_forward_hook(
            lambda _m, _a, _o, name=name: order.append(name) if name not in order else None
        )
        for name, sub in layers.items()
    ]
    try:
        with torch.no_grad():
            module(*_tensors(first_batch(feeds, 1)))
    finally:
        for handle in handles:
            handle.remove()
    return order


def first_batch(feeds: Feeds, size: int) -> dict[str, np.ndarray]:
    return {name: np.asarray(array)[:size] for name, array in feeds.items()}


def _tensors(batch: Mapping[str, np.ndarray]) -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(array)) for array in batch.values()]


@contextmanager
def capturing(
    module: nn.Module, layers: Mapping[str, Layer], *, inputs: bool = False
) -> Iterator[dict[str, list[torch.Tensor]]]:
    """Record each layer's first input (inputs=True) or its output, once per call, detached."""
    seen: dict[str, list[torch.Tensor]] = {name: [] for name in layers}

    def hook(name: str) -> Callable[..., None]:
        def record(_m: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
            seen[name].append((args[0] if inputs else output).detach().clone())

        return record

    handles = [sub.register_forward_hook(hook(name)) for name, sub in layers.items()]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()


def run_all(module: nn.Module, feeds: Feeds, batch_size: int) -> None:
    with torch.no_grad():
        for batch in batches(feeds, batch_size):
            module(*_tensors(batch))


def channel_means(outputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """Mean of each output channel (axis 1, or the last axis of a Linear's 2-d output), float64."""
    total: torch.Tensor | None = None
    count = 0
    for out in outputs:
        x = out.to(torch.float64)
        moved = x.movedim(1, -1) if x.dim() > 2 else x
        flat = moved.reshape(-1, moved.shape[-1])
        part = flat.sum(dim=0)
        total = part if total is None else total + part
        count += flat.shape[0]
    if total is None:
        raise RecoveryError("the layer never ran on the calibration set")
    return total / count


def compressed_handle(recovered: nn.Module, input_names: Sequence[str]) -> CompressibleModel:
    """A CompressibleModel of the recovered float module (a deep copy: `recovered` stays untouched)."""
    from worker.engine.compression.torch_backend import TorchCompressible

    return TorchCompressible.from_module(recovered, list(input_names))
