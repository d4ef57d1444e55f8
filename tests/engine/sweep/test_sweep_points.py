"""What a sweep point says: fidelity through compare_models (JSON without NaN, the identity point
exact, accuracy as an independent count), cost against hand counts (size by scheme and plan, pruning,
BOPs and MACs, low rank and channel pruning), the runtime forms each config can take, point specs from
configs, plans and dicts, a point without labels that says why it has no accuracy, and JSON-safe numbers.

Sweep points of the digits CNN (the points of every config in CONFIGS, evaluated once per module in
conftest.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.sweep_exports import export_of, float_params, run_onnx
from worker.demo.models import DigitsSplit
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
)
from worker.engine.sweep import SweepPoint, evaluate_point, model_cost, point_spec, runtime_support
from worker.engine.sweep.points import json_safe

pytestmark = pytest.mark.usefixtures("one_torch_thread")

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
    params = sum(v.size for v in float_params(cnn_path).values())
    assert cost["params_total"] == params == cost["params_kept"]
    assert cost["size_bytes"] == 4 * params == cost["size_bytes_fp32"]
    assert cost["compression_ratio"] == 1.0 and cost["bops"] == cost["bops_fp32"] == cost["macs"] * 1024
    assert point["runtime"]["executable"] and point["runtime"]["real_export"] == "fp32"
    assert [e["kind"] for e in point["exports"]] == ["fp32"]


def test_accuracy_matches_an_independent_count(
    points: dict[str, SweepPoint], cnn_path: Path, digits_split: DigitsSplit
) -> None:
    logits = run_onnx(cnn_path, digits_split.x_test)
    accuracy = float((logits.argmax(1) == digits_split.y_test).mean())
    for point in points.values():
        assert point.fidelity["accuracy_golden"] == pytest.approx(accuracy, abs=1e-12)
        drop = 100.0 * (point.fidelity["accuracy_golden"] - point.fidelity["accuracy_compressed"])
        assert point.fidelity["accuracy_drop_pp"] == pytest.approx(drop)


def test_size_of_8bit_per_tensor_symmetric_weights_by_hand(
    points: dict[str, SweepPoint], cnn_path: Path
) -> None:
    params = float_params(cnn_path)
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
    params = float_params(cnn_path)
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
    export = export_of(point, "simulated-float")
    arrays = float_params(export_dir / export["file"])
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
    # group-wise weights: MatMulNBits for 4 and 8 bits over the whole model, the float file otherwise
    assert support(WeightQuant(4, group_size=32)) == (True, ("real-matmulnbits", "simulated-float"))
    assert support(WeightQuant(8, False, group_size=128)) == (True, ("real-matmulnbits", "simulated-float"))
    assert support(WeightQuant(3, group_size=32)) == (True, ("simulated-float",))
    assert support({"a": WeightQuant(4, group_size=32)}) == (True, ("simulated-float",))
    assert support({"a": WeightQuant(4, group_size=32), "b": WeightQuant(8)}) == (
        True,
        ("real-int8-weights",),
    )


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
