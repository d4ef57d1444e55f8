"""Accuracy-aware search (issue 33) on the digits CNN trained in the test: the smallest k whose measured metric
holds, checked against an exhaustive evaluation of every k and against onnxruntime's own run of the exported
plan (top-1 agreement counted here with numpy); the ladder against the scan's matrix; an unreachable
threshold said as "not met" with the best value; and the search's logic (k = 0 first, binary search, the
monotonicity check, max_steps) on a measure whose values the test chooses."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.support.sweep_exports import export_of, run_onnx
from worker.demo.models import DigitsSplit
from worker.engine.compression import CompressibleModel, WeightQuant
from worker.engine.compression.configs import Config
from worker.engine.errors import EngineError
from worker.engine.sensitivity.result import SensitivityResult
from worker.engine.sensitivity.scan import layer_sensitivity
from worker.engine.sweep import GoldenReference, evaluate_point
from worker.engine.sweep.search import Rung, holds, ladder, max_steps_for, search, step_plan

W2 = WeightQuant(2, per_channel=True)
W8 = WeightQuant(8, per_channel=True)


@pytest.fixture(scope="module")
def scan(golden: CompressibleModel, digits_split: DigitsSplit) -> SensitivityResult:
    return layer_sensitivity(golden, {"input": digits_split.x_test[:200]}, [W2, W8])


@pytest.fixture(scope="module")
def reference(golden: CompressibleModel, digits_split: DigitsSplit) -> GoldenReference:
    return GoldenReference(golden, {"input": digits_split.x_test}, 64)


def _measure(
    golden: CompressibleModel, split: DigitsSplit, reference: GoldenReference, metric: str, seen: list[int]
):  # type: ignore[no-untyped-def]
    feeds = {"input": split.x_test}

    def measure(k: int, plan: dict[str, Config]) -> tuple[float | None, float | None]:
        seen.append(k)
        point = evaluate_point(golden, feeds, split.y_test, plan, reference=reference, calibration=feeds)
        return point.fidelity[metric], float(point.cost["size_bytes"])

    return measure


def test_the_ladder_follows_the_scans_top1_column(scan: SensitivityResult) -> None:
    rungs, notes = ladder(scan, W2.id, "top1_agreement")
    column = scan.config_ids.index(W2.id)
    top1 = dict(
        zip(scan.computed_layers, (row[column] for row in scan.matrix("top1_agreement")), strict=True)
    )
    assert [r.layers for r in rungs] == [[name] for name in sorted(top1, key=lambda n: top1[n])]
    assert len({top1[n] for n in top1}) == len(top1), "ties would make the order above ambiguous"
    assert "top-1 agreement" in notes[0]
    # a low config the scan did not measure: the scan's overall ranking, said so
    rungs, notes = ladder(scan, WeightQuant(3).id, "top1_agreement")
    assert [r.layers[0] for r in rungs] == scan.ranking() and "did not measure" in notes[0]


def test_a_scan_of_some_layers_ranks_those_only(golden: CompressibleModel, digits_split: DigitsSplit) -> None:
    part = layer_sensitivity(golden, {"input": digits_split.x_test[:100]}, [W2], layers=["fc", "conv2"])
    rungs, notes = ladder(part, W2.id, "kl_mean")
    assert sorted(name for r in rungs for name in r.layers) == ["conv2", "fc"]
    assert any("did not measure conv1" in note for note in notes), notes
    assert "conv1" not in step_plan(rungs, 0, W2, W8)  # left uncompressed in every step


def test_the_search_returns_the_smallest_k_that_holds(
    golden: CompressibleModel,
    digits_split: DigitsSplit,
    scan: SensitivityResult,
    reference: GoldenReference,
    cnn_path: Path,
    tmp_path: Path,
) -> None:
    rungs, _ = ladder(scan, W2.id, "top1_agreement")
    n = len(rungs)
    seen: list[int] = []
    result = search(
        rungs,
        W2,
        W8,
        _measure(golden, digits_split, reference, "top1_agreement", seen),
        metric="top1_agreement",
        threshold=0.99,
        direction="at_least",
    )
    # exhaustive: every k measured here, the smallest one that holds
    feeds = {"input": digits_split.x_test}
    values = [
        evaluate_point(
            golden, feeds, None, step_plan(rungs, k, W2, W8), reference=reference, calibration=feeds
        ).fidelity["top1_agreement"]
        for k in range(n + 1)
    ]
    expected = next(k for k, v in enumerate(values) if v >= 0.99)
    assert expected > 0, f"2-bit everywhere already holds ({values}): the test would not search"
    assert result.met and result.k == expected, (result.to_dict(), values)
    assert [s.k for s in result.steps] == seen and seen[0] == 0 and len(seen) <= max_steps_for(n)
    for step in result.steps:
        assert step.value == pytest.approx(values[step.k], abs=1e-12)
        assert step.holds == (values[step.k] >= 0.99) and f"k={step.k}" in step.reason
    assert result.step(expected - 1).holds is False  # k − 1 measured and failed
    assert result.plan == {
        name: (W8.id if i < expected else W2.id) for i, r in enumerate(rungs) for name in r.layers
    }
    sizes = [s.size_bytes or 0.0 for s in sorted(result.steps, key=lambda s: s.k)]
    assert sizes == sorted(sizes), "size must grow with k"

    # independent: the returned plan exported, run by onnxruntime, argmax compared here
    point = evaluate_point(
        golden, feeds, None, step_plan(rungs, expected, W2, W8), calibration=feeds, export_dir=tmp_path
    )
    simulated = tmp_path / export_of(point, "simulated-float")["file"]
    golden_top1 = run_onnx(cnn_path, digits_split.x_test).argmax(axis=1)
    agreement = float(np.mean(run_onnx(simulated, digits_split.x_test).argmax(axis=1) == golden_top1))
    assert agreement == pytest.approx(result.best_value, abs=1e-9) and agreement >= 0.99


def test_an_unreachable_threshold_says_how_close_the_best_came(
    golden: CompressibleModel, digits_split: DigitsSplit, scan: SensitivityResult, reference: GoldenReference
) -> None:
    rungs, _ = ladder(scan, W2.id, "kl_mean")
    seen: list[int] = []
    result = search(
        rungs,
        W2,
        W8,
        _measure(golden, digits_split, reference, "kl_mean", seen),
        metric="kl_mean",
        threshold=1e-9,  # 8-bit weights everywhere still move the logits more than this
        direction="at_most",
    )
    assert not result.met and result.k is None and seen == [0, len(rungs)]
    values = {s.k: s.value for s in result.steps}
    assert result.best_k == len(rungs) and result.best_value == min(
        v for v in values.values() if v is not None
    )
    assert any("not met" in note and f"k={len(rungs)}" in note for note in result.notes), result.notes


def _fake(values: list[float]):  # type: ignore[no-untyped-def]
    seen: list[int] = []

    def measure(k: int, plan: dict[str, Config]) -> tuple[float | None, float | None]:
        seen.append(k)
        return values[k], float(len(plan))

    return measure, seen


RUNGS = [Rung([f"l{i}"], float(10 - i)) for i in range(9)]


def test_binary_search_order_and_bounds() -> None:
    values = [0.1, 0.2, 0.3, 0.5, 0.8, 0.91, 0.95, 0.99, 1.0, 1.0]  # holds ≥ 0.9 from k = 5
    measure, seen = _fake(values)
    result = search(RUNGS, W2, None, measure, metric="m", threshold=0.9, direction="at_least")
    assert result.k == 5 and result.monotonic and seen[:2] == [0, 9]
    assert len(seen) <= max_steps_for(9) == 6
    assert result.plan["l0"] == "float" and result.plan["l8"] == W2.id
    measure, seen = _fake([0.95, *values[1:]])
    assert search(RUNGS, W2, None, measure, metric="m", threshold=0.9, direction="at_least").k == 0
    assert seen == [0], "k = 0 holds: nothing else is measured"


def test_a_contradicting_step_is_reported() -> None:
    values = [0.1, 0.2, 0.3, 0.5, 0.95, 0.4, 0.6, 0.99, 1.0, 1.0]  # k=4 holds, k=5 misses
    measure, seen = _fake(values)
    result = search(RUNGS, W2, W8, measure, metric="m", threshold=0.9, direction="at_least")
    assert seen == [0, 9, 4, 2, 3] and result.k == 4
    measure, seen = _fake([0.1, 0.2, 0.3, 0.5, 0.6, 0.4, 0.95, 0.99, 1.0, 1.0])
    result = search(RUNGS, W2, W8, measure, metric="m", threshold=0.9, direction="at_least")
    assert 5 in seen and 4 in seen and not result.monotonic, seen
    assert any("not monotonic" in n and "k=5" in n for n in result.notes), result.notes


def test_max_steps_and_bad_input() -> None:
    measure, seen = _fake([0.1] * 9 + [1.0])
    result = search(RUNGS, W2, W8, measure, metric="m", threshold=0.9, direction="at_least", max_steps=3)
    assert len(seen) == 3 and result.met and any("max_steps" in n for n in result.notes)
    with pytest.raises(EngineError, match="finite"):
        search(RUNGS, W2, W8, measure, metric="m", threshold=math.nan, direction="at_least")
    with pytest.raises(EngineError, match="at least one"):
        search([], W2, W8, measure, metric="m", threshold=0.9, direction="at_least")
    assert not holds(None, 0.0, "at_most") and not holds(math.nan, 0.0, "at_least")


def test_layers_sharing_a_tensor_move_together() -> None:
    from tests.support.tied_lm import tied_model

    model, feeds = tied_model()
    w3 = WeightQuant(3)
    scan = layer_sensitivity(model, feeds, [w3])
    rungs, notes = ladder(scan, w3.id, "top1_agreement")
    tied = next(r for r in rungs if "emb" in r.layers)
    assert sorted(tied.layers) == ["emb", "head"], [r.layers for r in rungs]
    assert sorted(name for r in rungs for name in r.layers) == sorted(scan.layer_names)
    assert any("share a tensor" in note for note in notes), notes
    for k in range(len(rungs) + 1):
        plan = step_plan(rungs, k, w3, None)
        assert ("emb" in plan) == ("head" in plan), (k, sorted(plan))
