"""The one json_safe: what the worker's result writers and the sweep's point documents store."""

from __future__ import annotations

import json
import math
from types import MappingProxyType

import numpy as np
import pytest
import torch

from worker.engine.jsonable import json_safe
from worker.engine.sweep.points import json_safe as sweep_json_safe
from worker.runtime import json_safe as runtime_json_safe


def test_one_function_behind_every_name() -> None:
    assert runtime_json_safe is json_safe and sweep_json_safe is json_safe


def test_non_finite_numbers_become_none_and_scalars_plain_python() -> None:
    data = json_safe(
        {
            "nan": float("nan"),
            "inf32": np.float32("inf"),
            "f64": np.float64(0.25),
            "ints": (np.int64(3), np.uint8(7)),
            "flag": np.bool_(True),
            "zero_d": np.array(-math.inf),
            "tensor": torch.tensor(1.5),
            1: "key made text",
        }
    )
    assert data == {
        "nan": None,
        "inf32": None,
        "f64": 0.25,
        "ints": [3, 7],
        "flag": True,
        "zero_d": None,
        "tensor": 1.5,
        "1": "key made text",
    }
    # Plain Python types all the way down: the standard library encodes it, strictly (no NaN).
    assert type(data["f64"]) is float and type(data["ints"][0]) is int and type(data["flag"]) is bool
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_any_mapping_and_text_pass_through() -> None:
    assert json_safe(MappingProxyType({"a": [np.float16(2.0)]})) == {"a": [2.0]}
    assert json_safe("item") == "item" and json_safe(b"x") == b"x" and json_safe(None) is None


def test_an_array_of_several_values_is_refused_not_stored_as_an_array() -> None:
    with pytest.raises(ValueError):
        json_safe({"a": np.zeros(3)})
