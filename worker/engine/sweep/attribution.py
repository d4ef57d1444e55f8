"""Cause attribution (issue 13): how much of a combined configuration's divergence each technique causes.

A configuration combines techniques when it is a `Schedule` of several stages (prune → quantize → low
rank) or a `Quantize` of weights and activations; a `Quantize` stage inside a schedule counts as two
techniques too. `attribute(...)` evaluates the sub-configurations that answer three questions, each
with the same comparison as the point itself (`compare_models` against the shared golden reference):

* **alone**: technique i applied by itself;
* **cumulative**: techniques 0..i applied in their order (a waterfall: step i = what technique i adds
  on top of the ones before it; the last step is the whole configuration);
* **leave one out**: every technique but i (total − that = what removing technique i would save).

Sub-configurations keep the techniques' order and values, so a leave-one-out of prune → w4 is w4 on the
unpruned weights. Each distinct subset is evaluated once (n techniques: at most 3n − 3 evaluations
besides the whole configuration, whose fidelity the caller passes in). `interaction` = total − Σ alone:
positive when the techniques compound, negative when they overlap (e.g. pruning zeroes weights whose
rounding error quantization would otherwise add).

Pure engine: no HTTP, SQL or Celery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from worker.engine.compression import Calibration, CompressibleModel, compressed
from worker.engine.compression.configs import (
    ActivationQuant,
    ChannelPrune,
    Config,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NMSparsity,
    NoiseInjection,
    Quantize,
    Schedule,
    Stage,
    WeightQuant,
)
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.sweep.golden import GoldenReference, fidelity_summary, point_spec

FIDELITY_KEYS = ("kl_mean", "mse", "top1_agreement", "accuracy_compressed")


@dataclass(frozen=True)
class Technique:
    """One technique of a combined configuration: stage `stage` of it, whole or one half of a Quantize."""

    stage: int
    part: str  # "all", "weights" or "activations"
    config: Stage

    @property
    def label(self) -> str:
        return technique_label(self.config)


def technique_label(config: Stage) -> str:
    """A short readable name: "prune 50 %", "4-bit weights per channel", "8-bit activations (minmax)"."""
    if isinstance(config, WeightQuant):
        if config.group_size is not None:
            return f"{config.bits}-bit weights in groups of {config.group_size}"
        return f"{config.bits}-bit weights" + (" per channel" if config.per_channel else "")
    if isinstance(config, ActivationQuant):
        return f"{config.bits}-bit activations ({config.calibration})"
    if isinstance(config, MagnitudePrune):
        return f"prune {config.sparsity * 100:g} %"
    if isinstance(config, ChannelPrune):
        return f"channel prune {config.sparsity * 100:g} % ({config.norm})"
    if isinstance(config, NMSparsity):
        return f"{config.n}:{config.m} sparsity"
    if isinstance(config, LowRank):
        return f"low rank {config.rank_ratio * 100:g} %"
    if isinstance(config, FloatCast):
        return config.dtype
    if isinstance(config, NoiseInjection):
        return f"{config.bits}-bit weight noise"
    return config.id


def techniques(config: Config | None) -> list[Technique]:
    """The techniques `config` combines, in the order they are applied."""
    if config is None:
        return []
    stages: tuple[Stage, ...] = config.stages if isinstance(config, Schedule) else (config,)
    found: list[Technique] = []
    for index, stage in enumerate(stages):
        if isinstance(stage, Quantize):
            if stage.weights is not None:
                found.append(Technique(index, "weights", stage.weights))
            if stage.activations is not None:
                found.append(Technique(index, "activations", stage.activations))
        else:
            found.append(Technique(index, "all", stage))
    return found


def sub_config(config: Config, keep: frozenset[int]) -> Config:
    """`config` with only the techniques whose indexes (into `techniques(config)`) are in `keep`, in their
    order; one remaining stage is returned bare, a Quantize half as a Quantize of that half."""
    found = techniques(config)
    if not keep or not keep <= set(range(len(found))):
        raise ValueError(f"keep must be a non-empty subset of 0..{len(found) - 1}, got {sorted(keep)}")
    stages: list[Stage] = []
    for stage_index in sorted({t.stage for t in found}):
        kept = [t for i, t in enumerate(found) if t.stage == stage_index and i in keep]
        if not kept:
            continue
        if kept[0].part == "all":
            stages.append(kept[0].config)
            continue
        parts = {t.part: t.config for t in kept}
        weights, activations = parts.get("weights"), parts.get("activations")
        assert weights is None or isinstance(weights, WeightQuant)
        assert activations is None or isinstance(activations, ActivationQuant)
        stages.append(Quantize(weights=weights, activations=activations))
    return stages[0] if len(stages) == 1 else Schedule(stages=tuple(stages))


def divergence_metric(fidelity: Mapping[str, Any]) -> str:
    """The figure that is split: mean KL for a classification output, else MSE."""
    return "kl_mean" if fidelity.get("kl_mean") is not None else "mse"


def attribute(
    golden: CompressibleModel,
    feeds: Mapping[str, np.ndarray],
    labels: np.ndarray | None,
    config: Config | None,
    full_fidelity: Mapping[str, Any],
    *,
    reference: GoldenReference,
    calibration: Calibration | None,
    params: FidelityParams,
    cache: dict[Any, Any] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any] | None:
    """The attribution document of `config` (None when it has fewer than two techniques).

    full_fidelity: the whole configuration's `fidelity_summary` (already measured by the point).
    on_progress(done, total) after each evaluation."""
    found = techniques(config)
    if config is None or len(found) < 2:
        return None
    n = len(found)
    everything = frozenset(range(n))
    wanted: list[frozenset[int]] = [frozenset({i}) for i in range(n)]
    wanted += [frozenset(range(k + 1)) for k in range(1, n - 1)]
    wanted += [everything - {i} for i in range(n)]
    subsets = [s for s in dict.fromkeys(wanted) if s != everything]
    measured: dict[frozenset[int], dict[str, Any]] = {everything: dict(full_fidelity)}
    notes: list[str] = []
    for done, subset in enumerate(subsets, start=1):
        spec = point_spec(golden, sub_config(config, subset))
        with compressed(golden, spec.plan, calibration, cache) as (runner, outcome):
            report = compare_models(reference, runner, feeds, labels, params)
        measured[subset] = fidelity_summary(report)
        notes.extend(f"{spec.id}: {note}" for note in outcome.notes)
        if on_progress is not None:
            on_progress(done, len(subsets))
    metric = divergence_metric(full_fidelity)

    def value(subset: frozenset[int]) -> float | None:
        v = measured[subset].get(metric)
        return None if v is None or not np.isfinite(v) else float(v)

    alone = [value(frozenset({i})) for i in range(n)]
    total = value(everything)
    interaction = (
        None
        if total is None or any(a is None for a in alone)
        else total - sum(a for a in alone if a is not None)
    )
    return {
        "metric": metric,
        "techniques": [{"label": t.label, "config": t.config.to_dict()} for t in found],
        "total": total,
        "alone": alone,
        "cumulative": [value(frozenset(range(k + 1))) for k in range(n)],
        "leave_one_out": [value(everything - {i}) for i in range(n)],
        "interaction": interaction,
        "evaluations": [
            {
                "techniques": sorted(subset),
                "fidelity": {key: measured[subset].get(key) for key in FIDELITY_KEYS},
            }
            for subset in sorted(measured, key=lambda s: (len(s), sorted(s)))
        ],
        "notes": sorted(set(notes)),
    }
