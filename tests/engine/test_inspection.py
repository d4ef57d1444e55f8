"""inspect_model against hand formulas, torch's own parameter count and FlopCounterMode."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from worker.demo.models import DemoBundle, DigitsCNN, DigitsLSTM, export_onnx, export_torch_program
from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.inspection import inspect_model
from worker.engine.types import ModelFormat

FORMATS: list[ModelFormat] = ["onnx", "onnx_zip", "torch_export", "torchscript"]


def conv_macs(conv: torch.nn.Conv2d, height: int, width: int) -> tuple[int, int, int]:
    """Cout * Hout * Wout * (Cin / groups) * kh * kw, with the output size from the conv arithmetic."""
    assert not isinstance(conv.padding, str)
    (kh, kw), (sh, sw), (ph, pw) = conv.kernel_size, conv.stride, conv.padding
    h_out = (height + 2 * ph - kh) // sh + 1
    w_out = (width + 2 * pw - kw) // sw + 1
    macs = conv.out_channels * h_out * w_out * (conv.in_channels // conv.groups) * kh * kw
    return macs, h_out, w_out


def hand_macs(model: DigitsCNN, size: int = 8) -> dict[str, int]:
    """MACs per layer of DigitsCNN for one 8x8 image: conv1 -> conv2 -> fc (in * out)."""
    conv1, h, w = conv_macs(model.conv1, size, size)
    conv2, h, w = conv_macs(model.conv2, h, w)
    fc = model.fc.in_features * model.fc.out_features
    assert model.fc.in_features == model.conv2.out_channels * h * w
    return {"conv1": conv1, "conv2": conv2, "fc": fc}


def flop_counter_macs(model: torch.nn.Module, x: torch.Tensor) -> int:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(x)
    return counter.get_total_flops() // 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_params_and_macs_match_torch(
    fmt: ModelFormat, cnn_files: dict[str, Path], digits_cnn: DigitsCNN
) -> None:
    report = inspect_model(cnn_files[fmt], fmt)
    expected = hand_macs(digits_cnn)
    assert report.total_params == sum(p.numel() for p in digits_cnn.parameters())
    assert sum(layer.params for layer in report.layers) == report.total_params
    assert report.macs == sum(expected.values())
    assert report.macs == flop_counter_macs(digits_cnn, torch.zeros(1, 1, 8, 8))
    assert report.flops == 2 * report.macs
    assert report.input_shapes_used == {report.inputs[0].name: [1, 1, 8, 8]}


@pytest.mark.parametrize("fmt", ["onnx", "onnx_zip", "torch_export"])
def test_per_layer_macs(fmt: ModelFormat, cnn_files: dict[str, Path], digits_cnn: DigitsCNN) -> None:
    report = inspect_model(cnn_files[fmt], fmt)
    expected = hand_macs(digits_cnn)
    with_params = [layer for layer in report.layers if layer.params]
    assert [layer.macs for layer in with_params] == [expected["conv1"], expected["conv2"], expected["fc"]]
    own = [
        sum(p.numel() for p in m.parameters()) for m in (digits_cnn.conv1, digits_cnn.conv2, digits_cnn.fc)
    ]
    assert [layer.params for layer in with_params] == own


def test_layer_types(cnn_files: dict[str, Path]) -> None:
    onnx_types = [layer.type for layer in inspect_model(cnn_files["onnx"], "onnx").layers]
    assert onnx_types == ["Conv", "Conv", "Gemm"]
    for fmt in ("torch_export", "torchscript"):
        layers = {layer.name: layer.type for layer in inspect_model(cnn_files[fmt], fmt).layers}
        assert layers == {"conv1": "Conv2d", "conv2": "Conv2d", "relu": "ReLU", "fc": "Linear"}


def test_torchscript_has_no_per_layer_macs(cnn_files: dict[str, Path]) -> None:
    report = inspect_model(cnn_files["torchscript"], "torchscript")
    assert all(layer.macs is None for layer in report.layers)
    assert report.macs is not None and any("TorchScript" in note for note in report.notes)


def test_int8_model_keeps_layers_params_and_macs(digits_bundle: DemoBundle, digits_cnn: DigitsCNN) -> None:
    golden = inspect_model(digits_bundle.golden_onnx, "onnx")
    int8 = inspect_model(digits_bundle.int8_onnx, "onnx")
    assert int8.total_params == sum(p.numel() for p in digits_cnn.parameters())
    assert [(layer.type, layer.params, layer.macs) for layer in int8.layers] == [
        (layer.type, layer.params, layer.macs) for layer in golden.layers
    ]
    assert int8.macs == sum(hand_macs(digits_cnn).values())


def test_batch_size_from_input_shapes(cnn_files: dict[str, Path]) -> None:
    one = inspect_model(cnn_files["onnx"], "onnx")
    four = inspect_model(cnn_files["onnx"], "onnx", {"input": [4, 1, 8, 8]})
    assert one.macs is not None and four.macs == 4 * one.macs
    assert four.input_shapes_used == {"input": [4, 1, 8, 8]}
    assert any("batch of [4]" in note for note in four.notes)
    pt2 = inspect_model(cnn_files["torch_export"], "torch_export", {"x": [4, 1, 8, 8]})
    assert pt2.macs == four.macs


def test_bad_input_shapes_are_refused(cnn_files: dict[str, Path]) -> None:
    with pytest.raises(EngineError, match="not inputs of the model"):
        inspect_model(cnn_files["onnx"], "onnx", {"pixels": [1, 1, 8, 8]})
    with pytest.raises(EngineError, match="contradicts"):
        inspect_model(cnn_files["onnx"], "onnx", {"input": [1, 3, 8, 8]})


def test_unknown_spatial_dims_need_declared_shapes(cnn_files: dict[str, Path], tmp_path: Path) -> None:
    model = onnx.load(str(cnn_files["onnx"]))
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    path = tmp_path / "unknown_height.onnx"
    onnx.save(model, str(path))
    report = inspect_model(path, "onnx")
    assert report.macs is None and report.flops is None and report.input_shapes_used is None
    assert any("'input'" in note and "input_shapes" in note for note in report.notes)
    declared = inspect_model(path, "onnx", {"input": [1, 1, 8, 8]})
    assert declared.macs == inspect_model(cnn_files["onnx"], "onnx").macs


def test_to_dict_is_json(cnn_files: dict[str, Path]) -> None:
    report = inspect_model(cnn_files["onnx"], "onnx")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["total_params"] == report.total_params
    assert data["inputs"][0]["shape"] == ["batch", 1, 8, 8]
    assert [layer["name"] for layer in data["layers"]] == [layer.name for layer in report.layers]


def test_broken_onnx_is_a_load_error(cnn_files: dict[str, Path], tmp_path: Path) -> None:
    data = cnn_files["onnx"].read_bytes()
    broken = tmp_path / "truncated.onnx"
    broken.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match=r"truncated\.onnx"):
        inspect_model(broken, "onnx")


@pytest.mark.parametrize("fmt", FORMATS)
def test_text_file_is_a_load_error(fmt: ModelFormat, tmp_path: Path) -> None:
    text = tmp_path / "readme.txt"
    text.write_text("hello, I am not a model\n" * 10)
    with pytest.raises(ModelLoadError, match=r"readme\.txt"):
        inspect_model(text, fmt)


class GroupedBlock(torch.nn.Module):
    """A grouped conv, a grouped transposed conv and a matmul with a parameter the root owns."""

    def __init__(self) -> None:
        super().__init__()
        self.grouped = torch.nn.Conv2d(4, 8, 3, groups=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(8, 6, 3, stride=2, groups=2)
        self.proj = torch.nn.Parameter(torch.randn(6, 5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.grouped(x)).permute(0, 2, 3, 1) @ self.proj


@pytest.fixture(scope="module")
def grouped_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[GroupedBlock, dict[str, Path]]:
    torch.manual_seed(1)
    model = GroupedBlock().eval()
    sample = np.random.default_rng(0).random((2, 4, 5, 5), dtype=np.float32)
    folder = tmp_path_factory.mktemp("grouped")
    files = {
        "onnx": export_onnx(model, sample, folder / "g.onnx"),
        "torch_export": export_torch_program(model, sample, folder / "g.pt2"),
    }
    return model, files


@pytest.mark.parametrize("fmt", ["onnx", "torch_export"])
def test_grouped_and_transposed_convs(
    fmt: ModelFormat, grouped_files: tuple[GroupedBlock, dict[str, Path]]
) -> None:
    model, files = grouped_files
    report = inspect_model(files[fmt], fmt)
    x = torch.zeros(1, 4, 5, 5)
    assert report.macs == flop_counter_macs(model, x)
    grouped, _, _ = conv_macs(model.grouped, 5, 5)
    # transposed conv: every input element meets (Cout / groups) * k * k weights
    up = 8 * 5 * 5 * (model.up.out_channels // model.up.groups) * 3 * 3
    up_out = (5 - 1) * 2 + 3
    matmul = up_out * up_out * 6 * 5
    assert report.macs == grouped + up + matmul
    assert sorted(layer.macs or 0 for layer in report.layers) == sorted([grouped, up, matmul])
    assert report.total_params == sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def lstm_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[DigitsLSTM, dict[str, Path]]:
    torch.manual_seed(2)
    model = DigitsLSTM().eval()
    sample = np.zeros((2, 1, 8, 8), dtype=np.float32)
    folder = tmp_path_factory.mktemp("lstm")
    return model, {
        "onnx": export_onnx(model, sample, folder / "lstm.onnx"),
        "torch_export": export_torch_program(model, sample, folder / "lstm.pt2"),
    }


@pytest.mark.parametrize("fmt", ["onnx", "torch_export"])
def test_lstm(fmt: ModelFormat, lstm_files: tuple[DigitsLSTM, dict[str, Path]]) -> None:
    model, files = lstm_files
    report = inspect_model(files[fmt], fmt)
    lstm = model.lstm
    steps, hidden = 8, lstm.hidden_size
    cell = steps * 4 * hidden * (lstm.input_size + hidden)  # 4 gates, each W x + R h per step
    assert report.macs == cell + model.fc.in_features * model.fc.out_features
    assert report.total_params == sum(p.numel() for p in model.parameters())
    (lstm_layer,) = [layer for layer in report.layers if layer.type == "LSTM"]
    assert lstm_layer.params == sum(p.numel() for p in lstm.parameters())
    assert lstm_layer.macs == cell


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_layer_identity_across_formats(
    fmt: ModelFormat, cnn_files: dict[str, Path], digits_cnn: DigitsCNN
) -> None:
    """Every format names the CNN's layers by torch module path (digits_cnn.named_modules()), with the ONNX
    node name, output tensor and parameter tensors kept as aliases."""
    owners = [
        name for name, m in digits_cnn.named_modules() if any(True for _ in m.parameters(recurse=False))
    ]
    layers = [layer for layer in inspect_model(cnn_files[fmt], fmt).layers if layer.params]
    assert [layer.name for layer in layers] == owners
    for layer in layers:
        assert {f"{layer.name}.weight", f"{layer.name}.bias"} <= set(layer.aliases)
        assert layer.name not in layer.aliases
    if fmt in ("onnx", "onnx_zip"):
        graph = onnx.load(str(cnn_files["onnx"]), load_external_data=False).graph
        by_weight = {node.input[1]: node for node in graph.node if len(node.input) > 1}
        for layer in layers:
            node = by_weight[f"{layer.name}.weight"]
            assert node.name in layer.aliases and node.output[0] in layer.aliases
            assert layer.outputs == list(node.output) and layer.inputs == list(node.input)


def test_int8_qdq_layers_keep_the_golden_identity(digits_bundle: DemoBundle) -> None:
    golden = inspect_model(digits_bundle.golden_onnx, "onnx")
    int8 = inspect_model(digits_bundle.int8_onnx, "onnx")
    assert (
        [layer.name for layer in int8.layers]
        == [layer.name for layer in golden.layers]
        == ["conv1", "conv2", "fc"]
    )
    assert "conv1.weight_quantized" in int8.layers[0].param_tensors


def test_inspection_names_layers_as_the_sensitivity_scan_does(cnn_files: dict[str, Path]) -> None:
    """The model page (inspection) and the sensitivity scan (compression backends) share the layer names."""
    from worker.engine.compression.onnx_backend import OnnxCompressible

    compressible = OnnxCompressible(onnx.load(str(cnn_files["onnx"])))
    layers = compressible.layers
    names = [spec.name for spec in (layers() if callable(layers) else layers)]
    assert [layer.name for layer in inspect_model(cnn_files["onnx"], "onnx").layers] == names
