"""Plain JSON data from the engine's results: the one `json_safe` of the project (the worker's result
writers and the sweep's point documents both use it)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def json_safe(value: Any) -> Any:
    """Plain JSON data: mappings → dicts with str keys, tuples → lists, numpy (or torch) scalars unwrapped,
    NaN / ±inf → None (JSON has neither; the summaries say what None means)."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if not isinstance(value, str | bytes) and callable(getattr(value, "item", None)):
        value = value.item()  # numpy scalars and 0-d arrays, torch scalar tensors: a Python number or bool
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value
