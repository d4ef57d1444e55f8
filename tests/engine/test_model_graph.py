"""The display graph of real models: the digits CNN and its QDQ int8 export, checked against the onnx
graph read independently here, and a 500-layer chain built in the test."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from torch import nn

from tests.support.deep_onnx import deep_chain_onnx
from worker.demo.models import DigitsCNN, export_onnx, quantize_onnx_int8
from worker.engine.formats.exporters import export_torch_program, export_torchscript
from worker.engine.inspection import files as inspection_files
from worker.engine.inspection import inspect_model, inspect_with_graph
from worker.engine.inspection.graph import ModelGraph, display_graph, model_graph

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


class _Residual(nn.Module):
    """Nested modules, a skip connection, a module called twice and a functional op in the root."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.block = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
        self.act = nn.ReLU()
        self.head = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.stem(x))
        y = self.act(y + self.block(y))
        return self.head(torch.flatten(y, 1))


def _module_structure(graph: ModelGraph) -> tuple[list[tuple[str, int, int | None]], set[tuple[str, str]]]:
    """(id, params, MACs) of the first call of each module, in order, and the edges between module nodes
    and the graph's input/output with every other node contracted away (ONNX and torch differ in the ops
    outside modules, Reshape vs flatten, and in the names of inputs and outputs)."""

    def name(node_id: str) -> str:
        return node_id.split(":", 1)[0] if node_id.startswith(("input:", "output:")) else node_id

    keep = {n.id for n in graph.nodes if n.module_path or n.kind != "op"}
    succ: dict[str, set[str]] = {}
    for edge in graph.edges:
        succ.setdefault(edge.source, set()).add(edge.target)
    edges: set[tuple[str, str]] = set()
    for start in keep:
        todo, seen = list(succ.get(start, ())), set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in keep:
                edges.add((name(start), name(node)))
            else:
                todo.extend(succ.get(node, ()))
    firsts = [(n.id, n.params, n.macs) for n in graph.nodes if n.module_path and "#" not in n.id]
    return firsts, edges


@pytest.mark.parametrize("which", ["digits", "residual"])
def test_torch_export_graph_equals_the_onnx_export_of_the_same_model(
    digits_cnn: DigitsCNN, tmp_path: Path, which: str
) -> None:
    """The .pt2 graph is read from the fx program; the reference is the graph of the same module exported
    to ONNX by torch's dynamo exporter and read by the ONNX path. Module nodes get the same ids (repeated
    calls '#2'), parameters and MACs, and are wired alike; the .pt2 ids are inspection's layer names."""
    model = digits_cnn if which == "digits" else _Residual().eval()
    x = np.random.default_rng(1).random((2, 1, 8, 8), dtype=np.float32)
    pt2 = export_torch_program(model, x, tmp_path / "m.pt2")
    inspection, graph = inspect_with_graph(pt2, "torch_export")
    reference = model_graph(export_onnx(model, x, tmp_path / "m.onnx"), "onnx")
    assert graph.notes == [] and graph.format == "torch_export"
    assert _module_structure(graph) == _module_structure(reference)
    assert {n.id for n in graph.nodes if n.params} == {
        layer.name for layer in inspection.layers if layer.params
    }
    ids = [n.id for n in graph.nodes]
    assert len(ids) == len(set(ids))
    order = {node_id: i for i, node_id in enumerate(ids)}
    assert all(order[e.source] < order[e.target] for e in graph.edges if not e.target.startswith("output:"))
    assert any(e.source.startswith("input:") for e in graph.edges)
    assert any(e.target.startswith("output:") for e in graph.edges)


@pytest.mark.parametrize("which", ["digits", "residual"])
@pytest.mark.parametrize("how", ["trace", "script"])
def test_torchscript_graph_equals_the_onnx_export_of_the_same_model(
    digits_cnn: DigitsCNN, tmp_path: Path, which: str, how: str
) -> None:
    """The TorchScript graph is read from the module's IR (CallMethod of GetAttr, walked into modules with
    submodules); the reference is again the dynamo ONNX export read by the ONNX path. Module nodes get the
    same ids (a traced second call is a method of its own, forward1: still '#2'), parameters and wiring;
    MACs are unknown for TorchScript, as inspection says; the ids are inspection's layer names."""
    model = digits_cnn if which == "digits" else _Residual().eval()
    x = np.random.default_rng(1).random((2, 1, 8, 8), dtype=np.float32)
    if how == "trace":
        path = export_torchscript(model, x, tmp_path / "m.pt")
    else:
        path = tmp_path / "m.pt"
        torch.jit.save(torch.jit.script(model), str(path))
    inspection, graph = inspect_with_graph(path, "torchscript")
    reference = model_graph(export_onnx(model, x, tmp_path / "m.onnx"), "onnx")
    assert graph.notes == [] and graph.format == "torchscript"
    firsts, edges = _module_structure(graph)
    reference_firsts, reference_edges = _module_structure(reference)
    assert [(i, p) for i, p, _ in firsts] == [(i, p) for i, p, _ in reference_firsts]
    assert all(macs is None for _, _, macs in firsts)
    assert edges == reference_edges
    assert {n.id for n in graph.nodes if n.params} == {
        layer.name for layer in inspection.layers if layer.params
    }
    assert sum(n.params for n in graph.nodes) == inspection.total_params
    ids = [n.id for n in graph.nodes]
    assert len(ids) == len(set(ids))
    order = {node_id: i for i, node_id in enumerate(ids)}
    assert all(order[e.source] < order[e.target] for e in graph.edges if not e.target.startswith("output:"))
    assert [n.id for n in graph.nodes if n.kind == "input"] == [
        "input:input" if how == "trace" else "input:x"
    ]


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
    from tests.support.pretrained_minilm import minilm_int8_onnx

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
