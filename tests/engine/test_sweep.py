"""Sweep points of the digits CNN: fidelity through compare_models, cost against hand counts, runtime
forms, ONNX exports re-run in onnxruntime, and latency reports (structure only: timings are noisy)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import numpy_helper

from tests.engine.test_compression_onnx import exported_onnx
from worker.demo.models import DigitsCNN, DigitsSplit, train_digits_lstm
from worker.engine.compression import (
    ActivationQuant,
    ChannelPrune,
    CompressibleModel,
    Config,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NoiseInjection,
    Quantize,
    Schedule,
    UnknownLayerError,
    WeightQuant,
    as_compressible,
    open_compressible,
)
from worker.engine.errors import EngineError
from worker.engine.sweep import (
    SweepPoint,
    compare_latency,
    evaluate_point,
    evaluate_points,
    export_point,
    measure_latency,
    model_cost,
    point_spec,
    runtime_support,
)
from worker.engine.sweep.points import json_safe

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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


def _initializers(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def _float_params(path: Path) -> dict[str, np.ndarray]:
    return {k: v for k, v in _initializers(path).items() if v.dtype == np.float32 and v.size > 1}


def _export(point: SweepPoint, kind: str) -> dict:
    return next(e for e in point.exports if e["kind"] == kind)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _kl_numpy(golden: np.ndarray, other: np.ndarray) -> float:
    lp, lq = _log_softmax(golden), _log_softmax(other)
    return float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0])


# ------------------------------------------------------------------------------------------- points


def test_every_point_is_json_without_nan(points: dict[str, SweepPoint]) -> None:
    for point in points.values():
        data = point.to_dict()
        text = json.dumps(data, allow_nan=False)
        assert json.loads(text)["id"] == point.id
        assert set(data) >= {"id", "config", "plan", "fidelity", "cost", "runtime", "exports", "notes"}
        for key in (
            "kl_mean",
            "js_mean",
            "top1_agreement",
            "accuracy_drop_pp",
            "ece_golden",
            "ece_compressed",
        ):
            assert data["fidelity"][key] is not None, (point.id, key)


def test_identity_point_is_exact(points: dict[str, SweepPoint], cnn_path: Path) -> None:
    point = points["fp32"].to_dict()
    fidelity, cost = point["fidelity"], point["cost"]
    assert point["id"] == "fp32" and point["config"] is None and point["plan"] is None
    assert fidelity["kl_mean"] == 0.0 and fidelity["js_mean"] == 0.0
    assert fidelity["top1_agreement"] == 1.0 and fidelity["accuracy_drop_pp"] == 0.0
    assert fidelity["ece_golden"] == fidelity["ece_compressed"]
    assert fidelity["sqnr_db"] is None and fidelity["sqnr_db_infinite"] is True
    assert any("sqnr_db is None: infinite" in note for note in point["notes"])
    params = sum(v.size for v in _float_params(cnn_path).values())
    assert cost["params_total"] == params == cost["params_kept"]
    assert cost["size_bytes"] == 4 * params == cost["size_bytes_fp32"]
    assert cost["compression_ratio"] == 1.0 and cost["bops"] == cost["bops_fp32"] == cost["macs"] * 1024
    assert point["runtime"]["executable"] and point["runtime"]["real_export"] == "fp32"
    assert [e["kind"] for e in point["exports"]] == ["fp32"]


def test_accuracy_matches_an_independent_count(
    points: dict[str, SweepPoint], cnn_path: Path, digits_split: DigitsSplit
) -> None:
    logits = _run(cnn_path, digits_split.x_test)
    accuracy = float((logits.argmax(1) == digits_split.y_test).mean())
    for point in points.values():
        assert point.fidelity["accuracy_golden"] == pytest.approx(accuracy, abs=1e-12)
        drop = 100.0 * (point.fidelity["accuracy_golden"] - point.fidelity["accuracy_compressed"])
        assert point.fidelity["accuracy_drop_pp"] == pytest.approx(drop)


def test_size_of_8bit_per_tensor_symmetric_weights_by_hand(
    points: dict[str, SweepPoint], cnn_path: Path
) -> None:
    params = _float_params(cnn_path)
    weights = [v for v in params.values() if v.ndim >= 2]
    biases = [v for v in params.values() if v.ndim == 1]
    expected = sum(w.size for w in weights) * 1 + sum(b.size for b in biases) * 4 + 4 * len(weights)
    cost = points["w8"].cost
    assert cost["size_bytes"] == expected
    assert cost["quant_param_bytes"] == 4 * len(weights)
    assert cost["compression_ratio"] == pytest.approx(cost["size_bytes_fp32"] / expected)
    assert cost["bops"] == cost["macs"] * 8 * 32  # weights 8 bits, activations stay float


def test_size_of_asymmetric_per_channel_and_mixed_plans_by_hand(
    golden: CompressibleModel, cnn_path: Path
) -> None:
    params = _float_params(cnn_path)
    weights = {k: v for k, v in params.items() if v.ndim >= 2}
    bias_bytes = 4 * sum(v.size for v in params.values() if v.ndim == 1)
    # 3-bit asymmetric per channel: packed weights + per channel (4-byte scale + 1-byte zero point)
    cost = model_cost(golden, {layer.name: WeightQuant(3, False, True) for layer in golden.layers()})
    channels = {"conv1.weight": 8, "conv2.weight": 16, "fc.weight": 10}
    expected = sum(math.ceil(w.size * 3 / 8) + channels[k] * 5 for k, w in weights.items()) + bias_bytes
    assert cost.size_bytes == expected
    # a per-layer plan (what plan_mixed_precision gives): each layer at its own width
    bits = {"conv1": 4, "conv2": 6, "fc": 8}
    cost = model_cost(golden, {name: WeightQuant(b) for name, b in bits.items()})
    expected = sum(math.ceil(weights[f"{n}.weight"].size * b / 8) + 4 for n, b in bits.items()) + bias_bytes
    assert cost.size_bytes == expected
    # an uncovered layer stays at 32 bits
    cost = model_cost(golden, {"fc": WeightQuant(8)})
    assert cost.size_bytes == 4 * sum(v.size for v in params.values()) - 3 * weights["fc.weight"].size + 4


def test_magnitude_pruning_keeps_half_of_each_weight(points: dict[str, SweepPoint], export_dir: Path) -> None:
    point = points["prune"]
    export = _export(point, "simulated-float")
    arrays = _float_params(export_dir / export["file"])
    weights = {k: v for k, v in arrays.items() if v.ndim >= 2}
    biases = [v for v in arrays.values() if v.ndim == 1]
    for name, w in weights.items():
        assert np.count_nonzero(w) == w.size - round(0.5 * w.size), name
    kept = sum(np.count_nonzero(w) for w in weights.values()) + sum(b.size for b in biases)
    cost = point.cost
    assert cost["params_kept"] == kept
    assert cost["params_total"] == sum(v.size for v in arrays.values())
    assert cost["size_bytes"] == cost["size_bytes_fp32"]  # dense: the zeros are stored
    assert cost["size_bytes_sparse"] < cost["size_bytes"]
    assert cost["macs"] == cost["macs_effective"]
    assert point.runtime["executable"] and point.runtime["matches_simulation"]


def test_bops_and_macs_of_a_two_layer_model_by_hand() -> None:
    torch.manual_seed(0)
    model = as_compressible(
        torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    )
    model.prepare({"input": np.zeros((1, 8), dtype=np.float32)})
    assert [layer.name for layer in model.layers()] == ["0", "2"]
    macs = 8 * 16 + 16 * 4
    both = Quantize(WeightQuant(4), ActivationQuant(8))
    cost = model_cost(model, {"0": both, "2": both})
    assert cost.macs == macs and cost.bops == macs * 4 * 8 and cost.bops_fp32 == macs * 32 * 32
    # weights packed at 4 bits + float biases + one scale per weight + (scale, zero point) per layer output
    assert cost.size_bytes == (8 * 16 + 16 * 4) // 2 + 4 * (16 + 4) + 2 * 4 + 2 * (4 + 1)
    cost = model_cost(model, {"0": WeightQuant(8)})
    assert cost.bops == 8 * 16 * 8 * 32 + 16 * 4 * 32 * 32
    # rank 4 of the 16 x 8 weight: factors 4 * (16 + 8) = 96 < 128; MACs scale alike
    cost = model_cost(model, {"0": LowRank(0.5)})
    assert cost.layers[0].tensors[0].stored_elements == 96
    assert cost.layers[0].macs_effective == 96 and cost.macs_effective == 96 + 64


def test_low_rank_and_channel_prune_costs(points: dict[str, SweepPoint], golden: CompressibleModel) -> None:
    cost = points["lowrank"].cost
    assert cost["params_kept"] < cost["params_total"] and cost["size_bytes"] < cost["size_bytes_fp32"]
    assert cost["macs_effective"] < cost["macs"]
    channel = model_cost(golden, {layer.name: ChannelPrune(0.25) for layer in golden.layers()})
    conv1 = channel.layers[0].tensors
    assert (
        conv1[0].nonzero == 6 * 9 and conv1[1].kept == np.count_nonzero(golden.read("conv1.bias").numpy()) - 2
    )


# ------------------------------------------------------------------------------------------ runtime


def test_runtime_support_per_config() -> None:
    layers = ["a", "b"]

    def support(config: Config | dict[str, Config]) -> tuple[bool, tuple[str, ...]]:
        plan = config if isinstance(config, dict) else dict.fromkeys(layers, config)
        result = runtime_support(plan, layers)
        return result.executable, result.real_kinds

    assert support({}) == (True, ("fp32",))
    assert support(WeightQuant(8)) == (True, ("real-int8-weights", "real-int8-dynamic"))
    assert support(WeightQuant(4, per_channel=True)) == (True, ("real-int8-weights",))
    assert support(WeightQuant(12)) == (False, ())
    assert support(Quantize(WeightQuant(8), ActivationQuant(8, "percentile"))) == (True, ("real-int8-qdq",))
    assert support(Quantize(WeightQuant(4), ActivationQuant(8))) == (False, ())
    assert support(ActivationQuant(8)) == (False, ())
    assert support(FloatCast("fp16")) == (True, ("fp16",))
    assert support(FloatCast("bf16")) == (False, ())
    assert support(NoiseInjection(8)) == (False, ())
    assert support(MagnitudePrune(0.5)) == (True, ("simulated-float",))
    assert support(Schedule((MagnitudePrune(0.3), WeightQuant(8)))) == (
        True,
        ("real-int8-weights", "real-int8-dynamic"),
    )
    assert support(Schedule((WeightQuant(8), MagnitudePrune(0.3)))) == (False, ())
    assert support({"a": WeightQuant(4), "b": WeightQuant(8)}) == (True, ("real-int8-weights",))
    assert support({"a": WeightQuant(4), "b": MagnitudePrune(0.5)}) == (True, ("real-int8-weights",))
    assert support({"a": Quantize(WeightQuant(8), ActivationQuant(8))}) == (False, ())
    assert support({"a": FloatCast("fp16")}) == (False, ())


def test_points_say_what_is_executable(points: dict[str, SweepPoint]) -> None:
    runtime = {name: p.runtime for name, p in points.items()}
    assert not runtime["noise"]["executable"] and "probe" in runtime["noise"]["runtime_note"]
    assert runtime["qdq"]["real_export"] == "real-int8-qdq" and runtime["qdq"]["matches_simulation"] is False
    assert runtime["w8"]["real_export"] == "real-int8-weights" and runtime["w8"]["matches_simulation"] is True
    assert runtime["fp16"]["real_export"] == "fp16"
    assert [e["kind"] for e in points["noise"].exports] == ["simulated-float"]


def test_point_spec_accepts_configs_plans_and_dicts(golden: CompressibleModel) -> None:
    names = [layer.name for layer in golden.layers()]
    assert point_spec(golden, WeightQuant(4)).id == "w4-sym-tensor"
    assert point_spec(golden, WeightQuant(4).to_dict()).uniform == WeightQuant(4)
    assert point_spec(golden, dict.fromkeys(names, WeightQuant(4))).uniform == WeightQuant(4)
    partial = point_spec(golden, {"fc": {"type": "weight_quant", "bits": 4}})
    assert (
        partial.uniform is None
        and partial.id.startswith("plan-")
        and partial.to_dict()["plan"] == {"fc": WeightQuant(4).to_dict()}
    )
    assert point_spec(golden, {}).id == point_spec(golden, None).id == "fp32"
    with pytest.raises(UnknownLayerError):
        point_spec(golden, {"nope": WeightQuant(4)})


def test_point_without_labels_explains_missing_accuracy(
    golden: CompressibleModel, feeds: dict[str, np.ndarray]
) -> None:
    point = evaluate_point(golden, {"input": feeds["input"][:64]}, None, WeightQuant(6), batch_size=32)
    data = point.to_dict()
    assert data["fidelity"]["accuracy_golden"] is None and data["fidelity"]["ece_compressed"] is None
    assert any("accuracy_golden is None: no labels" in note for note in data["notes"])
    assert data["fidelity"]["kl_mean"] > 0


def test_json_safe_replaces_non_finite_numbers() -> None:
    data = json_safe({"a": float("nan"), "b": [np.float32(1.5), float("inf")], "c": (np.int64(3),)})
    assert data == {"a": None, "b": [1.5, None], "c": [3]}


# ------------------------------------------------------------------------------------------ exports


def test_simulated_exports_reproduce_the_points(
    points: dict[str, SweepPoint], export_dir: Path, cnn_path: Path, digits_split: DigitsSplit
) -> None:
    golden_logits = _run(cnn_path, digits_split.x_test)
    for name, point in points.items():
        kind = "fp32" if name == "fp32" else "simulated-float"
        export = _export(point, kind)
        measured, simulated = export["metrics"]["measured"], export["metrics"]["simulated"]
        assert simulated == point.fidelity
        assert abs(measured["kl_mean"] - point.fidelity["kl_mean"]) <= 1e-9, name
        assert measured["top1_agreement"] == point.fidelity["top1_agreement"]
        assert measured["accuracy_compressed"] == point.fidelity["accuracy_compressed"]
        # independent of Kneeboard's metrics: the file run here, KL computed with numpy
        logits = _run(export_dir / export["file"], digits_split.x_test)
        assert abs(_kl_numpy(golden_logits, logits) - point.fidelity["kl_mean"]) <= 1e-6, name
        assert export["matches_simulation"] is True
        assert export["file_size_bytes"] == (export_dir / export["file"]).stat().st_size
        assert export["size_bytes"] == point.cost["size_bytes"]
        manifest = json.loads((export_dir / export["file"]).with_suffix(".json").read_text())
        assert manifest["source_sha256"] == export["source_sha256"] and len(manifest["source_sha256"]) == 64
        config = CONFIGS[name]
        assert manifest["config"] == (None if config is None else config.to_dict())


def test_real_int8_weight_export_is_int8_and_exact(
    points: dict[str, SweepPoint], export_dir: Path, cnn_path: Path
) -> None:
    point = points["w8"]
    export = _export(point, "real-int8-weights")
    path = export_dir / export["file"]
    arrays = _initializers(path)
    ints = {k: v for k, v in arrays.items() if v.dtype == np.int8 and v.size > 1}
    assert set(export["quantization"]["weights"]) == {"conv1.weight", "conv2.weight", "fc.weight"}
    assert {v.size for v in ints.values()} == {72, 1152, 2560}
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert ops.count("DequantizeLinear") == 3
    assert abs(export["metrics"]["measured"]["kl_mean"] - point.fidelity["kl_mean"]) <= 1e-6
    assert export["file_size_bytes"] < cnn_path.stat().st_size


def test_recurrent_weights_become_int8_too(
    digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The LSTM's weights are computed by a constant sub-graph in the dynamo export and compressed per
    direction: they still become int8 + DequantizeLinear (per channel here), bit-exact with the simulation."""
    lstm = train_digits_lstm(digits_split, seed=0)
    golden = open_compressible(
        exported_onnx("lstm", lstm, digits_split.x_test[:2], tmp_path_factory), "onnx", intra_op_threads=1
    )
    feeds = {"input": digits_split.x_test[:128]}
    plan = {"lstm": WeightQuant(8, per_channel=True), "fc": WeightQuant(4)}
    point = evaluate_point(golden, feeds, digits_split.y_test[:128], plan, export_dir=tmp_path)
    assert point.runtime["real_export"] == "real-int8-weights"
    export = _export(point, "real-int8-weights")
    lstm_values = {spec.name.split("[")[0] for spec in golden.layer("lstm").weights}
    assert lstm_values | {"fc.weight"} == set(export["quantization"]["weights"])
    ints = [v for v in _initializers(tmp_path / export["file"]).values() if v.dtype == np.int8 and v.size > 1]
    assert sorted(v.size for v in ints) == sorted([192 * 8, 192 * 48, 480, 192, 192])
    assert export["metrics"]["measured"]["kl_mean"] == point.fidelity["kl_mean"]
    simulated = _export(point, "simulated-float")
    assert export["file_size_bytes"] < simulated["file_size_bytes"] / 2


