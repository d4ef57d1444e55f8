"""The rules of `kneeboard check`: limits on a fidelity summary's metrics, and allowed regressions against a
baseline run. Pure functions over the summary JSON as GET /jobs/{id}/fidelity returns it (plain dict access
through `metric_value`, so a field the server adds or types later does not break the check)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from kneeboard_client.errors import CheckError
from task_specs.directions import HIGHER_IS_BETTER as HIGHER_IS_BETTER  # the one direction rule
from task_specs.directions import higher_is_better as higher_is_better

Bound = Literal["max", "min"]

_NAME = re.compile(r"^[A-Za-z0-9_.]+$")


@dataclass(frozen=True)
class Limit:
    """`--max kl_mean=0.01`: the metric must be at most (max) or at least (min) `value`."""

    metric: str
    bound: Bound
    value: float

    @property
    def label(self) -> str:
        return f"{self.metric} {'<=' if self.bound == 'max' else '>='} {self.value:g}"


@dataclass(frozen=True)
class Regression:
    """`--max-regression kl_mean=10%`: at most 10 % worse than the baseline (relative to the baseline's
    magnitude); without `%`, an absolute amount (`top1_match=0.002`)."""

    metric: str
    amount: float
    relative: bool

    @property
    def label(self) -> str:
        allowed = f"{self.amount * 100:g}%" if self.relative else f"{self.amount:g}"
        return f"{self.metric} regression <= {allowed}"


@dataclass(frozen=True)
class Outcome:
    """One rule checked: a JUnit test case and a Markdown table row."""

    name: str
    passed: bool
    message: str
    value: float | None
    baseline: float | None = None
    skipped: bool = False
    """Not checked (no baseline yet): neither passed nor failed."""


def _split(spec: str, option: str) -> tuple[str, str]:
    metric, sep, value = spec.partition("=")
    metric, value = metric.strip(), value.strip()
    if not sep or not metric or not value or not _NAME.match(metric):
        raise CheckError(f"{option} {spec!r}: expected METRIC=VALUE, e.g. {option} kl_mean=0.01")
    return metric, value


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CheckError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise CheckError(f"{what}: {text!r} is not a finite number")
    return value


def parse_limit(spec: str, bound: Bound) -> Limit:
    metric, value = _split(spec, f"--{bound}")
    return Limit(metric, bound, _number(value, f"--{bound} {spec}"))


def parse_regression(spec: str) -> Regression:
    metric, value = _split(spec, "--max-regression")
    relative = value.endswith("%")
    amount = _number(value.removesuffix("%"), f"--max-regression {spec}")
    if amount < 0:
        raise CheckError(f"--max-regression {spec}: the allowed regression cannot be negative")
    return Regression(metric, amount / 100 if relative else amount, relative)


def output_metrics(summary: dict[str, Any], output: str | None) -> tuple[str, dict[str, Any]]:
    """The metrics of `output` (default: the summary's primary output)."""
    outputs = summary.get("outputs")
    if not isinstance(outputs, dict) or not outputs:
        raise CheckError("the fidelity summary has no outputs")
    name = output or str(summary.get("primary_output") or next(iter(outputs)))
    if name not in outputs:
        raise CheckError(f"output {name!r} is not in the fidelity summary (outputs: {', '.join(outputs)})")
    return name, outputs[name]


def _lookup(metrics: dict[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = metrics
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def metric_value(metrics: dict[str, Any], metric: str) -> tuple[str, float | None]:
    """(the metric's key in the summary, its value; None when undefined, e.g. no finite sample).

    Accepts the summary's keys (`kl_mean_nats`, `labels.top1_accuracy_drop_pp`) and short names: a missing
    unit suffix (`kl_mean` → `kl_mean_nats`) and the label / calibration metrics without their prefix
    (`top1_accuracy_drop_pp`, `ece_shift`) and the task scores (`f1_macro_drop_pp`). An SQNR of +inf (no error at all) is stored as null with
    `sqnr_db_infinite`: it reads as +inf here, not as undefined."""
    candidates = [
        metric,
        f"{metric}_nats",
        f"labels.{metric}",
        f"labels.calibration.{metric}",
        f"task.{metric}",
    ]
    for key in candidates:
        found, value = _lookup(metrics, key)
        if not found or isinstance(value, dict | list | str):
            continue
        if value is None:
            if key == "sqnr_db" and metrics.get("sqnr_db_infinite"):
                return key, math.inf
            return key, None
        if isinstance(value, bool | int | float):
            return key, float(value)
    known = sorted(k for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool))
    raise CheckError(f"metric {metric!r} is not in the fidelity summary; numeric metrics: {', '.join(known)}")


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.6g}"


def check_limit(metrics: dict[str, Any], limit: Limit) -> Outcome:
    key, value = metric_value(metrics, limit.metric)
    name = f"{key} {'<=' if limit.bound == 'max' else '>='} {limit.value:g}"
    if value is None:
        return Outcome(name, False, f"{key} is undefined (no finite sample to measure it on)", None)
    passed = value <= limit.value if limit.bound == "max" else value >= limit.value
    relation = (
        ("is above the maximum" if limit.bound == "max" else "is below the minimum")
        if not passed
        else "within"
    )
    message = f"{key} = {_fmt(value)} {relation} {limit.value:g}"
    return Outcome(name, passed, message, value)


def skipped_regression(rule: Regression, why: str) -> Outcome:
    return Outcome(rule.label, True, f"{rule.label}: skipped, {why}", None, skipped=True)


def check_regression(metrics: dict[str, Any], baseline: dict[str, Any], rule: Regression) -> Outcome:
    key, value = metric_value(metrics, rule.metric)
    _, before = metric_value(baseline, rule.metric)
    name = f"{key} regression <= " + (f"{rule.amount * 100:g}%" if rule.relative else f"{rule.amount:g}")
    if value is None or before is None:
        which = "this run" if value is None else "the baseline"
        return Outcome(name, False, f"{key} is undefined in {which}: cannot compare", value, before)
    sign = 1.0 if higher_is_better(key) else -1.0
    worse_by = sign * (before - value)  # > 0: worse than the baseline
    if math.isinf(before) and math.isinf(value) and before == value:
        worse_by = 0.0
    if rule.relative:
        scale = abs(before)
        if math.isinf(worse_by) or math.isinf(scale):  # e.g. an SQNR that was +inf (exact) and is not now
            regression = worse_by if math.isinf(worse_by) else 0.0
        else:
            regression = worse_by / scale if scale > 0 else (math.inf if worse_by > 0 else 0.0)
        shown = f"{regression * 100:+.3g}%"
        allowed = f"{rule.amount * 100:g}%"
    else:
        regression = worse_by
        shown, allowed = f"{regression:+.6g}", f"{rule.amount:g}"
    # At the bound passes: 0.99 - 0.985 is 0.0050000000000000044 in floats, not above an allowed 0.005.
    passed = not math.isnan(regression) and regression <= rule.amount * (1 + 1e-9) + 1e-12
    verdict = "within" if passed else "exceeds"
    message = (
        f"{key} = {_fmt(value)} vs baseline {_fmt(before)}: {shown} worse, {verdict} the allowed {allowed}"
    )
    return Outcome(name, passed, message, value, before)
