"""Physical channel removal in exported ONNX graphs (issue 33), checked in onnxruntime against the
zeroed dense graph the simulation writes, with parameters counted independently (onnx.numpy_helper).

The models are built here: a Conv-BN-ReLU CNN with a residual block, a depthwise Conv, a pointwise Conv
followed by Sigmoid, a mean over the map and a Linear head, exported by torch's TorchScript exporter
(batch norms folded into the convolutions, as every exporter does in eval mode), and small variants that
the pass must refuse with a reason naming the node."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import numpy_helper
from torch import nn

from worker.demo.models import DigitsSplit
from worker.engine.compression import ChannelPrune, open_compressible
from worker.engine.compression.model import resolve
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.sweep import evaluate_point
from worker.engine.sweep.export_pruned import remove_zero_channels


class ResidualNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.conv_a = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.conv_b = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.depthwise = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pointwise = nn.Conv2d(16, 24, 1)
        self.head = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = torch.relu(x + self.conv_b(self.conv_a(x)))  # the residual group: stem and conv_b
        x = torch.relu(self.depthwise(x))
        x = torch.sigmoid(self.pointwise(x))  # Sigmoid(0) = 0.5: folded into the head's bias
        return self.head(x.mean((2, 3)))


def _built(model: nn.Module, *, fold: bool = True) -> onnx.ModelProto:
    torch.manual_seed(0)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):  # statistics far from (0, 1): the folded biases matter
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    model.eval()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.onnx"
        _export(model, path, fold)
        return onnx.load(str(path))


def _export(model: nn.Module, path: Path, fold: bool) -> None:
    torch.onnx.export(
        model,
        (torch.zeros(1, 3, 16, 16),),
        str(path),
        dynamo=False,
        do_constant_folding=fold,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
    )


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"input": x})[0])


def _params(model: onnx.ModelProto) -> int:
    """Float parameters, counted here independently of the engine."""
    return sum(
        int(numpy_helper.to_array(i).size)
        for i in model.graph.initializer
        if i.data_type == onnx.TensorProto.FLOAT
    )


def _weight(model: onnx.ModelProto, node: onnx.NodeProto) -> np.ndarray:
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return inits[node.input[1]]


def _convs(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == "Conv"]


def _zeroed(golden: onnx.ModelProto, sparsity: float = 0.5) -> onnx.ModelProto:
    """The dense graph ChannelPrune's simulation writes (zeroed channels, same shapes)."""
    compressible = OnnxCompressible(golden)
    compressible.prepare({"input": np.zeros((1, 3, 16, 16), np.float32)})
    plan = {layer.name: ChannelPrune(sparsity) for layer in compressible.layers()}
    outcome, chains = resolve(compressible, plan, None)
    return compressible.build(outcome.tensors, chains)


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


@pytest.fixture(scope="module")
def golden() -> onnx.ModelProto:
    return _built(ResidualNet())


@pytest.fixture(scope="module")
def inputs() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((8, 3, 16, 16)).astype(np.float32)


