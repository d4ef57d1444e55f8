"""The model's graph for display: compute nodes and the tensors between them.

* Nodes are the graph's compute nodes plus one node per graph input and output. Constant nodes and QDQ
  plumbing (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) are not nodes: an edge runs through
  them from the producer to the consumer, and a node fed through a DequantizeLinear, a QLinear* /
  *Integer op, or one owning an int8/uint8/int4 parameter is marked quantized.
* Each node's id is its canonical id (identity.py): parameter-owning nodes get exactly the ids inspection
  gives its layers (the model page, the fidelity profile and the sensitivity scan use them), other nodes
  the same rule with '#k' suffixes that avoid those ids.
* group_path lists the dotted prefixes of the node's module path ("encoder", "encoder.layer",
  "encoder.layer.0", ...), so a viewer can collapse a repeated block into one box.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from worker.engine.errors import EngineError, JobCancelled
from worker.engine.inspection.files import readable_model
from worker.engine.inspection.graph_types import GraphEdge, GraphNode, ModelGraph, group_path
from worker.engine.inspection.identity import canonical_onnx_ids, node_label, onnx_aliases, onnx_module_path
from worker.engine.inspection.model import ModelInspection
from worker.engine.inspection.onnx_macs import _onnx_macs
from worker.engine.inspection.onnx_side import _onnx_params, _onnx_spec, _read_onnx
from worker.engine.inspection.shapes import resolve_input_shapes
from worker.engine.types import ModelFormat

if TYPE_CHECKING:
    import onnx

# int8 / uint8 / int4 / uint4 initializers: a node owning one holds quantized weights (e.g. a third party's
# weight-only int8 export: int8 weight -> Cast -> Mul by the scale -> MatMul; the Mul owns the weight).
_LOW_BIT_TYPES = frozenset({2, 3, 21, 22})  # TensorProto.UINT8, INT8, UINT4, INT4
QDQ_PLUMBING = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})


def model_graph(
    path: Path,
    fmt: ModelFormat,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inspection: ModelInspection | None = None,
) -> ModelGraph:
    """The display graph of a model file. A torch.export program's nodes take their layers' MACs from
    `inspection` (inspected here when not given); TorchScript's have none (its interpreter hides them)."""
    if fmt in ("onnx", "onnx_zip"):
        with readable_model(path, fmt) as (onnx_path, _):
            return onnx_graph(_read_onnx(onnx_path), input_shapes)
    if fmt == "torch_export":
        from worker.engine.inspection.torch_graph import torch_export_graph
        from worker.engine.inspection.torch_side import inspect_torch_export, load_program

        program = load_program(path)
        return torch_export_graph(program, inspection or inspect_torch_export(path, input_shapes))
    from worker.engine.inspection.torch_side import load_torchscript_runner
    from worker.engine.inspection.torchscript_graph import torchscript_graph

    runner = load_torchscript_runner(path)
    outputs = None if runner.outputs is None else [spec.name for spec in runner.outputs]
    return torchscript_graph(runner.module, [spec.name for spec in runner.inputs], outputs)


def display_graph(
    path: Path,
    fmt: ModelFormat,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inspection: ModelInspection | None = None,
) -> ModelGraph:
    """model_graph for the inspect job: a graph that cannot be built is a note, not a failed inspection (the
    model itself was inspected and runs; RuntimeError is what TorchScript's IR raises on a method it cannot
    give). Cancellation and time limits are not caught."""
    try:
        return model_graph(path, fmt, input_shapes, inspection)
    except JobCancelled:
        raise
    except (EngineError, ValueError, KeyError, IndexError, TypeError, AttributeError, RuntimeError) as exc:
        note = (
            f"The graph could not be built ({type(exc).__name__}: {exc}); the rest of the inspection stands."
        )
        return ModelGraph(format=fmt, nodes=[], edges=[], notes=[note])


def onnx_graph(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None = None) -> ModelGraph:
    graph = model.graph
    initializers = {init.name for init in graph.initializer}
    param_names: dict[int, list[str]] = {}
    node_params, _, _ = _onnx_params(graph, param_names)
    inputs = [_onnx_spec(value) for value in graph.input if value.name not in initializers]
    shapes_used, _ = resolve_input_shapes(inputs, input_shapes)
    node_macs, mac_notes = _onnx_macs(model, shapes_used)
    compute = [i for i, node in enumerate(graph.node) if _is_compute(node)]
    ids = _node_ids(graph, compute, [i for i in compute if node_params.get(i)])

    nodes = [GraphNode(id=f"input:{spec.name}", kind="input", op_type="Input") for spec in inputs]
    producer: dict[str, str] = {spec.name: f"input:{spec.name}" for spec in inputs}
    plumbing: dict[str, str] = {}  # output tensor of a QDQ node -> the tensor it was made from
    for node in graph.node:
        if node.op_type in QDQ_PLUMBING and node.input:
            for out in node.output:
                plumbing[out] = node.input[0]
    for index in compute:
        for out in graph.node[index].output:
            if out:
                producer[out] = ids[index]

    def resolve(tensor: str) -> tuple[str | None, bool]:
        """The visible node that makes `tensor` (None for a constant) and whether it passed QDQ plumbing."""
        quantized = False
        seen: set[str] = set()
        while tensor in plumbing and tensor not in seen:
            seen.add(tensor)
            tensor = plumbing[tensor]
            quantized = True
        return producer.get(tensor), quantized

    edges: list[GraphEdge] = []
    linked: set[tuple[str, str]] = set()

    def link(tensor: str, target: str) -> bool:
        source, quantized = resolve(tensor)
        if source is not None and source != target and (source, target) not in linked:
            linked.add((source, target))
            edges.append(GraphEdge(source, target, tensor, quantized))
        return quantized

    low_bit = {init.name for init in graph.initializer if init.data_type in _LOW_BIT_TYPES}
    for index in compute:
        node = graph.node[index]
        quantized = node.op_type.startswith("QLinear") or node.op_type.endswith("Integer")
        quantized = quantized or any(name in low_bit for name in param_names.get(index, []))
        for tensor in node.input:
            if tensor and tensor not in initializers:
                quantized = link(tensor, ids[index]) or quantized
        module = onnx_module_path(node)
        macs = node_macs[index] if node_macs else None
        nodes.append(
            GraphNode(
                id=ids[index],
                kind="op",
                op_type=node.op_type,
                aliases=onnx_aliases(node, index, ids[index], param_names.get(index, [])),
                module_path=module,
                group_path=group_path(module),
                quantized=quantized,
                params=node_params.get(index, 0),
                macs=macs,
            )
        )
    for value in graph.output:
        out_id = f"output:{value.name}"
        nodes.append(GraphNode(id=out_id, kind="output", op_type="Output"))
        link(value.name, out_id)
    return ModelGraph(format="onnx", nodes=nodes, edges=edges, notes=mac_notes)


def _is_compute(node: onnx.NodeProto) -> bool:
    return node.op_type != "Constant" and node.op_type not in QDQ_PLUMBING


def _node_ids(graph: onnx.GraphProto, compute: list[int], owners: list[int]) -> dict[int, str]:
    """Owners get inspection's ids (canonical_onnx_ids over the owners alone); the other nodes the same
    base name with the first free '#k' suffix."""
    ids = canonical_onnx_ids(graph, owners)
    taken = set(ids.values())
    for index in compute:
        if index in ids:
            continue
        node = graph.node[index]
        base = onnx_module_path(node) or node_label(node, index)
        name, count = base, 1
        while name in taken:
            count += 1
            name = f"{base}#{count}"
        ids[index] = name
        taken.add(name)
    return ids
