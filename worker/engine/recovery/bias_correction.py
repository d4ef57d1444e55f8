"""Empirical bias correction (Nagel et al. 2019, "Data-Free Quantization", §4.2, measured form): each
compressed layer's bias is shifted by minus the mean output error E[ŷ − y] per output channel, measured
on the calibration set, layer by layer in execution order, each layer's error measured with the earlier
corrections in place (a correction changes every later layer's input)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from worker.engine.compression import Calibration, Config, compressed
from worker.engine.compression.model import Feeds, batches, first_sample
from worker.engine.recovery.common import (
    Progress,
    capturing,
    channel_means,
    compressed_handle,
    linear_layers,
    no_progress,
    run_all,
)


@dataclass
class BiasCorrectionResult:
    shifts: dict[str, list[float]] = field(default_factory=dict)
    """layer → the shift added to its bias (minus the measured mean error), per output channel."""
    notes: list[str] = field(default_factory=list)


def mean_outputs_compressed(
    recovered: nn.Module,
    input_names: Sequence[str],
    plan: Mapping[str, Config],
    layer: str,
    feeds: Feeds,
    batch_size: int,
) -> torch.Tensor:
    """Mean output per channel of `layer` in `recovered` compressed by `plan` (activation transforms of the
    layer included: they are part of what the next layer sees)."""
    handle = compressed_handle(recovered, input_names)
    handle.prepare(first_sample(feeds))
    module = handle.module  # type: ignore[attr-defined]
    with (
        compressed(handle, plan, Calibration(handle, feeds, batch_size)) as (runner, _),
        capturing(module, {layer: module.get_submodule(layer)}) as seen,
    ):
        for batch in batches(feeds, batch_size):
            runner.run(batch)
    return channel_means(seen[layer])


def correct_biases(
    recovered: nn.Module,
    input_names: Sequence[str],
    plan: Mapping[str, Config],
    order: Sequence[str],
    feeds: Feeds,
    *,
    batch_size: int = 64,
    reference: nn.Module | None = None,
    progress: Progress = no_progress,
) -> BiasCorrectionResult:
    """Shift the biases of `recovered` in place (see the module docstring); layers without a bias are
    skipped (noted). The float targets are the outputs of `reference` (the float model the compressed one
    should match: after AdaRound, `recovered`'s weights are already the quantized ones), by default those
    of `recovered` itself before any correction."""
    result = BiasCorrectionResult()
    reference = copy.deepcopy(recovered if reference is None else reference).eval()
    layers = linear_layers(reference, [name for name in order if name in plan])
    with capturing(reference, layers) as seen:
        run_all(reference, feeds, batch_size)
    golden_means = {name: channel_means(seen[name]) for name in layers}
    names = [name for name in order if name in layers]
    for index, name in enumerate(names):
        progress("bias_correction", index, len(names), f"bias correction: {name}")
        target = recovered.get_submodule(name)
        bias = getattr(target, "bias", None)
        if not isinstance(bias, torch.Tensor):
            result.notes.append(f"{name}: no bias to correct")
            continue
        error = (
            mean_outputs_compressed(recovered, input_names, plan, name, feeds, batch_size)
            - golden_means[name]
        )
        with torch.no_grad():
            bias -= error.to(bias.dtype)
        result.shifts[name] = [-float(e) for e in error]
    progress("bias_correction", len(names), len(names), "bias correction done")
    return result
