"""The display graph of real models: the digits CNN and its QDQ int8 export, checked against the onnx
graph read independently here, and a 500-layer chain built in the test."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.support.deep_onnx import deep_chain_onnx
from worker.engine.demo_models import DigitsCNN, export_onnx, quantize_onnx_int8
from worker.engine.inspection import files as inspection_files
from worker.engine.inspection import inspect_model, inspect_with_graph
from worker.engine.inspection.graph import display_graph, model_graph

PLUMBING = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Constant"}


@pytest.fixture(scope="module")
def cnn_pair(digits_cnn: DigitsCNN, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("graph_cnn")
    x = np.random.default_rng(0).random((16, 1, 8, 8), dtype=np.float32)
    golden = export_onnx(digits_cnn, x[:2], folder / "cnn.onnx")
    return golden, quantize_onnx_int8(golden, folder / "cnn_int8.onnx", x)


def expected_structure(path: Path) -> tuple[list[str], set[tuple[str, str]]]:
    """(op types of the compute nodes in graph order, (producer node name, consumer node name) pairs),
    walking back through Q/DQ nodes by their first input; graph inputs/outputs as 'input:'/'output:'."""
    graph = onnx.load(str(path)).graph
    made_by = {out: node for node in graph.node for out in node.output}
    inputs = {v.name for v in graph.input}

    def source(tensor: str) -> str | None:
        while tensor in made_by and made_by[tensor].op_type in PLUMBING:
            node = made_by[tensor]
            if node.op_type == "Constant":
                return None
            tensor = node.input[0]
        if tensor in made_by:
            return made_by[tensor].name
        return f"input:{tensor}" if tensor in inputs else None

    pairs: set[tuple[str, str]] = set()
    ops = []
    for node in graph.node:
        if node.op_type in PLUMBING:
            continue
        ops.append(node.op_type)
        pairs |= {(s, node.name) for t in node.input if t and (s := source(t)) is not None}
    pairs |= {(s, f"output:{v.name}") for v in graph.output if (s := source(v.name)) is not None}
    return ops, pairs


@pytest.mark.parametrize("which", ["golden", "int8"])
def test_digits_cnn_graph_matches_the_onnx_graph(cnn_pair: tuple[Path, Path], which: str) -> None:
    path = cnn_pair[0] if which == "golden" else cnn_pair[1]
    graph = model_graph(path, "onnx")
    ops, pairs = expected_structure(path)
    op_nodes = [n for n in graph.nodes if n.kind == "op"]
    assert [n.op_type for n in op_nodes] == ops
    # Node names are aliases of the canonical ids: map the edges back to ONNX node names to compare.
    name_of: dict[str, str] = {}
    onnx_names = {n.name for n in onnx.load(str(path)).graph.node}
    for node in op_nodes:
        name_of[node.id] = next(a for a in [node.id, *node.aliases] if a in onnx_names)
    got = {(name_of.get(e.source, e.source), name_of.get(e.target, e.target)) for e in graph.edges}
    assert got == pairs
    # Parameter-owning nodes carry inspection's layer ids, parameters and MACs.
    layers = {layer.name: layer for layer in inspect_model(path, "onnx").layers}
    owners = {n.id: n for n in op_nodes if n.params}
    assert set(owners) == set(layers)
    for name, layer in layers.items():
        assert (owners[name].params, owners[name].macs) == (layer.params, layer.macs)
    assert {"conv1", "conv2", "fc"} <= set(owners)
    if which == "int8":
        assert all(owners[name].quantized for name in ("conv1", "conv2", "fc"))
        assert not any(n.op_type in PLUMBING for n in graph.nodes)
    else:
        assert not any(n.quantized for n in graph.nodes)
    assert len({n.id for n in graph.nodes}) == len(graph.nodes)


def test_onnx_zip_graph_equals_the_plain_onnx_graph(cnn_files: dict[str, Path]) -> None:
    plain, zipped = model_graph(cnn_files["onnx"], "onnx"), model_graph(cnn_files["onnx_zip"], "onnx_zip")
    assert zipped.nodes and [n.id for n in zipped.nodes] == [n.id for n in plain.nodes]
    assert [(n.params, n.macs) for n in zipped.nodes] == [(n.params, n.macs) for n in plain.nodes]
    assert zipped.edges == plain.edges


def test_inspect_with_graph_extracts_an_onnx_zip_once(
    cnn_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inspect job needs the inspection and the graph: one extraction serves both, and they equal the
    inspection and graph of the plain ONNX file."""
    extract = inspection_files.extract_onnx_zip
    calls: list[Path] = []

    def counting(path: Path, folder: Path) -> Path:
        calls.append(path)
        return extract(path, folder)

    monkeypatch.setattr(inspection_files, "extract_onnx_zip", counting)
    inspection, graph = inspect_with_graph(cnn_files["onnx_zip"], "onnx_zip")
    assert calls == [cnn_files["onnx_zip"]]
    plain = inspect_model(cnn_files["onnx"], "onnx")
    assert inspection.layers and inspection.to_dict() == plain.to_dict()
    assert graph.nodes and graph.edges == model_graph(cnn_files["onnx"], "onnx").edges


def test_torch_formats_get_a_note_not_a_graph(tmp_path: Path) -> None:
    graph = model_graph(tmp_path / "missing.pt2", "torch_export")
    assert graph.nodes == [] and "ONNX" in graph.notes[0]


def test_a_graph_that_cannot_be_built_is_a_note_not_a_failure(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a protobuf at all")
    graph = display_graph(broken, "onnx")
    assert graph.nodes == [] and "could not be built" in graph.notes[0] and "ModelLoadError" in graph.notes[0]


def test_500_layer_chain_is_grouped_by_block(tmp_path: Path) -> None:
    path = deep_chain_onnx(tmp_path / "deep.onnx", blocks=250, width=8)
    started = time.perf_counter()
    graph = model_graph(path, "onnx")
    seconds = time.perf_counter() - started
    print(f"500-layer graph built in {seconds:.2f} s")
    op_nodes = [n for n in graph.nodes if n.kind == "op"]
    assert len(op_nodes) == len(onnx.load(str(path)).graph.node) == 500
    assert len(graph.edges) == 501  # a chain: input -> 500 nodes -> output
    assert op_nodes[0].group_path == ["blocks", "blocks.0", "blocks.0.linear"]
    assert sum(n.params for n in op_nodes) == 250 * (8 * 8 + 8)
    assert seconds < 30


@pytest.mark.slow
def test_third_party_minilm_int8_graph_keeps_every_layer_and_marks_int8_weights() -> None:
    from tests.support.pretrained import minilm_int8_onnx

    path = minilm_int8_onnx()
    graph = model_graph(path, "onnx")
    model = onnx.load(str(path), load_external_data=False)
    int8 = {i.name for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8}
    ids = {n.id: n for n in graph.nodes}
    layers = inspect_model(path, "onnx").layers
    assert {layer.name for layer in layers} <= set(ids)
    owners_of_int8 = {layer.name for layer in layers if int8 & set(layer.param_tensors)}
    assert len(owners_of_int8) >= 36  # 6 blocks x (q, k, v, out, 2 FFN) weights at least
    assert {n.id for n in graph.nodes if n.quantized} == owners_of_int8
    ops, _ = expected_structure(path)
    assert [n.op_type for n in graph.nodes if n.kind == "op"] == ops
