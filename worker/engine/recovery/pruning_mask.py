"""Fine-tuning under the pruning mask (issue 33, "Recovery as the domain notes mean it"): the surviving weights
of a pruned layer train, the pruned ones stay exactly zero, so the recovered model still prunes to the same
structure (and its physical pruning still removes the same channels).

A layer's mask is its weight's nonzero pattern when training starts (the plan's pruning already applied). Two
guards keep it: a gradient hook zeroes the pruned entries' gradient (so Adam's moments for them stay 0 and its
update is 0), and `reapply` multiplies the weights by the mask after every optimiser step (weight decay or any
optimiser that moves a zero-gradient entry would otherwise let it regrow)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from worker.engine.compression.configs import ChannelPrune, Config, MagnitudePrune, NMSparsity, Schedule

PRUNE_TYPES = (MagnitudePrune, ChannelPrune, NMSparsity)


def prunes(config: Config) -> bool:
    """Whether the config zeroes weights (alone, or as a stage of a schedule)."""
    stages = config.stages if isinstance(config, Schedule) else (config,)
    return any(isinstance(stage, PRUNE_TYPES) for stage in stages)


class PruningMasks:
    """The masks of the pruned layers' weights (by parameter), held for one training run."""

    def __init__(self, parameters: Mapping[str, nn.Parameter]) -> None:
        self.masks = {name: (p.detach() != 0) for name, p in parameters.items()}
        self._parameters = dict(parameters)
        self._hooks = [
            p.register_hook(lambda grad, mask=self.masks[name]: grad * mask) for name, p in parameters.items()
        ]

    def reapply(self) -> None:
        with torch.no_grad():
            for name, parameter in self._parameters.items():
                parameter.mul_(self.masks[name])

    def remove(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    def pruned_entries(self) -> int:
        return int(sum((~mask).sum() for mask in self.masks.values()))
