"""Cause attribution of combined configurations (worker/engine/sweep/attribution.py) on the digits CNN.

Every alone / cumulative / leave-one-out value is checked against a model the test compresses itself:
numpy magnitude pruning, truncated SVD and symmetric per-tensor rounding written here, applied to the
ONNX file's initializers, run in onnxruntime, and the KL taken with scipy."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper
from scipy.special import softmax
from scipy.stats import entropy

from worker.demo.models import DigitsSplit
from worker.engine.compression import (
    ActivationQuant,
    Calibration,
    CompressibleModel,
    LowRank,
    MagnitudePrune,
    Quantize,
    Schedule,
    WeightQuant,
)
from worker.engine.fidelity.compare import FidelityParams, bind_inputs
from worker.engine.sweep import GoldenReference, evaluate_point
from worker.engine.sweep.attribution import attribute, sub_config, techniques

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WEIGHTS = ("conv1.weight", "conv2.weight", "fc.weight")  # the CNN's compressible layers' weights


def _prune(w: np.ndarray, sparsity: float) -> np.ndarray:
    k = round(sparsity * w.size)
    out = w.copy().reshape(-1)
    out[np.argsort(np.abs(out), kind="stable")[:k]] = 0
    return out.reshape(w.shape)


def _low_rank(w: np.ndarray, ratio: float) -> np.ndarray:
    m = w.reshape(w.shape[0], -1).astype(np.float64)
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    r = max(1, round(ratio * min(m.shape)))
    return ((u[:, :r] * s[:r]) @ vt[:r]).reshape(w.shape).astype(np.float32)


def _round(w: np.ndarray, bits: int) -> np.ndarray:
    qmax = 2 ** (bits - 1) - 1
    step = np.abs(w).max() / qmax
    return (np.clip(np.round(w / step), -qmax, qmax) * step).astype(np.float32)


def _kl_by_hand(cnn_path: Path, x: np.ndarray, ops: list) -> float:
    """Mean KL(golden ‖ model whose weights went through `ops` in order), scipy on onnxruntime logits."""
    model = onnx.load(cnn_path)
    golden_logits = _run(model, x)
    for init in model.graph.initializer:
        if init.name in WEIGHTS:
            w = numpy_helper.to_array(init).astype(np.float32)
            for op in ops:
                w = op(w)
            init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))
    logits = _run(model, x)
    p, q = softmax(golden_logits.astype(np.float64), axis=1), softmax(logits.astype(np.float64), axis=1)
    return float(np.mean(entropy(p, q, axis=1)))


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"input": x})[0])


def test_techniques_and_sub_configs_keep_order_and_split_quantize() -> None:
    w4, a8 = WeightQuant(4), ActivationQuant(8)
    schedule = Schedule((MagnitudePrune(0.5), Quantize(w4, a8), LowRank(0.25)))
    found = techniques(schedule)
    assert [(t.stage, t.part, t.label) for t in found] == [
        (0, "all", "prune 50 %"),
        (1, "weights", "4-bit weights"),
        (1, "activations", "8-bit activations (minmax)"),
        (2, "all", "low rank 25 %"),
    ]
    assert sub_config(schedule, frozenset({0, 3})) == Schedule((MagnitudePrune(0.5), LowRank(0.25)))
    assert sub_config(schedule, frozenset({2})) == Quantize(activations=a8)
    assert sub_config(schedule, frozenset({0, 1, 2})) == Schedule((MagnitudePrune(0.5), Quantize(w4, a8)))
    assert sub_config(Quantize(w4, a8), frozenset({0})) == Quantize(weights=w4)
    assert techniques(WeightQuant(8)) != [] and len(techniques(WeightQuant(8))) == 1
    with pytest.raises(ValueError):
        sub_config(schedule, frozenset({4}))


def test_schedule_attribution_equals_models_compressed_by_hand(
    golden: CompressibleModel, cnn_path: Path, digits_split: DigitsSplit
) -> None:
    x = digits_split.x_test[:200]
    feeds = {"input": x}
    schedule = Schedule((MagnitudePrune(0.5), LowRank(0.5), WeightQuant(4)))
    point = evaluate_point(golden, feeds, None, schedule, batch_size=64, layers=False)
    reference = GoldenReference(golden, feeds, 64)
    progress: list[tuple[int, int]] = []
    doc = attribute(
        golden,
        feeds,
        None,
        schedule,
        point.fidelity,
        reference=reference,
        calibration=None,
        params=FidelityParams(batch_size=64),
        on_progress=lambda done, total: progress.append((done, total)),
    )
    assert doc is not None and doc["metric"] == "kl_mean"
    assert [t["label"] for t in doc["techniques"]] == ["prune 50 %", "low rank 50 %", "4-bit weights"]
    assert progress == [(i, 6) for i in range(1, 7)]  # 3 alone, then {0,1}, {1,2}, {0,2}: 3n - 3
    ops = [lambda w: _prune(w, 0.5), lambda w: _low_rank(w, 0.5), lambda w: _round(w, 4)]

    def by_hand(keep: tuple[int, ...]) -> float:
        return _kl_by_hand(cnn_path, x, [ops[i] for i in keep])

    assert doc["alone"] == pytest.approx([by_hand((i,)) for i in range(3)], rel=1e-4)
    assert doc["cumulative"] == pytest.approx([by_hand((0,)), by_hand((0, 1)), by_hand((0, 1, 2))], rel=1e-4)
    assert doc["leave_one_out"] == pytest.approx(
        [by_hand((1, 2)), by_hand((0, 2)), by_hand((0, 1))], rel=1e-4
    )
    assert doc["total"] == point.fidelity["kl_mean"] == doc["cumulative"][-1]
    assert doc["interaction"] == pytest.approx(doc["total"] - sum(doc["alone"]), rel=1e-12)
    expected = [(i,) for i in range(3)] + [(0, 1), (0, 2), (1, 2), (0, 1, 2)]
    assert [tuple(e["techniques"]) for e in doc["evaluations"]] == expected
    assert all(e["fidelity"]["accuracy_compressed"] is None for e in doc["evaluations"])  # no labels


def test_weight_and_activation_quantization_split(
    golden: CompressibleModel, cnn_path: Path, digits_split: DigitsSplit
) -> None:
    x, labels = digits_split.x_test[:200], digits_split.y_test[:200]
    feeds = {"input": x}
    calibration = Calibration(golden, bind_inputs({"input": digits_split.x_train[:128]}, golden.inputs), 64)
    config = Quantize(WeightQuant(3), ActivationQuant(6))
    point = evaluate_point(
        golden, feeds, labels, config, batch_size=64, calibration=calibration, layers=False
    )
    doc = attribute(
        golden,
        feeds,
        labels,
        config,
        point.fidelity,
        reference=GoldenReference(golden, feeds, 64),
        calibration=calibration,
        params=FidelityParams(batch_size=64),
    )
    assert doc is not None
    assert [t["config"]["type"] for t in doc["techniques"]] == ["weight_quant", "activation_quant"]
    weights_alone = _kl_by_hand(cnn_path, x, [lambda w: _round(w, 3)])
    assert doc["alone"][0] == pytest.approx(weights_alone, rel=1e-4)
    assert doc["leave_one_out"] == [
        doc["alone"][1],
        doc["alone"][0],
    ]  # two techniques: leaving one = the other
    activations_alone = evaluate_point(
        golden, feeds, labels, Quantize(activations=ActivationQuant(6)), calibration=calibration, layers=False
    )
    assert doc["alone"][1] == pytest.approx(activations_alone.fidelity["kl_mean"], rel=1e-12)
    accuracies = {tuple(e["techniques"]): e["fidelity"]["accuracy_compressed"] for e in doc["evaluations"]}
    assert set(accuracies) == {(0,), (1,), (0, 1)} and all(a is not None for a in accuracies.values())
    assert accuracies[(0, 1)] == point.fidelity["accuracy_compressed"]


def test_single_technique_has_no_attribution(golden: CompressibleModel, digits_split: DigitsSplit) -> None:
    feeds = {"input": digits_split.x_test[:64]}
    for config in (None, WeightQuant(8), Schedule((MagnitudePrune(0.5),))):
        assert (
            attribute(
                golden,
                feeds,
                None,
                config,
                {},
                reference=GoldenReference(golden, feeds, 64),
                calibration=None,
                params=FidelityParams(batch_size=64),
            )
            is None
        )


def test_every_subset_size_is_covered_once() -> None:
    """n = 4 techniques: 4 alone, 2 longer prefixes, 4 leave-one-out of which one is the 3-prefix."""
    schedule = Schedule((MagnitudePrune(0.25), Quantize(WeightQuant(8), ActivationQuant(8)), LowRank(0.5)))
    n = len(techniques(schedule))
    assert n == 4
    configs = {sub_config(schedule, frozenset(s)) for k in range(1, n) for s in combinations(range(n), k)}
    assert len(configs) == 2**n - 2  # every proper subset gives a distinct configuration
