"""What a sweep exports, re-run in onnxruntime: simulated exports reproduce their points, real int8,
QDQ, dynamic and fp16 exports are what they say and report their own fidelity, torch models export too; and
latency reports of the exports (structure only: timings are noisy).

Sweep points of the digits CNN (the points of every config in CONFIGS, evaluated once per module in
conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from tests.engine.sweep.conftest import CONFIGS
from tests.engine.test_compression_onnx import exported_onnx
from tests.support.sweep_exports import export_of, initializers, run_onnx
from worker.demo.models import DigitsCNN, DigitsSplit, train_digits_lstm
from worker.engine.compression import (
    ActivationQuant,
    CompressibleModel,
    MagnitudePrune,
    NoiseInjection,
    Quantize,
    WeightQuant,
    as_compressible,
    open_compressible,
)
from worker.engine.errors import EngineError
from worker.engine.sweep import SweepPoint, compare_latency, evaluate_point, export_point, measure_latency

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _kl_numpy(golden: np.ndarray, other: np.ndarray) -> float:
    lp, lq = _log_softmax(golden), _log_softmax(other)
    return float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))


# ------------------------------------------------------------------------------------------ exports


def test_simulated_exports_reproduce_the_points(
    points: dict[str, SweepPoint], export_dir: Path, cnn_path: Path, digits_split: DigitsSplit
) -> None:
    golden_logits = run_onnx(cnn_path, digits_split.x_test)
    for name, point in points.items():
        kind = "fp32" if name == "fp32" else "simulated-float"
        export = export_of(point, kind)
        measured, simulated = export["metrics"]["measured"], export["metrics"]["simulated"]
        assert simulated == point.fidelity
        assert abs(measured["kl_mean"] - point.fidelity["kl_mean"]) <= 1e-9, name
        assert measured["top1_agreement"] == point.fidelity["top1_agreement"]
        assert measured["accuracy_compressed"] == point.fidelity["accuracy_compressed"]
        # independent of Kneeboard's metrics: the file run here, KL computed with numpy
        logits = run_onnx(export_dir / export["file"], digits_split.x_test)
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
    export = export_of(point, "real-int8-weights")
    path = export_dir / export["file"]
    arrays = initializers(path)
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
    export = export_of(point, "real-int8-weights")
    lstm_values = {spec.name.split("[")[0] for spec in golden.layer("lstm").weights}
    assert lstm_values | {"fc.weight"} == set(export["quantization"]["weights"])
    ints = [v for v in initializers(tmp_path / export["file"]).values() if v.dtype == np.int8 and v.size > 1]
    assert sorted(v.size for v in ints) == sorted([192 * 8, 192 * 48, 480, 192, 192])
    assert export["metrics"]["measured"]["kl_mean"] == point.fidelity["kl_mean"]
    simulated = export_of(point, "simulated-float")
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
    export = export_of(point, "real-int8-qdq")
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
    export = export_of(points["fp16"], "fp16")
    path = export_dir / export["file"]
    dtypes = {v.dtype for v in initializers(path).values() if v.size > 1 and v.dtype.kind == "f"}
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
    simulated = export_of(point, "simulated-float")
    assert abs(simulated["metrics"]["measured"]["kl_mean"] - point.fidelity["kl_mean"]) <= 1e-6
    assert "torch.onnx.export" in " ".join(simulated["notes"])
    assert export_of(point, "real-int8-qdq")["metrics"]["measured"]["kl_mean"] > 0


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
    export = export_of(point, "real-int8-weights")
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
        "int8-qdq": export_dir / export_of(points["qdq"], "real-int8-qdq")["file"],
        "int8-weights": export_dir / export_of(points["w8"], "real-int8-weights")["file"],
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
