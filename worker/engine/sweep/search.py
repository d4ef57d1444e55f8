"""Accuracy-aware search: the smallest plan whose MEASURED metric holds a threshold (issue 33).

The inverse of `plan_mixed_precision` (least predicted KL under a size budget): given a threshold on a
measured metric (top-1 agreement ≥ 0.99, KL ≤ 0.01, a task metric...), find the most compressed plan that
holds it, as NNCF's accuracy control does, but with every step visible.

The ladder: the layers ranked by their "only" sensitivity (`ladder`), most sensitive first, layers that
share a tensor moving as one rung. Step k keeps the k most sensitive rungs at the `high` config (None: float)
and compresses the rest at `low`. k = 0 is the most aggressive plan; k = n has every layer at `high`.
Size grows with k by construction (a rung moves from low to high precision), so the smallest k that holds
is the smallest plan on this ladder.

`search(n, measure, ...)` measures k = 0 first (stop there if it holds), then k = n (if even that fails,
the threshold is out of reach: the result says how close the best step came), then binary search between
the largest failing and the smallest holding k. The binary search ASSUMES the metric improves with k
(more layers at high precision, less damage); every measured step is checked against that assumption and
a contradiction (a larger k measured worse than a smaller one, or a smaller k holding where a larger one
failed) is reported in the result, never hidden. The returned k holds and k − 1 was measured and failed,
so on the measured steps it is the smallest; at most ⌈log2 n⌉ + 2 steps are measured.

Pure engine: `measure(k, plan)` is the caller's (a sweep evaluates each step with `evaluate_point`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from worker.engine.compression.configs import Config
from worker.engine.errors import EngineError

if TYPE_CHECKING:
    from worker.engine.sensitivity.result import SensitivityResult

Direction = Literal["at_least", "at_most"]


def holds(value: float | None, threshold: float, direction: Direction) -> bool:
    """Whether a measured value meets the threshold; an undefined value (None, NaN) never does."""
    if value is None or math.isnan(value):
        return False
    return value >= threshold if direction == "at_least" else value <= threshold


@dataclass(frozen=True)
class Rung:
    """Layers that move to high precision together (a layer and those sharing a tensor with it)."""

    layers: list[str]
    score: float
    """The rung's sensitivity: its most sensitive layer's score (larger: more sensitive)."""


def ladder(result: SensitivityResult, low_config_id: str | None, metric: str) -> tuple[list[Rung], list[str]]:
    """The scan's layers as rungs, most sensitive first, and notes on how they were ranked.

    Scores come from the scan's column of the `low` config when the scan measured it (the KL of that layer
    compressed alone, or 1 − its top-1 agreement when the search metric is top-1 agreement and the scan has
    it, KL breaking ties); else from the scan's overall ranking (mean over its configs), noted."""
    if result.mode != "only":
        raise EngineError(
            "the search ranks layers by an 'only' sensitivity scan (each layer compressed alone)"
        )
    names = result.computed_layers
    if not names:
        raise EngineError("the scan measured no layer: nothing to rank")
    notes: list[str] = []
    unscanned = [name for name in result.layer_names if name not in names]
    if unscanned:  # a scan of some layers only: the others are not on the ladder (left out of every plan)
        notes.append(f"the scan did not measure {', '.join(unscanned)}: they stay uncompressed in every step")
    if low_config_id is not None and low_config_id in result.config_ids:
        cells = {name: result.cells[(name, low_config_id)].divergence for name in names}
        use_top1 = metric == "top1_agreement" and all(d.top1_agreement is not None for d in cells.values())
        kl_metric = result.ranking_metric

        def score(name: str) -> tuple[float, float]:
            d = cells[name]
            kl = d.score(kl_metric)
            kl = -math.inf if math.isnan(kl) else kl
            return (1.0 - float(d.top1_agreement or 0.0), kl) if use_top1 else (kl, 0.0)

        depth = {name: i for i, name in enumerate(names)}
        order = sorted(names, key=lambda n: (tuple(-v for v in score(n)), depth[n]))
        how = "1 − top-1 agreement (KL breaking ties)" if use_top1 else f"{kl_metric} score"
        notes.append(f"layers ranked by the scan's {how} of {low_config_id} applied to each layer alone")
        scores = {name: score(name)[0] for name in names}
    else:
        order = [name for name in result.ranking() if name in names]
        notes.append(
            f"the scan did not measure the low config {low_config_id or '(none)'}: layers ranked by its "
            "overall ranking (mean sensitivity over its configs)"
        )
        scores = {name: float(len(order) - i) for i, name in enumerate(order)}
    rungs: list[Rung] = []
    placed: set[str] = set()
    for name in order:
        if name in placed:
            continue
        group = _tied(result, name)
        placed |= set(group)
        rungs.append(Rung([n for n in order if n in group], max(scores[n] for n in group)))
        if len(group) > 1:
            notes.append(f"{', '.join(sorted(group))} share a tensor: they move together")
    return rungs, notes