def test_real_qdq_and_dynamic_exports_report_their_own_fidelity(
    points: dict[str, SweepPoint],
    golden: CompressibleModel,
    export_dir: Path,
    feeds: dict[str, np.ndarray],
    calibration: dict[str, np.ndarray],
    digits_split: DigitsSplit,
) -> None:
    point = points["qdq"]
    export = _export(point, "real-int8-qdq")
    assert export["matches_simulation"] is False
    assert export["quantization"]["calibration_samples"] == 256
    ops = {node.op_type for node in onnx.load(str(export_dir / export["file"])).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    real_kl = export["metrics"]["measured"]["kl_mean"]
    assert real_kl > 0 and real_kl != point.fidelity["kl_mean"]
    assert export["metrics"]["measured"]["top1_agreement"] > 0.95
    path, manifest = export_point(
        golden,
        WeightQuant(8, per_channel=True),
        export_dir,
        kind="real-int8-dynamic",
        calibration_feeds=calibration,
        eval_feeds=feeds,
        labels=digits_split.y_test,
    )
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert {"ConvInteger", "MatMulInteger"} & ops
    assert manifest["kind"] == "real-int8-dynamic" and manifest["metrics"]["simulated"] is None
    assert 0 < manifest["metrics"]["measured"]["kl_mean"] < 0.05


def test_fp16_export_is_a_real_fp16_model(points: dict[str, SweepPoint], export_dir: Path) -> None:
    export = _export(points["fp16"], "fp16")
    path = export_dir / export["file"]
    dtypes = {v.dtype for v in _initializers(path).values() if v.size > 1 and v.dtype.kind == "f"}
    assert dtypes == {np.dtype(np.float16)}
    assert export["metrics"]["measured"]["kl_mean"] < 1e-5
    assert export["matches_simulation"] is False


def test_export_refuses_a_kind_the_config_lacks(
    golden: CompressibleModel, calibration: dict[str, np.ndarray], tmp_path: Path
) -> None:
    with pytest.raises(EngineError, match="not available"):
        export_point(
            golden, MagnitudePrune(0.5), tmp_path, kind="real-int8-qdq", calibration_feeds=calibration
        )
    with pytest.raises(EngineError, match="no real runtime form"):
        export_point(golden, NoiseInjection(4), tmp_path, kind="real", calibration_feeds=calibration)


def test_torch_golden_point_matches_its_onnx_export(
    digits_cnn: DigitsCNN, points: dict[str, SweepPoint], digits_split: DigitsSplit, tmp_path: Path
) -> None:
    model = as_compressible(digits_cnn)
    point = evaluate_point(
        model,
        {"x": digits_split.x_test},
        digits_split.y_test,
        Quantize(WeightQuant(8, per_channel=True), ActivationQuant(8)),
        calibration={"x": digits_split.x_train[:256]},
        export_dir=tmp_path,
    )
    onnx_point = points["qdq"]
    assert point.fidelity["kl_mean"] == pytest.approx(onnx_point.fidelity["kl_mean"], abs=1e-6)
    assert point.cost == onnx_point.cost
    simulated = _export(point, "simulated-float")
    assert abs(simulated["metrics"]["measured"]["kl_mean"] - point.fidelity["kl_mean"]) <= 1e-6
    assert "torch.onnx.export" in " ".join(simulated["notes"])
    assert _export(point, "real-int8-qdq")["metrics"]["measured"]["kl_mean"] > 0


def test_torch_batch_norm_model_exports_without_wrong_integers(
    digits_split: DigitsSplit, tmp_path: Path
) -> None:
    """The exporter folds a batch norm into the convolution before it: that weight is no longer the
    quantized one, so it stays float (noted) while the file still computes the simulation."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(144, 10),
    ).eval()
    norm = net[1]
    assert (
        isinstance(norm, torch.nn.BatchNorm2d)
        and norm.running_mean is not None
        and norm.running_var is not None
    )
    with torch.no_grad():
        norm.running_mean.uniform_(-0.5, 0.5)
        norm.running_var.uniform_(0.5, 2.0)
        norm.weight.uniform_(0.5, 1.5)
    model = as_compressible(net)
    feeds = {"input": digits_split.x_test[:96]}
    point = evaluate_point(model, feeds, None, WeightQuant(8), export_dir=tmp_path)
    assert point.cost["other_params"] == 8  # the batch norm's weight and bias, at 32 bits
    export = _export(point, "real-int8-weights")
    quantization = export["quantization"]
    assert "4.weight" in quantization["weights"]
    assert set(quantization["weights"]) | set(quantization["left_float"]) == {"0.weight", "4.weight"}
    assert abs(export["metrics"]["measured"]["kl_mean"] - point.fidelity["kl_mean"]) <= 1e-6


# ------------------------------------------------------------------------------------------ latency


def _check_batches(batches: list[dict], sizes: tuple[int, ...], repeats: int) -> None:
    assert [b["batch_size"] for b in batches] == list(sizes)
    for b in batches:
        assert 0 < b["min_ms"] <= b["p50_ms"] <= b["p90_ms"] <= b["max_ms"]
        assert b["min_ms"] <= b["mean_ms"] <= b["max_ms"]
        assert b["per_sample_p50_ms"] == pytest.approx(b["p50_ms"] / b["batch_size"])
        assert b["repeats"] == repeats


def test_measure_latency_reports_percentiles_and_threads(
    cnn_path: Path, feeds: dict[str, np.ndarray]
) -> None:
    report = measure_latency(cnn_path, feeds, batch_sizes=(1, 8), warmup=2, repeats=7, threads=1)
    assert report["environment"]["intra_op_threads"] == 1
    assert report["environment"]["provider"] == "CPUExecutionProvider"
    assert report["file_size_bytes"] == cnn_path.stat().st_size and report["session_load_ms"] > 0
    _check_batches(report["batches"], (1, 8), 7)
    random_inputs = measure_latency(cnn_path, batch_sizes=(2,), warmup=0, repeats=3, threads=2)
    assert random_inputs["settings"]["inputs"] == "seeded random data"
    assert random_inputs["environment"]["intra_op_threads"] == 2
    json.dumps(report, allow_nan=False)


def test_compare_latency_is_relative_to_the_baseline(
    points: dict[str, SweepPoint], export_dir: Path, cnn_path: Path, feeds: dict[str, np.ndarray]
) -> None:
    models = {
        "fp32": cnn_path,
        "int8-qdq": export_dir / _export(points["qdq"], "real-int8-qdq")["file"],
        "int8-weights": export_dir / _export(points["w8"], "real-int8-weights")["file"],
    }
    report = compare_latency(models, baseline="fp32", batch_sizes=(1, 4), warmup=2, repeats=5, sample=feeds)
    assert report["settings"]["interleaved"] is True and report["baseline"] == "fp32"
    for name in models:
        _check_batches(report["models"][name]["batches"], (1, 4), 5)
        for rel, mine, base in zip(
            report["relative"][name],
            report["models"][name]["batches"],
            report["models"]["fp32"]["batches"],
            strict=True,
        ):
            assert rel["p50_ratio"] == pytest.approx(mine["p50_ms"] / base["p50_ms"])
            assert rel["slower"] == (rel["p50_ratio"] > 1.05)
    assert all(r["p50_ratio"] == 1.0 and not r["slower"] for r in report["relative"]["fp32"])
    with pytest.raises(EngineError):
        compare_latency(models, baseline="missing")
