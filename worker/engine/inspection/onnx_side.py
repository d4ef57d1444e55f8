"""ONNX inspection: read the graph, count parameters per node (followed through QDQ and pass-through ops)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from worker.engine.errors import ModelLoadError
from worker.engine.inspection.identity import canonical_onnx_ids, onnx_aliases
from worker.engine.inspection.model import LayerInfo, ModelInspection
from worker.engine.inspection.onnx_macs import _onnx_macs, _sum_or_none
from worker.engine.inspection.shapes import resolve_input_shapes
from worker.engine.types import Dim, TensorSpec

if TYPE_CHECKING:
    import onnx

# Inputs that hold shapes, indices, axes or quantization scales / zero points: constants, not weights.
_META_INPUTS: dict[str, frozenset[int]] = {
    op: frozenset(positions)
    for ops, positions in [
        (("Reshape", "Expand", "Tile", "Upsample", "Squeeze", "Unsqueeze", "TopK", "Split", "CumSum"), {1}),
        (("Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "OneHot"), {1}),
        (("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2"), {1}),
        (("ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"), {1}),
        (("Slice",), {1, 2, 3, 4}),
        (("Pad", "Resize"), {1, 2, 3}),
        (("Clip",), {1, 2}),
        (("ConstantOfShape",), {0}),
        (("Range",), {0, 1, 2}),
        (("QuantizeLinear", "DequantizeLinear"), {1, 2}),
        (("QLinearConv", "QLinearMatMul"), {1, 2, 4, 5, 6, 7}),
        (("MatMulInteger", "ConvInteger"), {2, 3}),
    ]
    for op in ops
}

# Ops a weight may pass through on its way to the layer that uses it (QDQ: weight -> DequantizeLinear
# -> Conv; an exported LSTM's recurrence weight -> Slice (per gate) -> Concat -> LSTM).
_WEIGHT_PASS_THROUGH = frozenset(
    {
        "DequantizeLinear",
        "QuantizeLinear",
        "Identity",
        "Cast",
        "Transpose",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Slice",
        "Split",
        "Concat",
    }
)

_NON_PARAM_DTYPES = frozenset({"int64", "bool", "str", "object"})  # shapes, indices, masks, strings


def inspect_onnx(model_path: Path, input_shapes: Mapping[str, Sequence[int]] | None) -> ModelInspection:
    model = _read_onnx(model_path)
    graph = model.graph
    initializer_names = {init.name for init in graph.initializer}
    inputs = [_onnx_spec(value) for value in graph.input if value.name not in initializer_names]
    outputs = [_onnx_spec(value) for value in graph.output]
    shapes_used, notes = resolve_input_shapes(inputs, input_shapes)
    param_names: dict[int, list[str]] = {}
    node_params, total_params, param_notes = _onnx_params(graph, param_names)
    node_macs, mac_notes = _onnx_macs(model, shapes_used)
    notes += param_notes + mac_notes + _onnx_structure_notes(graph)
    owners = [i for i in range(len(graph.node)) if node_params.get(i)]
    ids = canonical_onnx_ids(graph, owners)
    layers = [
        LayerInfo(
            ids[i],
            graph.node[i].op_type,
            node_params[i],
            node_macs[i] if node_macs else None,
            aliases=onnx_aliases(graph.node[i], i, ids[i], param_names.get(i, [])),
            inputs=[name for name in graph.node[i].input if name],
            outputs=[name for name in graph.node[i].output if name],
            param_tensors=list(param_names.get(i, [])),
        )
        for i in owners
    ]
    macs = _sum_or_none(node_macs) if node_macs else None
    return ModelInspection(
        inputs=inputs,
        outputs=outputs,
        layers=layers,
        total_params=total_params,
        macs=macs,
        flops=None if macs is None else 2 * macs,
        input_shapes_used=shapes_used,
        notes=notes,
    )


def _read_onnx(path: Path) -> onnx.ModelProto:
    """Parse the protobuf without its external data (only dims are needed), except small external
    tensors such as Reshape targets, which shape inference needs the values of. Inlines local functions."""
    import onnx
    import onnx.inliner
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    try:
        model = onnx.load(str(path), load_external_data=False)
        for tensor in model.graph.initializer:
            if uses_external_data(tensor) and math.prod(tensor.dims) <= 64:
                load_external_data_for_tensor(tensor, str(path.parent))
    except Exception as exc:  # DecodeError, OSError, ValueError: all mean the file is unusable
        raise ModelLoadError(f"onnx could not load {path.name}: {exc}") from exc
    if not model.graph.output or not model.graph.node:
        raise ModelLoadError(
            f"onnx parsed {path.name} but found no graph (no nodes or no outputs); is it an ONNX model?"
        )
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
    return model


def _onnx_spec(value: onnx.ValueInfoProto) -> TensorSpec:
    from onnx import helper

    tensor_type = value.type.tensor_type
    try:
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name
    except (KeyError, ValueError, TypeError):
        dtype = value.type.WhichOneof("value") or "unknown"
    shape: tuple[Dim, ...] = ()
    if tensor_type.HasField("shape"):
        shape = tuple(_onnx_dim(dim) for dim in tensor_type.shape.dim)
    return TensorSpec(value.name, shape, dtype)


def _onnx_dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    if dim.HasField("dim_value"):
        return int(dim.dim_value)
    return dim.dim_param or None


def _onnx_params(
    graph: onnx.GraphProto, names: dict[int, list[str]] | None = None
) -> tuple[dict[int, int], int, list[str]]:
    """Parameters per node index, the total, and notes; `names`, when given, receives the parameter
    initializers' names per owning node index.

    An initializer is a parameter unless it is integer-typed index/shape data (int64, bool) or every
    use is a shape / index / axes / quantization scale / zero-point input (see _META_INPUTS). So a QDQ
    model's int8 weights and int32 biases count, their scales and zero points do not. A parameter
    belongs to the node that consumes it, followed through DequantizeLinear, Transpose, Slice,
    Concat... while each step has a single consumer: a QDQ Conv owns its int8 weight, not the
    DequantizeLinear. An initializer used along several paths belongs to the node they all lead to,
    or else to the first path's node; it is counted once either way. A one-element initializer that
    only feeds Expand is a fill value (torch.zeros(...) exported), not a parameter. Other constants
    folded into initializers by an exporter cannot be told apart from trained weights and are counted.
    """
    consumers = _consumers(graph)
    per_node: dict[int, int] = {}
    total = 0
    orphan = 0
    for init in graph.initializer:
        data_uses = _data_uses(graph, init, consumers.get(init.name, []))
        if data_uses is None:
            continue
        size = math.prod(init.dims)
        total += size
        if not data_uses:
            orphan += size
            continue
        owners = [_weight_owner(graph, index, consumers) for index, _ in data_uses]
        owner = owners[0]  # all paths agree, or the first path wins
        per_node[owner] = per_node.get(owner, 0) + size
        if names is not None:
            names.setdefault(owner, []).append(init.name)
    notes = [f"{orphan} parameters are in initializers no node uses."] if orphan else []
    return per_node, total, notes


def _data_uses(
    graph: onnx.GraphProto, init: onnx.TensorProto, uses: list[tuple[int, int]]
) -> list[tuple[int, int]] | None:
    """The uses of `init` as data, or None when it is not a parameter at all (see _onnx_params)."""
    from onnx import helper

    dtype = helper.tensor_dtype_to_np_dtype(init.data_type).name if init.data_type else "unknown"
    data_uses = [(i, pos) for i, pos in uses if pos not in _META_INPUTS.get(graph.node[i].op_type, ())]
    if dtype in _NON_PARAM_DTYPES or (uses and not data_uses):
        return None
    if (
        math.prod(init.dims) == 1
        and data_uses
        and all(graph.node[i].op_type == "Expand" for i, _ in data_uses)
    ):
        return None
    return data_uses


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[int, int]]]:
    """Value name -> (node index, input position) of every use in the main graph."""
    uses: dict[str, list[tuple[int, int]]] = {}
    for index, node in enumerate(graph.node):
        for position, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((index, position))
    return uses


def _weight_owner(graph: onnx.GraphProto, index: int, consumers: Mapping[str, list[tuple[int, int]]]) -> int:
    graph_outputs = {value.name for value in graph.output}
    seen = {index}
    while graph.node[index].op_type in _WEIGHT_PASS_THROUGH and len(graph.node[index].output) == 1:
        produced = graph.node[index].output[0]
        uses = consumers.get(produced, [])
        if len(uses) != 1 or produced in graph_outputs or uses[0][0] in seen:
            break
        index = uses[0][0]
        seen.add(index)
    return index


def _onnx_structure_notes(graph: onnx.GraphProto) -> list[str]:
    from onnx import AttributeProto

    notes = []
    subgraph_ops = sorted(
        {
            node.op_type
            for node in graph.node
            if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)
        }
    )
    if subgraph_ops:
        notes.append(f"Nodes inside {subgraph_ops} subgraphs are not counted (parameters or MACs).")
    constants = [node for node in graph.node if node.op_type == "Constant"]
    constant_elements = sum(_constant_size(node) for node in constants)
    if constant_elements > len(constants):
        notes.append(f"Constant nodes hold {constant_elements} values; they are not counted as parameters.")
    return notes


def _constant_size(node: onnx.NodeProto) -> int:
    return sum(math.prod(a.t.dims) for a in node.attribute if a.name == "value")