def _tied(result: SensitivityResult, name: str) -> set[str]:
    """`name` and every layer it shares a tensor with, transitively."""
    by_name = {layer["name"]: layer for layer in result.layers}
    scanned = set(result.computed_layers)
    group, todo = {name}, [name]
    while todo:
        for other in by_name[todo.pop()].get("shared_with", []):
            if other in scanned and other not in group:
                group.add(other)
                todo.append(other)
    return group


def step_plan(rungs: Sequence[Rung], k: int, low: Config, high: Config | None) -> dict[str, Config]:
    """Step k: the first k rungs at `high` (left out of the plan when high is None: float), the rest at `low`."""
    plan: dict[str, Config] = {}
    for i, rung in enumerate(rungs):
        config = high if i < k else low
        if config is not None:
            plan.update(dict.fromkeys(rung.layers, config))
    return plan


@dataclass(frozen=True)
class SearchStep:
    k: int
    high_layers: list[str]
    """Layers at the high config (float when high is None)."""
    value: float | None
    holds: bool
    reason: str
    seconds: float
    size_bytes: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "high_layers": list(self.high_layers),
            "value": self.value,
            "holds": self.holds,
            "reason": self.reason,
            "seconds": self.seconds,
            "size_bytes": self.size_bytes,
        }


@dataclass
class SearchResult:
    metric: str
    threshold: float
    direction: Direction
    n: int
    """Rungs on the ladder (k runs from 0 to n)."""
    steps: list[SearchStep]
    """In the order they were measured."""
    met: bool
    k: int | None
    """The returned step (the smallest holding k), None when no step held."""
    best_k: int
    best_value: float | None
    """The step that came closest (the returned one when met)."""
    monotonic: bool
    """False when a measured step contradicted "the metric improves with k"."""
    seconds: float
    notes: list[str] = field(default_factory=list)
    plan: dict[str, str] = field(default_factory=dict)
    """The returned (or, when not met, the closest) step's plan: layer → config id, "float" for none."""

    def step(self, k: int) -> SearchStep:
        return next(s for s in self.steps if s.k == k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "threshold": self.threshold,
            "direction": self.direction,
            "n": self.n,
            "steps": [s.to_dict() for s in self.steps],
            "met": self.met,
            "k": self.k,
            "best_k": self.best_k,
            "best_value": self.best_value,
            "monotonic": self.monotonic,
            "seconds": self.seconds,
            "notes": list(self.notes),
            "plan": dict(self.plan),
        }


Measure = Callable[[int, dict[str, Config]], tuple[float | None, float | None]]
"""(k, plan) → (the metric's measured value, the plan's size in bytes or None)."""


def max_steps_for(n: int) -> int:
    """The most steps `search` measures on n rungs: k = 0, k = n and ⌈log2 n⌉ bisections (fewer when n ≤ 1)."""
    return 2 + math.ceil(math.log2(n)) if n >= 1 else 1