def test_pruned_file_computes_the_zeroed_dense_file(
    golden: onnx.ModelProto, inputs: np.ndarray, tmp_path: Path
) -> None:
    dense = _zeroed(golden)
    pruned = _copy(dense)
    report = remove_zero_channels(pruned)
    onnx.checker.check_model(pruned, full_check=True)
    np.testing.assert_allclose(_run(pruned, inputs), _run(dense, inputs), atol=1e-5, rtol=0)
    assert not np.allclose(_run(dense, inputs), _run(golden, inputs), atol=1e-3)  # the pruning did something
    # smaller: fewer parameters (counted here) and a smaller file
    assert _params(pruned) < 0.7 * _params(dense)
    onnx.save(dense, str(tmp_path / "dense.onnx"))
    onnx.save(pruned, str(tmp_path / "pruned.onnx"))
    assert (tmp_path / "pruned.onnx").stat().st_size < 0.7 * (tmp_path / "dense.onnx").stat().st_size
    # channel counts, read from the weights: the depthwise conv follows its input and updates `group`
    stem, conv_a, conv_b, depthwise, pointwise = _convs(pruned)
    dense_convs = _convs(dense)
    zero = [
        set(np.flatnonzero(~_weight(dense, n).reshape(len(_weight(dense, n)), -1).any(1)))
        for n in dense_convs
    ]
    residual_common = zero[0] & zero[2]  # stem and conv_b feed one Add: only channels zero in both go
    assert _weight(pruned, stem).shape[0] == 16 - len(residual_common)
    assert _weight(pruned, conv_b).shape[0] == 16 - len(residual_common)
    assert _weight(pruned, conv_a).shape == (16 - len(zero[1]), 16 - len(residual_common), 3, 3)
    kept = 16 - len(residual_common)
    assert _weight(pruned, depthwise).shape[0] == kept
    assert next(a.i for a in depthwise.attribute if a.name == "group") == kept
    assert _weight(pruned, pointwise).shape == (24 - len(zero[4]), kept, 1, 1)
    # the head keeps its 10 outputs (the graph output) but loses the pruned inputs, with Sigmoid(0) folded
    gemm = next(n for n in pruned.graph.node if n.op_type == "Gemm")
    assert sorted(_weight(pruned, gemm).shape) == [10, 24 - len(zero[4])]
    assert [d.dim_value for d in pruned.graph.output[0].type.tensor_type.shape.dim][1:] == [10]
    # the head is left dense: its outputs are the model's
    assert any("Gemm" in entry["layer"] for entry in report.left_dense)


def test_residual_group_zeroing_different_channels_is_left_dense_with_the_layers_named(
    golden: onnx.ModelProto, inputs: np.ndarray
) -> None:
    model = _copy(golden)
    inits = {i.name: i for i in model.graph.initializer}
    convs = _convs(model)
    for node, channels in ((convs[0], [0, 1, 2]), (convs[2], [3, 4, 5])):  # stem and conv_b: disjoint
        for name in node.input[1:]:
            value = numpy_helper.to_array(inits[name]).copy()
            value[channels] = 0
            inits[name].CopyFrom(numpy_helper.from_array(value, name))
    pruned = _copy(model)
    report = remove_zero_channels(pruned)
    reasons = {entry["layer"]: entry["reason"] for entry in report.left_dense}
    stem_label = next(label for label in reasons if convs[0].name in label)
    assert "zeroes different channels" in reasons[stem_label]
    assert convs[2].name in reasons[stem_label]  # the reason names the other member of the group
    assert _weight(pruned, _convs(pruned)[0]).shape[0] == 16
    np.testing.assert_allclose(_run(pruned, inputs), _run(model, inputs), atol=1e-5, rtol=0)


class SigmoidIntoPaddedConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv2d(3, 8, 1)
        self.second = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.sigmoid(self.first(x)))


def test_sigmoid_constant_reaching_a_padded_conv_is_refused(inputs: np.ndarray) -> None:
    """Sigmoid(0) = 0.5 reaches a 3 x 3 conv that zero-pads: its border outputs would change, so the
    channels stay (the same constant into a Gemm or an unpadded conv is folded: the first test)."""
    dense = _zeroed(_built(SigmoidIntoPaddedConv()))
    pruned = _copy(dense)
    report = remove_zero_channels(pruned)
    assert not report.pruned
    (entry,) = [e for e in report.left_dense if "first" in e["layer"]]
    assert "zero-pads" in entry["reason"] and "second" in entry["reason"] and "0.5" in entry["reason"]
    np.testing.assert_allclose(_run(pruned, inputs), _run(dense, inputs), atol=1e-6, rtol=0)


class ReshapeMixing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8 * 16 * 16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).reshape(x.shape[0], -1))


def test_reshape_mixing_channels_is_refused_naming_the_node(inputs: np.ndarray) -> None:
    dense = _zeroed(_built(ReshapeMixing()))
    pruned = _copy(dense)
    report = remove_zero_channels(pruned)
    (entry,) = [e for e in report.left_dense if "Conv" in e["layer"]]
    assert "Reshape" in entry["reason"] and "not followed" in entry["reason"]
    assert _params(pruned) == _params(dense)
    np.testing.assert_array_equal(_run(pruned, inputs), _run(dense, inputs))


