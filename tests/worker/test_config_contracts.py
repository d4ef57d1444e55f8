"""The API's compression-config schema (backend/compression_contracts.py) and the engine's configs
(worker/engine/compression/configs.py) accept and refuse the same values, with the same JSON shape."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from backend.compression_contracts import CompressionConfigIn
from worker.engine.compression.configs import CompressionConfigError, config_from_dict

API = TypeAdapter(CompressionConfigIn)

VALID: list[dict[str, Any]] = [
    {"type": "weight_quant", "bits": 2},
    {"type": "weight_quant", "bits": 16, "symmetric": False, "per_channel": True},
    {"type": "activation_quant", "bits": 4},
    {"type": "activation_quant", "bits": 16, "calibration": "mse"},
    {"type": "activation_quant", "bits": 8, "calibration": "percentile", "percentile": 100},
    {"type": "activation_quant", "bits": 8, "calibration": "percentile", "percentile": 50.001},
    {"type": "float_cast", "dtype": "bf16"},
    {"type": "quantize", "weights": {"type": "weight_quant", "bits": 4}},
    {
        "type": "quantize",
        "weights": {"type": "weight_quant", "bits": 8, "per_channel": True},
        "activations": {"type": "activation_quant", "bits": 8},
    },
    {"type": "magnitude_prune", "sparsity": 0},
    {"type": "magnitude_prune", "sparsity": 1},
    {"type": "channel_prune", "sparsity": 0.5, "norm": "l2"},
    {"type": "channel_prune", "sparsity": 0.5, "norm": "reconstruction"},
    {"type": "nm_sparsity"},
    {"type": "nm_sparsity", "n": 1, "m": 8},
    {"type": "low_rank", "rank_ratio": 1},
    {"type": "low_rank", "rank_ratio": 1e-6},
    {"type": "noise", "bits": 2, "seed": 2**31 - 1},
    {
        "type": "schedule",
        "stages": [{"type": "magnitude_prune", "sparsity": 0.3}, {"type": "weight_quant", "bits": 4}],
    },
]

INVALID: list[dict[str, Any]] = [
    {"type": "weight_quant", "bits": 1},
    {"type": "weight_quant", "bits": 17},
    {"type": "activation_quant", "bits": 3},
    {"type": "activation_quant", "calibration": "percentile", "percentile": 50},
    {"type": "activation_quant", "calibration": "percentile", "percentile": 100.5},
    {"type": "activation_quant", "calibration": "minmax", "percentile": 99},
    {"type": "float_cast", "dtype": "fp8"},
    {"type": "quantize"},
    {"type": "magnitude_prune", "sparsity": -0.1},
    {"type": "magnitude_prune", "sparsity": 1.01},
    {"type": "channel_prune", "norm": "linf"},
    {"type": "nm_sparsity", "n": 4, "m": 4},
    {"type": "nm_sparsity", "n": 0},
    {"type": "nm_sparsity", "m": 32},
    {"type": "low_rank", "rank_ratio": 0},
    {"type": "low_rank", "rank_ratio": 1.5},
    {"type": "noise", "bits": 1},
    {"type": "noise", "seed": -1},
    {"type": "schedule", "stages": []},
    {"type": "schedule", "stages": [{"type": "schedule", "stages": [{"type": "weight_quant"}]}]},
    {"type": "weight_quant", "bits": 8, "colour": "red"},
    {"type": "sparsify"},
]


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("raw", VALID, ids=lambda raw: str(raw["type"]))
def test_what_the_api_accepts_the_engine_accepts_with_the_same_values(raw: dict[str, Any]) -> None:
    api_json = API.dump_python(API.validate_python(raw), mode="json")
    engine = config_from_dict(api_json)
    # The engine's JSON (with its own defaults filled in, e.g. percentile 99.99) must agree with the API's
    # on every value the API sets.
    engine_json = engine.to_dict()

    def agree(api: Any, eng: Any, path: str) -> None:
        if isinstance(api, dict):
            for key, value in api.items():
                assert key in eng, f"{path}.{key} missing from the engine's JSON {eng}"
                agree(value, eng[key], f"{path}.{key}")
        elif isinstance(api, list):
            assert len(api) == len(eng), path
            for i, (a, e) in enumerate(zip(api, eng, strict=True)):
                agree(a, e, f"{path}[{i}]")
        else:
            assert api == eng, f"{path}: API {api!r} vs engine {eng!r}"

    agree(_drop_nulls(api_json), engine_json, "config")


@pytest.mark.parametrize("raw", INVALID, ids=lambda raw: str(raw))
def test_what_the_api_refuses_the_engine_refuses(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        API.validate_python(raw)
    with pytest.raises(CompressionConfigError):
        config_from_dict(raw)
