"""Validation and text of compression config fields: the checks every config's `__post_init__` runs,
the error they raise (its text names the class, the field and the allowed range), and the number
format of config ids."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from worker.engine.errors import EngineError


class CompressionConfigError(EngineError, ValueError):
    """A compression config has an invalid field, or a dict does not describe a config."""


def fail(owner: str, name: str, allowed: str, value: Any) -> CompressionConfigError:
    return CompressionConfigError(f"{owner}.{name} must be {allowed}, got {value!r}")


def check_int(owner: str, name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise fail(owner, name, f"an integer from {low} to {high}", value)


def check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise fail(owner, name, "true or false", value)


def check_float(
    owner: str, name: str, value: Any, low: float, high: float, *, low_open: bool = False
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise fail(owner, name, f"a number in {bracket}{low:g}, {high:g}]", value)


def check_choice(owner: str, name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise fail(owner, name, "one of " + ", ".join(repr(c) for c in choices), value)


def num_text(x: float) -> str:
    """Shortest round-trip text of a number, for ids ('0.5', '99.99', '1')."""
    value = float(x)
    return str(int(value)) if value.is_integer() else repr(value)


def fields_of(cls_name: str, data: Mapping[str, Any], allowed: set[str]) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise CompressionConfigError(f"{cls_name} must be given as an object, got {data!r}")
    unknown = sorted(set(data) - allowed - {"type"})
    if unknown:
        raise CompressionConfigError(
            f"{cls_name} has no field(s) {unknown}; its fields are {sorted(allowed)}"
        )
    return {key: value for key, value in data.items() if key != "type"}
