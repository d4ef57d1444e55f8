"""MACs per ONNX node after shape inference at concrete input shapes: one rule per matrix-like op."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

ShapeMap = dict[str, tuple[int | None, ...]]


def node_name(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


@dataclass(frozen=True)
class OnnxShapeFacts:
    """What shape inference at concrete input shapes tells about an ONNX graph."""

    macs: list[int | None] | None
    """MACs per node (0 for ops without a MAC rule), None when the input shapes are unknown."""
    notes: list[str]
    largest_value_bytes: int | None
    """Bytes of the largest tensor a node writes (None: no complete shape). At one sample's input shapes,
    the largest activation one sample needs (the sensitivity scan sizes its batches by it)."""


def onnx_shape_facts(model: onnx.ModelProto, shapes_used: Mapping[str, list[int]] | None) -> OnnxShapeFacts:
    """MACs per node and the largest written tensor, from one shape inference at `shapes_used`."""
    import onnx

    if shapes_used is None:
        return OnnxShapeFacts(None, [], None)
    typed = _without_weight_values(model)
    _set_input_shapes(typed.graph, shapes_used)
    try:
        inferred = onnx.shape_inference.infer_shapes(typed, strict_mode=False, data_prop=True)
    except Exception as exc:  # InferenceError and friends: report it, do not fail the inspection
        notes = [f"ONNX shape inference failed, MACs unknown: {exc}"]
        return OnnxShapeFacts([None] * len(model.graph.node), notes, None)
    shapes = _known_shapes(inferred.graph)
    macs: list[int | None] = []
    unknown: list[str] = []
    for index, node in enumerate(model.graph.node):
        rule = _MAC_RULES.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        value = rule(node, shapes) if rule else 0
        if value is None:
            unknown.append(f"{node_name(node, index)} ({node.op_type})")
        macs.append(value)
    notes = [f"MACs unknown for {unknown}: shape inference gave no complete shapes."] if unknown else []
    return OnnxShapeFacts(macs, notes, _largest_value_bytes(inferred.graph))


_STRIPPED_TYPES = (1, 10, 11, 16)  # FLOAT, FLOAT16, DOUBLE, BFLOAT16: weights, never shapes


def _without_weight_values(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose float initializers over 1 KiB keep their type and dims but not their values,
    which shape inference does not read (integer tensors, which may hold shapes, are kept whole). Copying the
    values made the ResNet-18 shape's sensitivity scan peak 137 MiB higher, here, than anywhere after."""
    import onnx

    typed = onnx.ModelProto()
    _copy_fields(model, typed, skip="graph")
    _copy_fields(model.graph, typed.graph, skip="initializer")
    initializers = model.graph.initializer
    for init in initializers:
        if init.data_type in _STRIPPED_TYPES and init.ByteSize() > 1024:
            stub = typed.graph.initializer.add(name=init.name, data_type=init.data_type, dims=init.dims)
            stub.data_location = onnx.TensorProto.EXTERNAL
            stub.external_data.add(key="location", value="kneeboard-values-not-loaded")
        else:
            typed.graph.initializer.add().CopyFrom(init)
    return typed


def _copy_fields(source: Any, target: Any, skip: str) -> None:
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if hasattr(value, "extend"):  # a repeated field
            getattr(target, field.name).extend(value)
        elif hasattr(value, "CopyFrom"):  # a message
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def _onnx_macs(
    model: onnx.ModelProto, shapes_used: Mapping[str, list[int]] | None
) -> tuple[list[int | None] | None, list[str]]:
    """MACs per node (0 for ops without a MAC rule), or None when the input shapes are unknown."""
    facts = onnx_shape_facts(model, shapes_used)
    return facts.macs, facts.notes


def _largest_value_bytes(graph: onnx.GraphProto) -> int | None:
    """The largest tensor among the node outputs whose shape and element type inference gave."""
    import numpy as np
    from onnx import helper

    largest: int | None = None
    for value in [*graph.value_info, *graph.output]:
        tensor_type = value.type.tensor_type
        dims = tensor_type.shape.dim if tensor_type.HasField("shape") else None
        if dims is None or not all(d.HasField("dim_value") for d in dims):
            continue
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)).itemsize
        except (KeyError, TypeError):  # undefined or string element type
            continue
        size = math.prod(int(d.dim_value) for d in dims) * itemsize
        largest = size if largest is None else max(largest, size)
    return largest