def test_batch_norm_node_shift_is_folded_or_refused(inputs: np.ndarray) -> None:
    """Without constant folding the exporter keeps BatchNormalization nodes: a zeroed channel leaves the BN
    as its shift β − γμ/σ, then ReLU; where that constant is not 0 and meets a padded conv the group
    stays dense. Either way the outputs are the zeroed dense graph's."""
    dense = _zeroed(_built(ResidualNet(), fold=False))
    assert any(n.op_type == "BatchNormalization" for n in dense.graph.node)
    pruned = _copy(dense)
    report = remove_zero_channels(pruned)
    assert report.pruned or report.left_dense
    np.testing.assert_allclose(_run(pruned, inputs), _run(dense, inputs), atol=1e-5, rtol=0)
    assert all(entry["reason"] for entry in report.left_dense)


def test_sweep_point_reports_the_pruned_file(
    golden: onnx.ModelProto, inputs: np.ndarray, tmp_path: Path
) -> None:
    compressible = OnnxCompressible(golden)
    feeds = {"input": inputs}
    base = evaluate_point(compressible, feeds, None, None, export_dir=tmp_path)
    point = evaluate_point(compressible, feeds, None, ChannelPrune(0.5), export_dir=tmp_path)
    (manifest,) = point.exports
    structured = manifest["structured_pruning"]
    assert structured["applied"] and manifest["kind"] == "simulated-float"
    pruned_file = onnx.load(str(tmp_path / manifest["file"]))
    golden_file = onnx.load(str(tmp_path / base.exports[0]["file"]))
    removed = _params(golden_file) - _params(pruned_file)
    assert removed > 0.3 * _params(golden_file)
    assert point.cost["params_total"] - point.cost["params_kept"] == removed
    assert point.cost["params_kept_simulated"] > point.cost["params_kept"]
    assert point.cost["size_bytes"] == base.cost["size_bytes"] - 4 * removed
    assert manifest["file_size_bytes"] < 0.7 * base.exports[0]["file_size_bytes"]
    assert point.cost["macs_effective"] < 0.7 * base.cost["macs_effective"]
    # without an export folder the point counts the same pruned graph, built in memory
    unexported = evaluate_point(compressible, feeds, None, ChannelPrune(0.5))
    assert unexported.cost["params_kept"] == point.cost["params_kept"] and not unexported.exports
    # the file measured in onnxruntime reproduces the simulated point
    measured, simulated = manifest["metrics"]["measured"], manifest["metrics"]["simulated"]
    assert measured["kl_mean"] == pytest.approx(simulated["kl_mean"], rel=1e-4, abs=1e-7)


def test_trained_digits_cnn_sweep_point_is_pruned_through_its_flatten(
    cnn_path: Path, digits_split: DigitsSplit, tmp_path: Path
) -> None:
    """The demo CNN trained on scikit-learn's digits (conv1 → conv2 → x.view(n, -1) → fc): both convs lose
    half their channels, the Reshape's target shrinks with them, and the file's accuracy is the point's."""
    feeds = {"input": digits_split.x_test}
    golden_digits = open_compressible(cnn_path, "onnx", intra_op_threads=1)
    point = evaluate_point(golden_digits, feeds, digits_split.y_test, ChannelPrune(0.5), export_dir=tmp_path)
    (manifest,) = point.exports
    pruned = {
        entry["layer"].split("'")[1]: entry["removed"] for entry in manifest["structured_pruning"]["pruned"]
    }
    assert pruned == {"conv1": 4, "conv2": 8}
    model = onnx.load(str(tmp_path / manifest["file"]))
    fc = next(n for n in model.graph.node if n.op_type == "Gemm")
    assert _weight(model, fc).shape == (10, 8 * 4 * 4)
    logits = ort.InferenceSession(str(tmp_path / manifest["file"]), providers=["CPUExecutionProvider"]).run(
        None, {"input": digits_split.x_test}
    )[0]
    accuracy = float(np.mean(np.argmax(logits, axis=1) == digits_split.y_test))
    assert accuracy == pytest.approx(point.fidelity["accuracy_compressed"], abs=1e-9)
    assert point.cost["params_total"] - point.cost["params_kept"] == _params(
        onnx.load(str(cnn_path))
    ) - _params(model)


