"""A sweep's accuracy-aware search chunk (issue 33): the smallest plan whose measured metric holds a threshold.

The steps depend on each other (each one picks the next k), so the whole search runs in ONE chunk, in order,
on the worker that took it. Every step is evaluated for real with `evaluate_point` on the sweep's evaluation
samples, reference and calibration (no export, no timing: a step is a frontier point with its fidelity and
size only); the returned step (the plan a user would deploy; the closest one when the threshold is out of
reach) is then evaluated once more through the sweep's ordinary point path, so it is exported and timed like
every other point (the evaluation is deterministic: the same numbers). `merge` stores every step as a point
labelled `search-k<k>` and the summary under RESULT_SWEEP_SEARCH.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from worker.jobs.sweep_sources import stored_scan
from worker.runtime import JobContext, json_safe

if TYPE_CHECKING:
    from worker.jobs.sweep import SweepHandler, _Loaded


def search_spec() -> dict[str, Any]:
    """The search's chunk spec (plan() appends it last: its steps take the indices from its own on)."""
    return {"label": "search", "kind": "search", "config": {"type": "search"}}


def run_search(
    handler: SweepHandler, ctx: JobContext, loaded: _Loaded, spec: dict[str, Any]
) -> dict[str, Any]:
    from worker.engine.compression.configs import Config, config_from_dict, weight_bits
    from worker.engine.sweep import evaluate_point
    from worker.engine.sweep.search import SearchStep, ladder, max_steps_for, plan_ids, search, step_plan
    from worker.jobs.sweep import _calibrates, _fidelity_params, point_objectives

    source = loaded.params.search
    assert source is not None
    scan = stored_scan(ctx, source.sensitivity_job_id, "to rank layers by")
    low = config_from_dict(source.low.model_dump(mode="json"))
    high = None if source.high is None else config_from_dict(source.high.model_dump(mode="json"))
    direction = source.resolved_direction()
    rungs, ladder_notes = ladder(scan, low.id, source.metric)
    scan_layers = set(scan.layer_names)  # the ladder notes the scan's own unmeasured layers
    unranked = [layer.name for layer in loaded.handle.layers() if layer.name not in scan_layers]
    points: dict[int, dict[str, Any]] = {}

    def bits_of(plan: dict[str, Config]) -> dict[str, int]:
        return {
            name: (weight_bits(plan[name]) or 32) if name in plan else 32
            for rung in rungs
            for name in rung.layers
        }

    def config_of(k: int, plan: dict[str, Config]) -> dict[str, Any]:
        return {
            "type": "search_step",
            "k": k,
            "low": low.id,
            "high": "float" if high is None else high.id,
            "bits": bits_of(plan),
        }

    def measure(k: int, plan: dict[str, Config]) -> tuple[float | None, float | None]:
        point = evaluate_point(
            loaded.handle,
            loaded.feeds,
            loaded.labels,
            plan,
            batch_size=loaded.params.batch_size,
            calibration=loaded.calibration,
            reference=loaded.reference,
            fidelity_params=_fidelity_params(loaded.params),
        )
        doc = json_safe(point.to_dict())
        doc["calibration"] = loaded.split if _calibrates(plan) else None
        points[k] = {"label": f"search-k{k}", "config": config_of(k, plan), "point": doc, "export": None}
        value = point_objectives(doc, None, {}).get(source.metric)
        size = (doc.get("cost") or {}).get("size_bytes")
        return value, None if size is None else float(size)

    limit = (
        max_steps_for(len(rungs))
        if source.max_steps is None
        else min(source.max_steps, max_steps_for(len(rungs)))
    )

    def on_step(i: int, total: int, step: SearchStep) -> None:
        ctx.progress(min(0.9, i / (total + 1)), f"search step {i} of at most {total}: {step.reason}")

    ctx.progress(0.0, f"search step 1 of at most {limit}: k=0, every layer at {low.id}")
    result = search(
        rungs,
        low,
        high,
        measure,
        metric=source.metric,
        threshold=source.threshold,
        direction=direction,
        max_steps=source.max_steps,
        on_step=on_step,
    )
    chosen = result.best_k
    ctx.progress(0.9, f"exporting and timing the returned plan k={chosen}")
    plan = step_plan(rungs, chosen, low, high)
    full = handler.run_chunk(
        ctx,
        {
            "label": f"search-k{chosen}",
            "config": config_of(chosen, plan),
            "plan": {name: config.to_dict() for name, config in plan.items()},
        },
    )
    points[chosen] = full
    deployed = deployed_verdict(full["point"], source.metric, source.threshold, direction)
    order = [step.k for step in result.steps]
    steps = []
    for step in result.steps:
        points[step.k]["config"]["returned"] = step.k == chosen and result.met
        steps.append(json_safe(step.to_dict()) | {"offset": order.index(step.k)})
    summary = json_safe(result.to_dict()) | {
        "steps": steps,
        "sensitivity_job_id": str(source.sensitivity_job_id),
        "objective": source.objective,
        "low": low.to_dict(),
        "high": None if high is None else high.to_dict(),
        "max_steps": limit,
        "rungs": [{"layers": r.layers, "score": r.score} for r in rungs],
        "notes": [*ladder_notes, *result.notes]
        + ([f"layers the scan did not rank stay in float: {', '.join(unranked)}"] if unranked else [])
        + ["steps are measured without export or timing; the returned plan is exported and timed"]
        + [deployed["note"]],
        "returned_offset": order.index(chosen),
        "plan": plan_ids(rungs, chosen, low, high),
        "deployed": deployed,
    }
    return {
        "label": "search",
        "config": spec["config"],
        "steps": [points[k] for k in order],
        "summary": summary,
    }


def deployed_verdict(point: dict[str, Any], metric: str, threshold: float, direction: Any) -> dict[str, Any]:
    """The returned plan's verdict on its exported file: the metric as the frontier stores it (measured on the
    deployed file when the point has a runnable export, else the simulation's) and whether it holds."""
    from worker.engine.sweep.deployed_fidelity import deployed_fidelity
    from worker.engine.sweep.search import holds
    from worker.jobs.sweep import point_objectives

    found = deployed_fidelity(point)
    value = point_objectives(point, None, {}).get(metric)
    ok = holds(value, threshold, direction)
    where = (
        f"the exported {found.export_kind} file run in onnxruntime"
        if found.source == "measured"
        else "the simulation (" + found.note.removeprefix("simulated: ") + ")"
    )
    return {
        "source": found.source,
        "export_kind": found.export_kind,
        "value": value,
        "holds": ok,
        "note": f"returned plan on {where}: {metric} = "
        + ("undefined" if value is None else f"{value:.6g}")
        + ", "
        + ("holds the threshold" if ok else "misses the threshold"),
    }


def search_rows(index: int, result: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The search chunk's steps as (point index, point result), in the order they were measured."""
    return [(index + i, step) for i, step in enumerate(result["steps"])]


def search_summary(index: int, result: dict[str, Any]) -> dict[str, Any]:
    """The stored summary: each step with the index of its point."""
    summary = {key: value for key, value in result["summary"].items() if key != "returned_offset"}
    summary["steps"] = [
        {key: value for key, value in step.items() if key != "offset"}
        | {"index": index + int(step["offset"])}
        for step in result["summary"]["steps"]
    ]
    summary["returned_index"] = index + int(result["summary"]["returned_offset"])
    return summary
