"""Compression configs: ids stable and distinct, every config round-trips through JSON, invalid
configs name the field and its allowed range, and the defaults of percentile calibration and Quantize."""

from __future__ import annotations

import json
from typing import Any

import pytest

from worker.engine.compression import (
    ActivationQuant,
    ChannelPrune,
    CompressionConfigError,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NoiseInjection,
    Quantize,
    Schedule,
    WeightQuant,
    config_from_dict,
)
from worker.engine.errors import EngineError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


ALL_CONFIGS: list[Any] = [
    WeightQuant(8),
    WeightQuant(4, symmetric=False, per_channel=True),
    ActivationQuant(8),
    ActivationQuant(6, "percentile", 99.9),
    ActivationQuant(4, "mse"),
    FloatCast("fp16"),
    FloatCast("bf16"),
    Quantize(WeightQuant(8, per_channel=True), ActivationQuant(8)),
    Quantize(activations=ActivationQuant(8)),
    MagnitudePrune(0.5),
    ChannelPrune(0.25, "l2"),
    LowRank(0.5),
    NoiseInjection(4, seed=3),
    Schedule((MagnitudePrune(0.3), Quantize(WeightQuant(4), ActivationQuant(8)))),
]


# ------------------------------------------------------------------------------------------ configs


def test_ids_are_stable_and_distinct() -> None:
    expected = [
        "w8-sym-tensor",
        "w4-asym-channel",
        "a8-minmax",
        "a6-p99.9",
        "a4-mse",
        "fp16",
        "bf16",
        "w8-sym-channel+a8-minmax",
        "a8-minmax",
        "prune-u0.5",
        "prune-ch0.25-l2",
        "lowrank-0.5",
        "noise-w4-s3",
        "prune-u0.3>w4-sym-tensor+a8-minmax",
    ]
    assert [c.id for c in ALL_CONFIGS] == expected


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda c: c.id)
def test_configs_round_trip_through_json(config: Any) -> None:
    data = json.loads(json.dumps(config.to_dict()))
    back = config_from_dict(data)
    assert back == config
    assert back.id == config.id


@pytest.mark.parametrize(
    ("make", "field", "allowed"),
    [
        (lambda: WeightQuant(bits=1), "WeightQuant.bits", "from 2 to 16"),
        (lambda: WeightQuant(bits=17), "WeightQuant.bits", "from 2 to 16"),
        (
            lambda: WeightQuant(bits=8.0),  # type: ignore[arg-type]
            "WeightQuant.bits",
            "integer",
        ),
        (
            lambda: WeightQuant(symmetric="yes"),  # type: ignore[arg-type]
            "WeightQuant.symmetric",
            "true or false",
        ),
        (lambda: ActivationQuant(bits=3), "ActivationQuant.bits", "from 4 to 16"),
        (
            lambda: ActivationQuant(calibration="kl"),  # type: ignore[arg-type]
            "ActivationQuant.calibration",
            "'minmax'",
        ),
        (lambda: ActivationQuant(8, "percentile", 40.0), "ActivationQuant.percentile", "(50, 100]"),
        (lambda: ActivationQuant(8, "minmax", 99.0), "ActivationQuant.percentile", "percentile"),
        (
            lambda: FloatCast("fp8"),  # type: ignore[arg-type]
            "FloatCast.dtype",
            "'fp16'",
        ),
        (lambda: MagnitudePrune(1.5), "MagnitudePrune.sparsity", "[0, 1]"),
        (lambda: MagnitudePrune(float("nan")), "MagnitudePrune.sparsity", "[0, 1]"),
        (
            lambda: ChannelPrune(0.5, "l3"),  # type: ignore[arg-type]
            "ChannelPrune.norm",
            "'l1'",
        ),
        (lambda: LowRank(0.0), "LowRank.rank_ratio", "(0, 1]"),
        (lambda: NoiseInjection(bits=0), "NoiseInjection.bits", "from 2 to 16"),
        (lambda: Schedule(()), "Schedule.stages", "non-empty"),
        (lambda: config_from_dict({"type": "weight_quant", "bitz": 4}), "WeightQuant has no field", "bitz"),
        (lambda: config_from_dict({"type": "int3"}), "config.type", "weight_quant"),
        (lambda: config_from_dict({"type": "weight_quant", "bits": 40}), "WeightQuant.bits", "from 2 to 16"),
    ],
)
def test_invalid_configs_name_the_field_and_the_range(make: Any, field: str, allowed: str) -> None:
    with pytest.raises(CompressionConfigError) as info:
        make()
    assert field in str(info.value)
    assert allowed in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, EngineError)


def test_percentile_defaults_and_quantize_needs_a_part() -> None:
    assert ActivationQuant(8, "percentile").percentile == 99.99
    with pytest.raises(CompressionConfigError, match="Quantize needs"):
        Quantize()
