"""Schedules and mixed-precision plans: what a sensitivity job does with a scan besides the scan itself
(split from `sensitivity`, which re-exports every name here).

`compression_schedule` applies a schedule's stages one after the other and measures each;
`plan_mixed_precision` chooses one bit width per layer from an "only" scan under a size budget
(scipy.optimize.milp), and `measure_plan` compresses every layer of a plan at once to measure it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from worker.engine.compression import as_compressible
from worker.engine.compression.configs import Config, Schedule, config_from_dict, weight_bits
from worker.engine.compression.divergence import Divergence, golden_outputs, measure
from worker.engine.compression.mixed_precision import allocate
from worker.engine.compression.model import Calibration, CompressibleModel, Feeds, compressed, first_sample
from worker.engine.errors import EngineError

if TYPE_CHECKING:
    from worker.engine.sensitivity.result import Progress, SensitivityResult


# ------------------------------------------------------------------------------------- schedules


@dataclass(frozen=True)
class ScheduleStage:
    """Fidelity after applying stages[0..index] of a schedule to every chosen layer."""

    index: int
    stage: str
    cumulative: str
    divergence: Divergence
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "stage": self.stage,
            "cumulative": self.cumulative,
            **self.divergence.to_dict(),
            "notes": self.notes,
        }


def compression_schedule(
    golden: Any,
    calibration_feeds: Feeds,
    schedule: Schedule | Mapping[str, Any],
    *,
    layers: Sequence[str] | None = None,
    batch_size: int = 64,
    on_progress: Progress | None = None,
) -> list[ScheduleStage]:
    """Apply the schedule's stages one after the other to every layer (or `layers`) and record the
    fidelity after each stage (stage k = stages 1..k applied in order)."""
    parsed = schedule if isinstance(schedule, Schedule) else config_from_dict(schedule)
    if not isinstance(parsed, Schedule):
        raise EngineError(f"expected a schedule, got a {type(parsed).__name__}")
    model = as_compressible(golden)
    model.prepare(first_sample(calibration_feeds))
    names = list(layers) if layers is not None else [layer.name for layer in model.layers()]
    model.check_layers(names)
    reference = golden_outputs(model, calibration_feeds, batch_size)
    calibration = Calibration(model, calibration_feeds, batch_size)
    stages = []
    for index, stage in enumerate(parsed.stages):
        cumulative = Schedule(parsed.stages[: index + 1])
        with compressed(model, dict.fromkeys(names, cumulative), calibration) as (runner, outcome):
            divergence = measure(runner, calibration_feeds, reference)
        stages.append(ScheduleStage(index, stage.id, cumulative.id, divergence, list(outcome.notes)))
        if on_progress is not None:
            on_progress(index + 1, len(parsed.stages))
    return stages


# ------------------------------------------------------------------------------- mixed precision


@dataclass(frozen=True)
class MixedPrecisionPlan:
    """One config (bit width) per layer, chosen by `plan_mixed_precision`."""

    assignments: dict[str, str]
    """layer → config id."""
    bits: dict[str, int]
    predicted_kl: float
    """Σ of the chosen cells' KL means (layer-wise "only" sensitivities)."""
    size_bytes: float
    budget_bytes: float
    configs: dict[str, Config]
    notes: list[str] = field(default_factory=list)

    def plan(self) -> dict[str, Config]:
        return {layer: self.configs[cid] for layer, cid in self.assignments.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "assignments": dict(self.assignments),
            "bits": dict(self.bits),
            "predicted_kl": self.predicted_kl,
            "size_bytes": self.size_bytes,
            "budget_bytes": self.budget_bytes,
            "configs": {cid: c.to_dict() for cid, c in self.configs.items()},
            "notes": list(self.notes),
        }


