"""The sweep points the sweep tests look at: the digits CNN under one config of each kind (CONFIGS),
evaluated with labels and calibration samples, their exports written to one folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from worker.demo.models import DigitsSplit
from worker.engine.compression import (
    ActivationQuant,
    CompressibleModel,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NoiseInjection,
    Quantize,
    WeightQuant,
)
from worker.engine.sweep import SweepPoint, evaluate_points

CONFIGS = {
    "fp32": None,
    "w8": WeightQuant(8),
    "prune": MagnitudePrune(0.5),
    "qdq": Quantize(WeightQuant(8, per_channel=True), ActivationQuant(8)),
    "fp16": FloatCast("fp16"),
    "noise": NoiseInjection(4),
    "lowrank": LowRank(0.5),
}


@pytest.fixture(scope="module")
def feeds(digits_split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"input": digits_split.x_test}


@pytest.fixture(scope="module")
def calibration(digits_split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"input": digits_split.x_train[:256]}


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sweep_exports")


@pytest.fixture(scope="module")
def points(
    golden: CompressibleModel,
    feeds: dict[str, np.ndarray],
    digits_split: DigitsSplit,
    calibration: dict[str, np.ndarray],
    export_dir: Path,
) -> dict[str, SweepPoint]:
    evaluated = evaluate_points(
        golden,
        feeds,
        digits_split.y_test,
        list(CONFIGS.values()),
        calibration_feeds=calibration,
        export_dir=export_dir,
    )
    return dict(zip(CONFIGS, evaluated, strict=True))