def _set_input_shapes(graph: onnx.GraphProto, shapes: Mapping[str, list[int]]) -> None:
    del graph.value_info[:]  # stale symbolic shapes; inference recomputes them from the concrete inputs
    for value in graph.input:
        if value.name not in shapes:
            continue
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for size in shapes[value.name]:
            dims.add().dim_value = size


def _known_shapes(graph: onnx.GraphProto) -> ShapeMap:
    shapes: ShapeMap = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor_type = value.type.tensor_type
        if tensor_type.HasField("shape"):
            shapes[value.name] = tuple(
                int(d.dim_value) if d.HasField("dim_value") else None for d in tensor_type.shape.dim
            )
    for init in graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
    return shapes


def _full_shape(
    shapes: ShapeMap, node: onnx.NodeProto, position: int, output: bool = False
) -> list[int] | None:
    names = node.output if output else node.input
    if position >= len(names) or not names[position]:
        return None
    shape = shapes.get(names[position])
    if shape is None or any(d is None for d in shape):
        return None
    return [int(d) for d in shape if d is not None]


def _conv_rule(weight_position: int) -> Callable[[onnx.NodeProto, ShapeMap], int | None]:
    """Conv-like: every output element takes (Cin / groups) * prod(kernel) MACs = prod(W.shape[1:])."""

    def rule(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
        out = _full_shape(shapes, node, 0, output=True)
        weight = _full_shape(shapes, node, weight_position)
        if out is None or weight is None:
            return None
        return math.prod(out) * math.prod(weight[1:])

    return rule


def _conv_transpose_macs(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
    """Every input element is scattered through (Cout / groups) * prod(kernel) weights."""
    x = _full_shape(shapes, node, 0)
    weight = _full_shape(shapes, node, 1)
    if x is None or weight is None:
        return None
    return math.prod(x) * math.prod(weight[1:])


def _matmul_rule(a_position: int) -> Callable[[onnx.NodeProto, ShapeMap], int | None]:
    """MatMul-like: every output element is a dot product over A's last axis."""

    def rule(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
        out = _full_shape(shapes, node, 0, output=True)
        a = _full_shape(shapes, node, a_position)
        if out is None or a is None or not a:
            return None
        return math.prod(out) * a[-1]

    return rule


def _gemm_macs(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
    out = _full_shape(shapes, node, 0, output=True)
    a = _full_shape(shapes, node, 0)
    if out is None or a is None or len(a) != 2:
        return None
    trans_a = next((attr.i for attr in node.attribute if attr.name == "transA"), 0)
    return math.prod(out) * (a[0] if trans_a else a[1])


def _rnn_macs(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
    """RNN / GRU / LSTM: per step and sample, every gate multiplies x by W and h by R."""
    x = _full_shape(shapes, node, 0)
    w = _full_shape(shapes, node, 1)
    r = _full_shape(shapes, node, 2)
    if x is None or w is None or r is None or len(x) != 3:
        return None
    layout = next((attr.i for attr in node.attribute if attr.name == "layout"), 0)
    seq, batch = (x[1], x[0]) if layout else (x[0], x[1])
    return seq * batch * (math.prod(w) + math.prod(r))


_MAC_RULES: dict[str, Callable[[onnx.NodeProto, ShapeMap], int | None]] = {
    "Conv": _conv_rule(1),
    "ConvInteger": _conv_rule(1),
    "QLinearConv": _conv_rule(3),
    "ConvTranspose": _conv_transpose_macs,
    "MatMul": _matmul_rule(0),
    "MatMulInteger": _matmul_rule(0),
    "QLinearMatMul": _matmul_rule(0),
    "Gemm": _gemm_macs,
    "LSTM": _rnn_macs,
    "GRU": _rnn_macs,
    "RNN": _rnn_macs,
}


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total