def plan_mixed_precision(
    result: SensitivityResult, budget_bytes: float, *, configs: Sequence[str] | None = None
) -> MixedPrecisionPlan:
    """Choose one bit-width config per layer minimising the predicted KL (sum of per-layer "only" KLs)
    with Σ weight params × bits / 8 ≤ budget_bytes, exactly (scipy.optimize.milp). Options: the result's
    configs that have a weight bit width (WeightQuant, Quantize with weights, NoiseInjection, FloatCast as
    16 bits), or those named in `configs`. Biases and other parameters are not in the budget. Layers that
    share a tensor get the same option, and the tensor counts once."""
    if result.mode != "only":
        raise EngineError("mixed precision needs an 'only' sensitivity scan (each layer compressed alone)")
    if result.output_kind != "classification":
        raise EngineError("mixed precision minimises KL and needs a classification output")
    by_id = {c.id: c for c in result.configs}
    wanted = (
        list(configs) if configs is not None else [c.id for c in result.configs if weight_bits(c) is not None]
    )
    unknown = [cid for cid in wanted if cid not in by_id or weight_bits(by_id[cid]) is None]
    if unknown or not wanted:
        raise EngineError(
            f"options must be bit-width configs of the result; not usable: {unknown or 'none given'}"
        )
    missing = [name for name in result.layer_names if name not in result.computed_layers]
    if missing:
        raise EngineError(f"the result lacks layers {missing}; merge every chunk first")
    names = result.layer_names
    index = {name: i for i, name in enumerate(names)}
    params = [int(layer["weight_params"]) for layer in result.layers]
    bits = [int(weight_bits(by_id[cid]) or 0) for cid in wanted]
    divergence = [[result.cells[(name, cid)].divergence.kl_mean for cid in wanted] for name in names]
    ties = sorted(
        {(min(index[n], index[o]), max(index[n], index[o])) for n in names for o in _shared(result, n)}
    )
    allocation = allocate(divergence, params, bits, budget_bytes, ties)
    assignments = {name: wanted[k] for name, k in zip(names, allocation.choice, strict=True)}
    notes = [
        f"{a} and {b} share a tensor: they take the same bit width"
        for a, b in ((names[i], names[j]) for i, j in ties)
    ]
    return MixedPrecisionPlan(
        assignments=assignments,
        bits={name: bits[k] for name, k in zip(names, allocation.choice, strict=True)},
        predicted_kl=allocation.objective,
        size_bytes=allocation.size_bytes,
        budget_bytes=float(budget_bytes),
        configs={cid: by_id[cid] for cid in wanted},
        notes=notes,
    )


def _shared(result: SensitivityResult, name: str) -> list[str]:
    layer = next(layer for layer in result.layers if layer["name"] == name)
    return [other for other in layer.get("shared_with", []) if other in result.layer_names]


@dataclass(frozen=True)
class PlanMeasurement:
    predicted_kl: float | None
    measured: Divergence
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "predicted_kl": self.predicted_kl,
            "measured": self.measured.to_dict(),
            "notes": list(self.notes),
        }


def measure_plan(
    golden: Any,
    calibration_feeds: Feeds,
    plan: MixedPrecisionPlan | Mapping[str, Config],
    *,
    batch_size: int = 64,
    activation_feeds: Feeds | None = None,
) -> PlanMeasurement:
    """Compress every layer of the plan at once and measure the real divergence (vs the prediction).
    activation_feeds: the samples activation ranges are calibrated on (disjoint from the measured
    `calibration_feeds`); None: the measured samples themselves."""
    model: CompressibleModel = as_compressible(golden)
    model.prepare(first_sample(calibration_feeds))
    configs = plan.plan() if isinstance(plan, MixedPrecisionPlan) else dict(plan)
    reference = golden_outputs(model, calibration_feeds, batch_size)
    calibration = Calibration(
        model, calibration_feeds if activation_feeds is None else activation_feeds, batch_size
    )
    with compressed(model, configs, calibration) as (runner, outcome):
        measured = measure(runner, calibration_feeds, reference)
    predicted = plan.predicted_kl if isinstance(plan, MixedPrecisionPlan) else None
    return PlanMeasurement(predicted, measured, list(outcome.notes))
