"""One point of a sweep: a whole-model compression configuration, its fidelity, cost and runtime form.

`evaluate_point(golden, feeds, labels, config_or_plan, ...)` compresses a prepared `CompressibleModel`
by a config applied to every compressible layer, or by a per-layer plan (layer → config, e.g.
`MixedPrecisionPlan.plan()`), compares it with the golden model through `fidelity.compare_models`
(no metric is computed here), counts its cost (`cost.model_cost`) and says how a real runtime can
execute it (`runtime.runtime_support`). With `export_dir` it also writes the point's ONNX files
(`export.export_point`) and measures them. The types a point shares with its export (PointSpec,
GoldenReference, SweepPoint, fidelity_summary, json_safe) are in `golden`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression import Calibration, CompressibleModel, Config, compressed
from worker.engine.compression.model import Feeds, first_sample
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import FidelityParams, bind_inputs, compare_models
from worker.engine.sweep.cost import model_cost
from worker.engine.sweep.export import export_point
from worker.engine.sweep.export_nbits import NothingToQuantize
from worker.engine.sweep.golden import (
    IDENTITY_ID,
    ConfigOrPlan,
    GoldenReference,
    PointSpec,
    SweepPoint,
    _null_notes,
    fidelity_summary,
    json_safe,
    point_spec,
)
from worker.engine.sweep.runtime_forms import demote, float_part, runtime_support
from worker.engine.sweep.structured_export import has_channel_prune, prune_proto, real_cost

if TYPE_CHECKING:
    from worker.engine.sensitivity.scan import MixedPrecisionPlan

__all__ = [
    "IDENTITY_ID",
    "ConfigOrPlan",
    "GoldenReference",
    "PointSpec",
    "SweepPoint",
    "evaluate_point",
    "evaluate_points",
    "fidelity_summary",
    "json_safe",
    "point_spec",
]


def evaluate_point(
    golden: CompressibleModel,
    feeds: Feeds,
    labels: np.ndarray | None,
    config_or_plan: ConfigOrPlan | MixedPrecisionPlan,
    *,
    batch_size: int = 64,
    calibration: Calibration | Feeds | None = None,
    export_dir: Path | None = None,
    reference: GoldenReference | None = None,
    fidelity_params: FidelityParams | None = None,
    cache: dict[Any, Any] | None = None,
    layers: bool = True,
) -> SweepPoint:
    """Evaluate one whole-model configuration on `feeds` (named after the model inputs).

    golden: a CompressibleModel (prepared here on the first sample if it was not). calibration: a
    `Calibration` (shared across the points of a sweep: activation statistics are computed once), or
    calibration feeds, or None to calibrate on `feeds` themselves (noted). reference: a `GoldenReference`
    on the same feeds and batch size, shared across points. cache: a dict kept across points for
    `compress_tensors`. export_dir: write the point's ONNX exports there (the simulated one and, when
    the config has one, the real runtime form) and measure them. layers: include the per-layer cost.
    """
    params = fidelity_params or FidelityParams(batch_size=batch_size)
    if params.batch_size != batch_size:
        raise EngineError("fidelity_params.batch_size must equal batch_size")
    golden.prepare(first_sample(bind_inputs(feeds, golden.inputs)))
    spec = point_spec(golden, config_or_plan)
    notes: list[str] = []
    if reference is None:
        reference = GoldenReference(golden, feeds, batch_size)
    elif reference.model is not golden or reference.batch_size != batch_size:
        raise EngineError("the golden reference was built for another model or batch size")
    if calibration is None:
        calibration = Calibration(golden, bind_inputs(feeds, golden.inputs), batch_size)
        if _needs_calibration(spec.plan):
            notes.append(
                "calibrated (activation ranges, channel importance) on the evaluation feeds themselves"
            )
    elif not isinstance(calibration, Calibration):
        calibration = Calibration(golden, bind_inputs(calibration, golden.inputs), batch_size)
    with compressed(golden, spec.plan, calibration, cache) as (runner, outcome):
        report = compare_models(reference, runner, feeds, labels, params, sample_views=False)  # none stored
        cost = model_cost(golden, spec.plan, outcome.tensors)
    notes.extend(outcome.notes)
    fidelity = fidelity_summary(report)
    notes.extend(_null_notes(fidelity, "fidelity", labels is not None or "labels" in feeds))
    support = runtime_support(spec.plan, [layer.name for layer in golden.layers()])
    point = SweepPoint(
        spec=spec,
        fidelity=fidelity,
        cost=cost.to_dict(layers=layers),
        runtime=support.to_dict(),
        notes=notes,
        report=report,
    )
    if export_dir is not None:
        kinds: list[str] = ["simulated"]
        if support.preferred is not None and support.preferred not in ("fp32", "simulated-float"):
            kinds.append(support.preferred)
        for kind in kinds:
            try:
                _, manifest = export_point(
                    golden,
                    spec.plan,
                    Path(export_dir),
                    kind=kind,
                    calibration=calibration,
                    eval_feeds=feeds,
                    labels=labels,
                    point=point,
                    reference=reference,
                    batch_size=batch_size,
                    fidelity_params=params,
                )
            except NothingToQuantize as exc:  # e.g. int4 groups on a Conv-only CNN: the float file stands
                point.runtime = demote(support, kind, str(exc)).to_dict()
                point.notes.append(str(exc))
                continue
            point.exports.append(manifest)
    if has_channel_prune(spec.plan):
        point.cost = _physically_pruned_cost(golden, spec.plan, point, calibration)
    return point


def _physically_pruned_cost(
    golden: CompressibleModel, plan: Mapping[str, Config], point: SweepPoint, calibration: Calibration
) -> dict[str, Any]:
    """The point's cost counted on its physically pruned export: the exported one's record, or (without an
    export folder) the simulated float graph pruned in memory."""
    structured = next(
        (m["structured_pruning"] for m in reversed(point.exports) if m.get("structured_pruning")), None
    )
    if structured is None:
        from worker.engine.sweep.export import _builder

        float_plan = {name: part for name, config in plan.items() if (part := float_part(config))}
        try:
            proto = _builder(golden, calibration, [])(float_plan)
        except EngineError as exc:  # e.g. a torch model the ONNX exporter cannot trace: simulated counts stay
            point.notes.append(
                f"channels not removed from a graph to count them ({exc}); cost is the simulation's"
            )
            return point.cost
        structured = prune_proto(proto, calibration.feeds)
    return real_cost(point.cost, plan, structured)


def evaluate_points(
    golden: CompressibleModel,
    feeds: Feeds,
    labels: np.ndarray | None,
    configs: Sequence[ConfigOrPlan],
    *,
    batch_size: int = 64,
    calibration_feeds: Feeds | None = None,
    export_dir: Path | None = None,
    fidelity_params: FidelityParams | None = None,
) -> list[SweepPoint]:
    """`evaluate_point` for several configurations, sharing the golden reference, the activation
    statistics and the compressed-tensor cache. fidelity_params: the comparison's options (a task and its
    `task_options`; `feeds` then carry the task's annotations too, e.g. `masks`, beside the model inputs)."""
    golden.prepare(first_sample(bind_inputs(feeds, golden.inputs)))
    reference = GoldenReference(golden, feeds, batch_size)
    calibration = Calibration(
        golden,
        bind_inputs(calibration_feeds if calibration_feeds is not None else feeds, golden.inputs),
        batch_size,
    )
    cache: dict[Any, Any] = {}
    return [
        evaluate_point(
            golden,
            feeds,
            labels,
            config,
            batch_size=batch_size,
            calibration=calibration,
            export_dir=export_dir,
            reference=reference,
            cache=cache,
            fidelity_params=fidelity_params,
        )
        for config in configs
    ]


def _needs_calibration(plan: Mapping[str, Config]) -> bool:
    """Whether the plan calibrates on samples: activation ranges, or channels ranked by importance."""
    from worker.engine.compression.configs import DATA_NORMS, ChannelPrune, needs_activation_stats, stages_of

    return any(
        needs_activation_stats(config)
        or any(isinstance(s, ChannelPrune) and s.norm in DATA_NORMS for s in stages_of(config))
        for config in plan.values()
    )
