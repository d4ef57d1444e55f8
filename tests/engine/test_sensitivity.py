"""Layer-wise sensitivity, chunk merging, schedules, channel importance and mixed precision, on the
digits CNN trained in the test session; numbers are checked against independent computations."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.engine.test_compression_onnx import exported_onnx
from tests.support.tied_lm import tied_model
from worker.demo.models import DigitsCNN, DigitsSplit, export_torch_program
from worker.engine.compression import (
    ActivationQuant,
    ChannelPrune,
    MagnitudePrune,
    Quantize,
    Schedule,
    WeightQuant,
    as_compressible,
    open_compressible,
)
from worker.engine.compression.mixed_precision import allocate
from worker.engine.errors import EngineError, JobCancelled
from worker.engine.sensitivity.scan import (
    InfeasibleBudgetError,
    SensitivityResult,
    compression_schedule,
    importance,
    layer_sensitivity,
    measure_plan,
    merge_sensitivity,
    plan_mixed_precision,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


BITS = [WeightQuant(8), WeightQuant(6), WeightQuant(4), WeightQuant(2)]
LAYERS = ["conv1", "conv2", "fc"]


@pytest.fixture(scope="module")
def feeds(digits_split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"x": digits_split.x_test}


@pytest.fixture(scope="module")
def bits_result(digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]) -> SensitivityResult:
    return layer_sensitivity(digits_cnn, feeds, BITS, whole_model=True)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _reference_kl(model: torch.nn.Module, x: np.ndarray, quantize: dict[str, int]) -> tuple[float, float]:
    """KL mean and top-1 agreement computed without Kneeboard: numpy-quantized weights in a copy."""
    import copy

    work = copy.deepcopy(model)
    with torch.no_grad():
        for name, bits in quantize.items():
            w = getattr(work, name).weight
            qmax = 2 ** (bits - 1) - 1
            scale = np.float32(float(w.abs().max()) / qmax)
            q = np.clip(np.round(w.numpy() * (np.float32(1) / scale)), -qmax, qmax) * scale
            w.copy_(torch.from_numpy(q.astype(np.float32)))
        golden = model(torch.from_numpy(x)).numpy()
        other = work(torch.from_numpy(x)).numpy()
    lp, lq = _log_softmax(golden), _log_softmax(other)
    kl = float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))
    return kl, float(np.mean(golden.argmax(1) == other.argmax(1)))


def test_eight_bits_are_harmless_and_two_bits_are_not(bits_result: SensitivityResult) -> None:
    kl = np.array(bits_result.matrix("kl_mean"), dtype=float)
    top1 = np.array(bits_result.matrix("top1_agreement"), dtype=float)
    sqnr = np.array(bits_result.matrix("sqnr_db"), dtype=float)
    assert bits_result.computed_layers == LAYERS
    assert (kl[:, 0] < 1e-3).all() and (top1[:, 0] >= 0.99).all() and (sqnr[:, 0] > 35).all()
    assert (kl[:, 3] > 20 * kl[:, 0]).all() and (kl[:, 3] > 0.05).all() and (top1[:, 3] < 0.97).all()
    assert list(kl.mean(axis=0)) == sorted(kl.mean(axis=0))  # W8 < W6 < W4 < W2 on average
    assert (np.diff(sqnr, axis=1) < 0).all()
    whole = [bits_result.whole_model[c.id].kl_mean for c in BITS]
    assert all(v is not None for v in whole)
    assert whole == sorted(float(v or 0) for v in whole)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("bits", [8, 4, 2])
def test_only_cells_match_an_independent_quantizer(
    bits_result: SensitivityResult, digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray], layer: str, bits: int
) -> None:
    kl, top1 = _reference_kl(digits_cnn, feeds["x"], {layer: bits})
    cell = bits_result.cell(layer, f"w{bits}-sym-tensor").divergence
    assert cell.kl_mean == pytest.approx(kl, rel=1e-3, abs=1e-9)
    assert cell.top1_agreement == pytest.approx(top1)


def test_all_but_compresses_every_other_layer(digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]) -> None:
    result = layer_sensitivity(digits_cnn, feeds, [WeightQuant(4)], mode="all_but", layers=["conv2"])
    kl, _ = _reference_kl(digits_cnn, feeds["x"], {"conv1": 4, "fc": 4})
    cell = result.cell("conv2", "w4-sym-tensor")
    assert cell.divergence.kl_mean == pytest.approx(kl, rel=1e-3)
    assert cell.compressed == ["conv1.weight", "fc.weight"]
    assert result.to_dict()["mode"] == "all_but"


def test_chunks_merge_into_the_single_run(
    bits_result: SensitivityResult, digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]
) -> None:
    first = layer_sensitivity(digits_cnn, feeds, BITS, layers=["fc"], whole_model=True)
    second = layer_sensitivity(digits_cnn, feeds, [c.to_dict() for c in BITS], layers=["conv2", "conv1"])
    over_the_wire = json.loads(json.dumps(first.to_dict(), allow_nan=False))
    merged = merge_sensitivity([second, over_the_wire])
    assert merged.to_dict() == bits_result.to_dict()
    assert first.to_dict()["matrix"]["rows"] == ["fc"]
    other = layer_sensitivity(digits_cnn, feeds, [WeightQuant(8)], layers=["fc"])
    with pytest.raises(EngineError, match="configs"):
        merge_sensitivity([second, other])
    less_data = layer_sensitivity(digits_cnn, {"x": feeds["x"][:100]}, BITS, layers=["fc"])
    with pytest.raises(EngineError, match="differs"):
        merge_sensitivity([second, less_data])


def test_ranking_and_json_shape(bits_result: SensitivityResult) -> None:
    data = bits_result.to_dict()
    text = json.dumps(data, allow_nan=False)  # no NaN / inf anywhere
    assert "NaN" not in text
    kl = {row: values for row, values in zip(data["matrix"]["rows"], data["matrix"]["kl_mean"], strict=True)}
    for index, cid in enumerate(data["matrix"]["columns"]):
        order = data["ranking"]["by_config"][cid]
        assert [kl[name][index] for name in order] == sorted(
            (kl[name][index] for name in order), reverse=True
        )
    means = {name: np.mean(values) for name, values in kl.items()}
    assert data["ranking"]["overall"] == sorted(means, key=lambda n: -means[n])
    layer = data["layers"][1]
    assert layer == {
        "name": "conv2",
        "type": "Conv2d",
        "params": 16 * 8 * 9 + 16,
        "weight_params": 16 * 8 * 9,
        "macs": 16 * 4 * 4 * 8 * 9,
        "depth_index": 1,
        "depth_fraction": 0.5,
        "tensors": ["conv2.weight", "conv2.bias"],
        "shared_with": [],
        "notes": [],
    }
    assert data["configs"][0] == {"id": "w8-sym-tensor", "config": BITS[0].to_dict(), "weight_bits": 8}
    assert data["output_kind"] == "classification" and data["n_samples"] == 360


def test_progress_is_reported_and_cancellation_stops(
    digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]
) -> None:
    seen: list[tuple[int, int]] = []
    layer_sensitivity(digits_cnn, feeds, BITS[:2], on_progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, 6) for i in range(1, 7)]

    def cancel(done: int, total: int) -> None:
        raise JobCancelled("stop")

    with pytest.raises(JobCancelled):
        layer_sensitivity(digits_cnn, feeds, BITS, on_progress=cancel)
    with pytest.raises(EngineError, match="not a compressible layer"):
        layer_sensitivity(digits_cnn, feeds, BITS, layers=["conv9"])
    with pytest.raises(EngineError, match="distinct"):
        layer_sensitivity(digits_cnn, feeds, [WeightQuant(8), WeightQuant(8)])


def test_onnx_and_torch_export_give_the_same_sensitivity(
    bits_result: SensitivityResult,
    digits_cnn: DigitsCNN,
    digits_split: DigitsSplit,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    sample = digits_split.x_test[:2]
    onnx_model = open_compressible(
        exported_onnx("cnn", digits_cnn, sample, tmp_path_factory), "onnx", intra_op_threads=1
    )
    onnx_result = layer_sensitivity(onnx_model, {"input": digits_split.x_test}, BITS)
    assert onnx_result.to_dict()["ranking"] == bits_result.to_dict()["ranking"]
    np.testing.assert_allclose(
        np.array(onnx_result.matrix("kl_mean"), dtype=float),
        np.array(bits_result.matrix("kl_mean"), dtype=float),
        rtol=0.02,
    )
    assert onnx_result.model["backend"] == "onnx"
    program = open_compressible(
        export_torch_program(digits_cnn, sample, tmp_path / "cnn.pt2"), "torch_export"
    )
    name = program.inputs[0].name
    program_result = layer_sensitivity(
        program, {name: digits_split.x_test}, [Quantize(WeightQuant(4), ActivationQuant(6))]
    )
    module_result = layer_sensitivity(
        digits_cnn, {"x": digits_split.x_test}, [Quantize(WeightQuant(4), ActivationQuant(6))]
    )
    assert program_result.matrix() == module_result.matrix()


def test_shared_weights_are_reported_in_the_scan() -> None:
    model, feeds = tied_model()
    result = layer_sensitivity(model, feeds, [WeightQuant(3)], layers=["emb", "head", "proj"])
    emb, head = result.cell("emb", "w3-sym-tensor"), result.cell("head", "w3-sym-tensor")
    assert emb.affected_layers == ["head"] and head.affected_layers == ["emb"]
    assert head.divergence.kl_mean is not None and head.divergence.kl_mean > 0  # not a silent zero
    assert head.divergence == emb.divergence  # one tensor: the same change either way
    assert result.cell("proj", "w3-sym-tensor").affected_layers == []
    all_but = layer_sensitivity(model, feeds, [WeightQuant(3)], layers=["emb"], mode="all_but")
    assert any("compressed too" in note for note in all_but.cell("emb", "w3-sym-tensor").notes)


# ----------------------------------------------------------------------------------------- schedule


def test_schedule_records_each_stage(digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]) -> None:
    schedule = Schedule((MagnitudePrune(0.3), WeightQuant(4), ActivationQuant(8)))
    stages = compression_schedule(digits_cnn, feeds, schedule.to_dict())
    assert [s.cumulative for s in stages] == [
        "prune-u0.3",
        "prune-u0.3>w4-sym-tensor",
        "prune-u0.3>w4-sym-tensor>a8-minmax",
    ]
    whole = measure_plan(digits_cnn, feeds, dict.fromkeys(LAYERS, Schedule(schedule.stages[:2])))
    assert stages[1].divergence == whole.measured
    assert 0 < float(stages[0].divergence.kl_mean or 0) < float(stages[1].divergence.kl_mean or 0)
    json.dumps([s.to_dict() for s in stages], allow_nan=False)


# --------------------------------------------------------------------------------- channel importance


def _spearman(a: list[float], b: list[float]) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def test_channel_importance_methods(
    digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray], tmp_path_factory: pytest.TempPathFactory
) -> None:
    weight = digits_cnn.conv2.weight.detach().numpy()
    l1 = importance(digits_cnn, "conv2", "l1")
    np.testing.assert_allclose(l1.scores, np.abs(weight).sum(axis=(1, 2, 3)), rtol=1e-6)
    l2 = importance(digits_cnn, "conv2", "l2")
    np.testing.assert_allclose(
        l2.scores, np.sqrt((weight.astype(np.float64) ** 2).sum(axis=(1, 2, 3))), rtol=1e-6
    )
    recon = importance(digits_cnn, "conv2", "reconstruction", feeds)
    taylor = importance(digits_cnn, "conv2", "taylor", feeds)
    assert _spearman(taylor.scores, recon.scores) > 0.8
    assert taylor.order()[0] in recon.order()[:3]
    # reconstruction of channel j == the KL of the model with channel j zeroed by hand
    j = recon.order()[0]
    import copy

    work = copy.deepcopy(digits_cnn)
    with torch.no_grad():
        work.conv2.weight[j] = 0
        work.conv2.bias[j] = 0  # type: ignore[index]
        g, c = digits_cnn(torch.from_numpy(feeds["x"])).numpy(), work(torch.from_numpy(feeds["x"])).numpy()
    lp, lq = _log_softmax(g), _log_softmax(c)
    assert recon.scores[j] == pytest.approx(float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1))), rel=1e-6)
    data = recon.to_dict()
    assert [c["channel"] for c in data["channels"]] == recon.order() and data["n_channels"] == 16
    scores = [c["score"] for c in data["channels"]]
    assert scores == sorted(scores, reverse=True)
    onnx_model = open_compressible(
        exported_onnx("cnn", digits_cnn, feeds["x"][:2], tmp_path_factory), "onnx", intra_op_threads=1
    )
    onnx_recon = importance(onnx_model, "conv2", "reconstruction", {"input": feeds["x"]})
    np.testing.assert_allclose(onnx_recon.scores, recon.scores, rtol=0.02, atol=1e-7)
    with pytest.raises(EngineError, match="gradients"):
        importance(onnx_model, "conv2", "taylor", {"input": feeds["x"]})


def test_taylor_sees_recurrent_units() -> None:
    model, feeds = tied_model()
    recon = importance(model, "gru", "reconstruction", feeds)
    taylor = importance(model, "gru", "taylor", feeds)
    assert len(taylor.scores) == 16 and min(taylor.scores) > 0
    assert _spearman(taylor.scores, recon.scores) > 0.6


# --------------------------------------------------------------------------------- mixed precision


def _brute_force(result: SensitivityResult, budget: float) -> float:
    params = [layer["weight_params"] for layer in result.layers]
    best = math.inf
    for combo in itertools.product(range(len(BITS)), repeat=len(LAYERS)):
        size = sum(p * BITS[k].bits / 8 for p, k in zip(params, combo, strict=True))
        if size <= budget:
            kls = [result.cell(n, BITS[k].id).divergence.kl_mean for n, k in zip(LAYERS, combo, strict=True)]
            best = min(best, sum(float(v) for v in kls if v is not None))
    return best


@pytest.mark.parametrize("average_bits", [2.0, 3.0, 4.0, 5.0, 7.0, 8.0])
def test_milp_plan_is_the_brute_force_optimum(bits_result: SensitivityResult, average_bits: float) -> None:
    total = sum(layer["weight_params"] for layer in bits_result.layers)
    budget = total * average_bits / 8
    plan = plan_mixed_precision(bits_result, budget)
    expected_kl = _brute_force(bits_result, budget)
    assert plan.size_bytes <= budget
    assert plan.predicted_kl == pytest.approx(expected_kl, rel=1e-9, abs=1e-15)
    assert (
        sum(bits_result.layers[i]["weight_params"] * plan.bits[n] for i, n in enumerate(LAYERS)) / 8
        == plan.size_bytes
    )
    json.dumps(plan.to_dict(), allow_nan=False)


def test_milp_respects_ties_and_reports_infeasible_budgets(bits_result: SensitivityResult) -> None:
    # synthetic: layer 0 wants few bits, layer 1 many; tied, they must agree
    divergence = [[0.0, 0.0], [5.0, 0.0]]
    untied = allocate(divergence, [10, 10], [2, 8], budget_bytes=100)
    tied = allocate(divergence, [10, 10], [2, 8], budget_bytes=100, ties=[(0, 1)])
    assert untied.choice == [0, 1] and tied.choice == [1, 1]
    with pytest.raises(InfeasibleBudgetError, match="smallest possible size"):
        plan_mixed_precision(bits_result, budget_bytes=100)


def test_measured_plan_is_close_to_its_prediction(
    bits_result: SensitivityResult, digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]
) -> None:
    total = sum(layer["weight_params"] for layer in bits_result.layers)
    plan = plan_mixed_precision(bits_result, total * 4 / 8)  # the size of uniform 4-bit weights
    uniform = sum(float(bits_result.cell(n, "w4-sym-tensor").divergence.kl_mean or 0) for n in LAYERS)
    assert plan.predicted_kl <= uniform
    measured = measure_plan(digits_cnn, feeds, plan)
    assert measured.predicted_kl == plan.predicted_kl
    assert measured.measured.kl_mean is not None
    assert measured.measured.kl_mean <= float(bits_result.whole_model["w4-sym-tensor"].kl_mean or 0)
    assert 0.25 * plan.predicted_kl <= measured.measured.kl_mean <= 4 * plan.predicted_kl
    json.dumps(measured.to_dict(), allow_nan=False)


def test_non_bit_configs_are_not_plan_options(digits_cnn: DigitsCNN, feeds: dict[str, np.ndarray]) -> None:
    result = layer_sensitivity(digits_cnn, feeds, [ChannelPrune(0.25), WeightQuant(8)], layers=LAYERS)
    plan = plan_mixed_precision(result, 10_000)
    assert set(plan.assignments.values()) == {"w8-sym-tensor"}
    with pytest.raises(EngineError, match="bit-width configs"):
        plan_mixed_precision(result, 10_000, configs=["prune-ch0.25-l1"])
    handle = as_compressible(digits_cnn)
    assert handle.layer("fc").to_dict()["type"] == "Linear"