def search(
    rungs: Sequence[Rung],
    low: Config,
    high: Config | None,
    measure: Measure,
    *,
    metric: str,
    threshold: float,
    direction: Direction,
    max_steps: int | None = None,
    on_step: Callable[[int, int, SearchStep], None] | None = None,
) -> SearchResult:
    """The smallest k whose measured metric holds (see the module's doc). max_steps: stop early (the
    returned k then holds, but k − 1 may be unmeasured: said in the notes)."""
    if not rungs:
        raise EngineError("the search needs at least one compressible layer")
    if not math.isfinite(threshold):
        raise EngineError("the threshold must be a finite number")
    started = time.perf_counter()
    n = len(rungs)
    limit = max_steps_for(n) if max_steps is None else max(1, min(max_steps, max_steps_for(n)))
    high_name = "float" if high is None else high.id
    steps: list[SearchStep] = []
    sign = 1.0 if direction == "at_least" else -1.0  # sign × value: larger is better
    comparison = "≥" if direction == "at_least" else "≤"

    def run(k: int, why: str) -> SearchStep:
        t0 = time.perf_counter()
        plan = step_plan(rungs, k, low, high)
        value, size = measure(k, plan)
        ok = holds(value, threshold, direction)
        shown = "undefined" if value is None or math.isnan(value) else f"{value:.6g}"
        verdict = (
            f"{comparison} {threshold:g}: holds"
            if ok
            else f"misses {comparison} {threshold:g}" + (" → return more layers" if k < n else "")
        )
        step = SearchStep(
            k=k,
            high_layers=[name for rung in rungs[:k] for name in rung.layers],
            value=None if value is None or math.isnan(value) else float(value),
            holds=ok,
            reason=f"k={k} ({why}): {metric} {shown} {verdict}",
            seconds=time.perf_counter() - t0,
            size_bytes=size,
        )
        steps.append(step)
        if on_step is not None:
            on_step(len(steps), limit, step)
        return step

    notes: list[str] = [
        f"assumes {metric} improves as layers return to {high_name} (k grows); every measured step is checked"
    ]
    first = run(0, f"every layer at {low.id}")
    failing, holding = (None, 0) if first.holds else (0, None)
    if holding is None and len(steps) < limit:
        last = run(n, f"every layer at {high_name}")
        if last.holds:
            holding = n
        else:
            notes.append(f"even k={n} (every layer at {high_name}) misses the threshold")
    while holding is not None and failing is not None and holding - failing > 1 and len(steps) < limit:
        mid = (failing + holding) // 2
        if run(mid, f"between k={failing} (misses) and k={holding} (holds)").holds:
            holding = mid
        else:
            failing = mid
    if holding is not None and failing is not None and holding - failing > 1:
        notes.append(
            f"stopped after {len(steps)} steps (max_steps): k={holding} holds, k={failing} misses, "
            f"the k between them were not measured"
        )
    monotonic = _check_monotonic(steps, sign, notes)
    measured = [s for s in steps if s.value is not None]
    best = max(measured, key=lambda s: (sign * float(s.value or 0.0), -s.k)) if measured else steps[0]
    chosen = steps[[s.k for s in steps].index(holding)] if holding is not None else best
    if holding is None:
        gap = None if best.value is None else abs(best.value - threshold)
        notes.append(
            f"threshold not met: the best step, k={best.k}, measured {metric} "
            f"{'undefined' if best.value is None else f'{best.value:.6g}'}"
            + ("" if gap is None else f", {gap:.3g} short of {threshold:g}")
        )
    return SearchResult(
        metric=metric,
        threshold=float(threshold),
        direction=direction,
        n=n,
        steps=steps,
        met=holding is not None,
        k=holding,
        best_k=chosen.k,
        best_value=chosen.value,
        monotonic=monotonic,
        seconds=time.perf_counter() - started,
        notes=notes,
        plan=plan_ids(rungs, chosen.k, low, high),
    )


def plan_ids(rungs: Sequence[Rung], k: int, low: Config, high: Config | None) -> dict[str, str]:
    """Step k's plan as layer → config id, "float" for a layer left uncompressed."""
    plan = step_plan(rungs, k, low, high)
    return {name: plan[name].id if name in plan else "float" for rung in rungs for name in rung.layers}


def _check_monotonic(steps: Sequence[SearchStep], sign: float, notes: list[str]) -> bool:
    """Every pair of measured steps against "the metric improves with k": a larger k measured worse, or a
    smaller k holding where a larger one misses, contradicts it (said in the notes)."""
    ok = True
    ordered = sorted(steps, key=lambda s: s.k)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if a.holds and not b.holds:
                notes.append(f"not monotonic: k={a.k} holds but k={b.k} misses")
                ok = False
            elif a.value is not None and b.value is not None and sign * b.value < sign * a.value:
                notes.append(
                    f"not monotonic: k={b.k} measured {b.value:.6g}, worse than k={a.k} ({a.value:.6g})"
                )
                ok = False
    return ok
