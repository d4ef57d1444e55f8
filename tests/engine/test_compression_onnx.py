"""ONNX models compressed at graph level give what the same torch model gives (CNN and LSTM exports)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from worker.demo.models import DigitsCNN, DigitsLSTM, DigitsSplit, export_onnx, train_digits_lstm
from worker.engine.compression import (
    ActivationQuant,
    ChannelPrune,
    FloatCast,
    LowRank,
    MagnitudePrune,
    Quantize,
    Schedule,
    WeightQuant,
    as_compressible,
    compress_onnx,
    compressed,
    open_compressible,
)
from worker.engine.compression.model import Calibration, CompressibleModel
from worker.engine.errors import EngineError
from worker.engine.metrics import distributions

pytestmark = pytest.mark.usefixtures("one_torch_thread")


CONFIGS = [
    WeightQuant(4),
    WeightQuant(3, symmetric=False, per_channel=True),
    MagnitudePrune(0.5),
    ChannelPrune(0.25),
    LowRank(0.25),
    FloatCast("bf16"),
    Quantize(activations=ActivationQuant(6)),
    ActivationQuant(4, "mse"),
    Schedule((MagnitudePrune(0.3), Quantize(WeightQuant(4), ActivationQuant(8, "percentile")))),
]


@pytest.fixture(scope="module")
def digits_lstm(digits_split: DigitsSplit) -> DigitsLSTM:
    return train_digits_lstm(digits_split, seed=0)


_EXPORTS: dict[str, Path] = {}
"""ONNX exports shared by the test modules of this session (an export takes seconds)."""


def exported_onnx(
    kind: str, model: torch.nn.Module, sample: np.ndarray, factory: pytest.TempPathFactory
) -> Path:
    if kind not in _EXPORTS:
        _EXPORTS[kind] = export_onnx(model, sample, factory.mktemp("compression_onnx") / f"{kind}.onnx")
    return _EXPORTS[kind]


@pytest.fixture(scope="module")
def onnx_files(
    digits_cnn: DigitsCNN,
    digits_lstm: DigitsLSTM,
    digits_split: DigitsSplit,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Path]:
    sample = digits_split.x_test[:2]
    return {
        "cnn": exported_onnx("cnn", digits_cnn, sample, tmp_path_factory),
        "lstm": exported_onnx("lstm", digits_lstm, sample, tmp_path_factory),
    }


def _kl(golden: np.ndarray, other: np.ndarray) -> float:
    lp = (
        golden
        - np.log(np.exp(golden - golden.max(1, keepdims=True)).sum(1, keepdims=True))
        - golden.max(1, keepdims=True)
    )
    lq = (
        other
        - np.log(np.exp(other - other.max(1, keepdims=True)).sum(1, keepdims=True))
        - other.max(1, keepdims=True)
    )
    return float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))


def _outputs(model: CompressibleModel, feeds: dict[str, np.ndarray], plan: dict) -> np.ndarray:
    with compressed(model, plan, Calibration(model, feeds)) as (runner, _):
        return next(iter(runner.run(feeds).values()))


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_onnx_layers_match_the_torch_modules(
    kind: str,
    onnx_files: dict[str, Path],
    digits_cnn: DigitsCNN,
    digits_lstm: DigitsLSTM,
    digits_split: DigitsSplit,
) -> None:
    graph = open_compressible(onnx_files[kind], "onnx", intra_op_threads=1)
    torch_model = as_compressible(digits_cnn if kind == "cnn" else digits_lstm)
    graph.prepare({"input": digits_split.x_test[:1]})
    torch_model.prepare({"x": digits_split.x_test[:1]})
    g = [(layer.name, layer.type, layer.owned_params, layer.macs) for layer in graph.layers()]
    t = [(layer.name, layer.type, layer.owned_params, layer.macs) for layer in torch_model.layers()]
    assert g == t
    expected = ["conv1", "conv2", "fc"] if kind == "cnn" else ["lstm", "fc"]
    assert [name for name, *_ in g] == expected


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.id)
def test_onnx_compression_equals_torch_compression(
    kind: str,
    config: object,
    onnx_files: dict[str, Path],
    digits_cnn: DigitsCNN,
    digits_lstm: DigitsLSTM,
    digits_split: DigitsSplit,
) -> None:
    """The LSTM export stores its weights as folded constant sub-graphs with the gates reordered
    (iofc vs torch's ifgo): per-tensor / per-row quantization, pruning by hidden unit and SVD do not
    depend on that order, so both sides must give the same outputs."""
    x = digits_split.x_test[:120]
    graph = open_compressible(onnx_files[kind], "onnx", intra_op_threads=1)
    torch_model = as_compressible(digits_cnn if kind == "cnn" else digits_lstm)
    for model, name in ((graph, "input"), (torch_model, "x")):
        model.prepare({name: x[:1]})
    golden = torch_model.run({"x": x})["output"]
    for layer in [layer.name for layer in torch_model.layers()]:
        a = _outputs(graph, {"input": x}, {layer: config})
        b = _outputs(torch_model, {"x": x}, {layer: config})
        kl_a, kl_b = _kl(golden, a), _kl(golden, b)
        assert kl_b > 1e-9, f"{config} changed nothing in {layer}"
        np.testing.assert_allclose(kl_a, kl_b, rtol=0.02, atol=2e-7)
        assert np.abs(a - b).max() < 1e-2 * max(1.0, float(np.abs(golden).max()))


def test_compress_onnx_writes_initializers_and_fake_quant_nodes(
    onnx_files: dict[str, Path], digits_split: DigitsSplit
) -> None:
    model = onnx.load(str(onnx_files["cnn"]))
    feeds = {"input": digits_split.x_test[:64]}
    out, outcome = compress_onnx(model, {"conv2": Quantize(WeightQuant(2), ActivationQuant(8))}, feeds)
    onnx.checker.check_model(out)
    weight = next(i for i in out.graph.initializer if i.name == "conv2.weight")
    values = onnx.numpy_helper.to_array(weight)
    assert len(np.unique(values)) <= 3  # 2-bit symmetric: -Δ, 0, +Δ
    ops = [node.op_type for node in out.graph.node]
    assert ops.count("Round") == 1 and ops.count("Clip") == 1
    assert outcome.changed == {"conv2": ["conv2.weight"]}
    original = next(i for i in model.graph.initializer if i.name == "conv2.weight")
    assert len(np.unique(onnx.numpy_helper.to_array(original))) > 100  # the input model is untouched


def test_onnx_activation_quant_uses_the_torch_formula(
    onnx_files: dict[str, Path], digits_cnn: DigitsCNN, digits_split: DigitsSplit
) -> None:
    """Independent of Kneeboard's torch path: quantize conv1's output by hand and run the rest in torch."""
    x = digits_split.x_test[:100]
    graph = open_compressible(onnx_files["cnn"], "onnx")
    out = _outputs(graph, {"input": x}, {"conv1": ActivationQuant(5)})
    with torch.no_grad():
        hidden = digits_cnn.conv1(torch.from_numpy(x)).numpy()
        lo, hi = min(float(hidden.min()), 0.0), max(float(hidden.max()), 0.0)
        scale = np.float32((hi - lo) / 31)
        zero = round(-lo / float(scale))
        q = np.clip(np.round(hidden * (np.float32(1) / scale)) + zero, 0, 31)
        h = torch.from_numpy(((q - zero) * scale).astype(np.float32))
        rest = digits_cnn.fc(torch.flatten(torch.relu(digits_cnn.conv2(torch.relu(h))), 1)).numpy()
    np.testing.assert_allclose(out, rest, atol=2e-4)


def test_onnx_runner_without_a_model_is_refused(onnx_files: dict[str, Path]) -> None:
    from worker.engine.loaders import load_model

    with pytest.raises(EngineError, match="open_compressible"):
        as_compressible(load_model(onnx_files["cnn"], "onnx"))


def test_kl_helper_agrees_with_the_metrics_package() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 10)), rng.standard_normal((5, 10))
    expected = distributions.kl(distributions.log_softmax(a), distributions.log_softmax(b)).mean()
    assert _kl(a, b) == pytest.approx(expected)