class PaddedDepthwise(nn.Module):
    """EfficientNet-Lite's block: expand 1x1, ReLU6, TensorFlow "SAME" zero Pad, depthwise, project 1x1."""

    def __init__(self) -> None:
        super().__init__()
        self.expand = nn.Conv2d(3, 12, 1)
        self.depthwise = nn.Conv2d(12, 12, 3, stride=2, groups=12)
        self.project = nn.Conv2d(12, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.pad(torch.clamp(self.expand(x), 0, 6), (0, 1, 0, 1))
        return self.project(torch.clamp(self.depthwise(x), 0, 6)).mean((2, 3))


def test_zero_pad_before_a_depthwise_conv_is_followed(inputs: np.ndarray) -> None:
    """A zero channel stays zero through the Pad; the depthwise conv then outputs its bias there, which the
    unpadded 1 x 1 projection takes into its own bias."""
    dense = _zeroed(_built(PaddedDepthwise()))
    assert any(n.op_type == "Pad" for n in dense.graph.node)
    pruned = _copy(dense)
    report = remove_zero_channels(pruned)
    assert [entry["removed"] for entry in report.pruned if "expand" in entry["layer"]] == [6]
    np.testing.assert_allclose(_run(pruned, inputs), _run(dense, inputs), atol=1e-5, rtol=0)
    assert _params(pruned) < _params(dense)


def test_a_wrong_pruned_graph_is_never_exported(
    golden: onnx.ModelProto, inputs: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net of prune_proto: a pass that changed the outputs (here: a weight doubled) or failed
    leaves the graph dense, with the reason."""
    from worker.engine.sweep import structured_export
    from worker.engine.sweep.export_pruned import StructuredPruning

    def wrong(model: onnx.ModelProto) -> StructuredPruning:
        init = model.graph.initializer[0]
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 2, init.name))
        return StructuredPruning(pruned=[{"layer": "x", "channels": 1, "removed": 1, "group": ["x"]}])

    def failing(model: onnx.ModelProto) -> StructuredPruning:
        raise IndexError("boom")

    dense = _zeroed(golden)
    for bad, words in ((wrong, "differ from the dense graph"), (failing, "IndexError: boom")):
        monkeypatch.setattr(structured_export, "remove_zero_channels", bad)
        model = _copy(dense)
        record = structured_export.prune_proto(model, {"input": inputs})
        assert not record["applied"] and record["params"] == record["params_dense"]
        assert words in record["left_dense"][0]["reason"]
        np.testing.assert_array_equal(_run(model, inputs), _run(dense, inputs))


class TinyEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 32)
        self.encoder = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, activation="gelu")
        self.head = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(x)).mean(1))


def test_transformer_feed_forward_hidden_units_are_removed_attention_is_left_dense(tmp_path: Path) -> None:
    """MatMul + bias → Gelu → MatMul: the feed-forward hidden units go; the attention projections (read by
    Reshape / Transpose into heads) and the residual stream (joined with LayerNormalization outputs) stay."""
    torch.manual_seed(0)
    model = TinyEncoder().eval()
    x = np.random.default_rng(0).standard_normal((3, 6, 8)).astype(np.float32)
    path = tmp_path / "encoder.onnx"
    torch.onnx.export(
        model,
        (torch.from_numpy(x),),
        str(path),
        dynamo=False,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}},
    )
    compressible = OnnxCompressible(onnx.load(str(path)))
    compressible.prepare({"input": x[:1]})
    outcome, chains = resolve(
        compressible, {layer.name: ChannelPrune(0.5) for layer in compressible.layers()}, None
    )
    dense = compressible.build(outcome.tensors, chains)
    pruned = _copy(dense)
    report = remove_zero_channels(pruned)
    assert [entry["layer"] for entry in report.pruned] == ["MatMul '/encoder/linear1/MatMul'"]
    assert any("self_attn" in entry["layer"] for entry in report.left_dense)
    outputs = [
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"input": x}
        )[0]
        for m in (dense, pruned)
    ]
    np.testing.assert_allclose(outputs[1], outputs[0], atol=1e-5, rtol=0)
    assert (
        _params(pruned) == _params(dense) - 32 * 32 - 32 - 32 * 32
    )  # 32 of 64 hidden units: W1 cols, b1, W2 rows
