"""The channel spaces of an ONNX graph: which tensors carry the output channels of which weight layers.

A *channel space* starts at a producer (a Conv with group 1, a Gemm or a MatMul with a constant 2-D
weight) and follows its output through per-channel ops (element-wise activations, Mul / Add / ... by a
per-channel or scalar constant, BatchNormalization, pools, a depthwise Conv, a Flatten of a 1 x 1 map) to
the layers that consume it (Conv / Gemm / MatMul inputs). An element-wise op joining several such tensors
(a residual Add, the Mul of a SiLU or a squeeze-excitation) unites their spaces: every producer of a
space must drop the same channels. Any other reader (Concat, Reshape, Transpose, LayerNormalization, a
graph output...) *taints* the space with a reason naming the node: its channels are left dense.

`find_spaces` only reads the graph; `export_pruned` decides what to remove and edits it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression.onnx_layers import OnnxLayerFinder
from worker.engine.errors import EngineError

if TYPE_CHECKING:
    import onnx

UNARY = {
    "Relu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "Identity",
    "Dropout",
    "Neg",
    "Erf",
    "Elu",
    "Softplus",
    "Gelu",
}
"""Element-wise ops of one tensor (constants aside) whose output channel c depends on input channel c only."""
BINARY = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean"}
POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
REDUCE = {"ReduceMean", "ReduceMax", "ReduceMin"}
"""Reductions that map a constant channel to the same constant (ReduceSum would multiply it)."""


def attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    from onnx import helper

    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def label(node: onnx.NodeProto, index: int) -> str:
    """How a reason names a node: its op and torch module path when the exporter recorded one, else its name."""
    from worker.engine.inspection.identity import onnx_module_path

    module = onnx_module_path(node)
    name = node.name or f"#{index}"
    return f"{node.op_type} {module!r} ({name})" if module else f"{node.op_type} {name!r}"


@dataclass
class Space:
    """Tensors that carry the same `channels` channels (at the producers, on axis `axis` from the end)."""

    axis: int
    channels: int
    producers: list[int] = field(default_factory=list)
    passes: list[int] = field(default_factory=list)
    """Per-channel nodes (and joins) whose output is in the space, in graph order."""
    consumers: list[tuple[int, str]] = field(default_factory=list)
    """(node, kind: conv | gemm | matmul) reading the space as its data input."""
    taint: list[str] = field(default_factory=list)


class GraphFacts:
    """Producers, consumers and constant values of one graph."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from onnx import numpy_helper

        self.model = model
        graph = model.graph
        self.inits = {init.name: init for init in graph.initializer}
        self.constant_nodes = {
            node.output[0]: node for node in graph.node if node.op_type == "Constant" and node.output
        }
        self.identities = {
            node.output[0]: node.input[0] for node in graph.node if node.op_type == "Identity" and node.input
        }
        """Identity of a constant (the TorchScript exporter writes them without constant folding)."""
        self._arrays: dict[str, np.ndarray] = {}
        self._finder = OnnxLayerFinder(model)
        self._numpy = numpy_helper
        self.shapes = _inferred_shapes(model)

    def const(self, name: str) -> np.ndarray | None:
        """The value of an initializer or Constant node output, else None (computed from inputs)."""
        if not name:
            return None
        if name in self._arrays:
            return self._arrays[name]
        value: np.ndarray | None = None
        if name in self.inits:
            value = self._numpy.to_array(self.inits[name])
        elif name in self.identities:
            value = self.const(self.identities[name])
        elif name in self.constant_nodes:
            tensor = attr(self.constant_nodes[name], "value", None)
            value = None if tensor is None else self._numpy.to_array(tensor)
        elif (
            name in self._finder.constants
        ):  # a constant sub-graph (pads computed by the TorchScript exporter)
            try:
                self._finder.evaluate([name])
                value = self._finder.values[name]
            except EngineError:
                value = None
        if value is not None:
            self._arrays[name] = value
        return value


def _inferred_shapes(model: onnx.ModelProto) -> dict[str, tuple[int | None, ...]]:
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # an op shape inference does not know: no shapes, Flatten refuses
        return {}
    shapes: dict[str, tuple[int | None, ...]] = {}
    for value in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        tensor = value.type.tensor_type
        if tensor.HasField("shape"):
            shapes[value.name] = tuple(
                d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim
            )
    return shapes


def producer_channels(facts: GraphFacts, node: onnx.NodeProto) -> tuple[int, int] | None:
    """(channel axis counted from the end, number of output channels) when `node` is a producer."""
    if node.domain not in ("", "ai.onnx") or len(node.input) < 2:
        return None
    weight = facts.const(node.input[1])
    if weight is None or weight.dtype.kind != "f":
        return None
    if node.op_type == "Conv" and weight.ndim >= 3 and attr(node, "group", 1) == 1:
        return 1 - weight.ndim, int(weight.shape[0])
    if node.op_type == "Gemm" and weight.ndim == 2:
        return -1, int(weight.shape[0] if attr(node, "transB", 0) else weight.shape[1])
    if node.op_type == "MatMul" and weight.ndim == 2 and facts.const(node.input[0]) is None:
        return -1, int(weight.shape[1])
    return None


def zero_channels(facts: GraphFacts, node: onnx.NodeProto) -> set[int]:
    """Output channels whose weights are all exactly zero (what ChannelPrune's simulation writes)."""
    weight = facts.const(node.input[1])
    assert weight is not None
    if node.op_type == "Conv" or (node.op_type == "Gemm" and attr(node, "transB", 0)):
        rows = weight.reshape(weight.shape[0], -1)
    else:
        rows = weight.T
    return {int(c) for c in np.flatnonzero(~np.any(rows != 0, axis=1))}


def is_depthwise(facts: GraphFacts, node: onnx.NodeProto, channels: int) -> bool:
    weight = facts.const(node.input[1]) if len(node.input) > 1 else None
    return (
        node.op_type == "Conv"
        and weight is not None
        and attr(node, "group", 1) == channels
        and weight.shape[0] == channels
        and weight.shape[1] == 1
    )


def consumer_kind(facts: GraphFacts, node: onnx.NodeProto, axis: int) -> str | None:
    """conv | gemm | matmul when `node` reads a space (channel axis `axis`) as its data input 0."""
    weight = facts.const(node.input[1]) if len(node.input) > 1 else None
    if weight is None or node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Conv" and attr(node, "group", 1) == 1 and axis == 1 - weight.ndim:
        return "conv"
    if node.op_type == "Gemm" and axis == -1 and not attr(node, "transA", 0) and weight.ndim == 2:
        return "gemm"
    if node.op_type == "MatMul" and axis == -1 and weight.ndim == 2:
        return "matmul"
    return None


def _pads_around_channels(facts: GraphFacts, node: onnx.NodeProto, rank: int, axis: int) -> bool:
    """A constant zero padding of the other axes (TensorFlow "SAME" padding as exported): per channel."""
    mode = attr(node, "mode", b"constant")
    pads = attr(node, "pads", None)
    if pads is None and len(node.input) > 1:
        const = facts.const(node.input[1])
        pads = None if const is None else const.reshape(-1).tolist()
    value = facts.const(node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros(1)
    if mode not in (b"constant", "constant") or pads is None or value is None or np.any(value != 0):
        return False
    if len(node.input) > 3 and node.input[3]:  # opset 18 axes: not written by the exporters seen
        return False
    channel = rank + axis
    return len(pads) == 2 * rank and pads[channel] == 0 and pads[channel + rank] == 0


def _flattened_block(
    facts: GraphFacts, node: onnx.NodeProto, shape: tuple[int | None, ...], axis: int
) -> int | None:
    """H·W when `node` flattens an N x C x H x W map (channels on axis 1) to N x (C·H·W): a Flatten(axis 1)
    or a Reshape to a constant [-1 | 0, C·H·W] or [0, -1], as exporters write x.flatten(1); else None."""
    if len(shape) < 3 or axis != 1 - len(shape) or any(d is None for d in shape[1:]):
        return None
    block = int(np.prod([int(d or 0) for d in shape[2:]]))
    features = int(shape[1] or 0) * block
    if node.op_type == "Flatten" and attr(node, "axis", 1) == 1:
        return block
    target = facts.const(node.input[1]) if node.op_type == "Reshape" and len(node.input) > 1 else None
    if target is None or target.size != 2:
        return None
    first, second = (int(v) for v in target.reshape(-1))
    return block if (first in (-1, 0) and second == features) or (first == 0 and second == -1) else None


def _reduced_axis(facts: GraphFacts, node: onnx.NodeProto, axis: int, rank: int) -> int | None:
    """The channel axis (from the end) after a reduction that keeps the channels, else None."""
    axes_value = attr(node, "axes", None)
    if axes_value is None and len(node.input) > 1 and node.input[1]:
        const = facts.const(node.input[1])
        axes_value = None if const is None else const.reshape(-1).tolist()
    if axes_value is None:  # no axes: everything is reduced (unless noop_with_empty_axes)
        return None
    axes = {int(a) % rank for a in axes_value}
    channel = rank + axis
    if channel in axes:
        return None
    if attr(node, "keepdims", 1):
        return axis
    new_rank = rank - len(axes)
    return channel - sum(1 for a in axes if a < channel) - new_rank


def find_spaces(facts: GraphFacts) -> tuple[dict[int, Space], dict[str, tuple[int, int, int]]]:
    """The channel spaces by id, and each tensor's (space id, channel axis counted from the end, values per
    channel along that axis)."""
    graph = facts.model.graph
    spaces: list[Space] = []
    parent: list[int] = []
    of: dict[str, int] = {}
    axis_of: dict[str, int] = {}
    block_of: dict[str, int] = {}
    """Values per channel along the axis: H·W after a Flatten of a C x H x W map, else 1."""

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(ids: list[int], where: str) -> int:
        root = find(ids[0])
        for other in ids[1:]:
            r = find(other)
            if r == root:
                continue
            a, b = spaces[root], spaces[r]
            if a.channels != b.channels:
                a.taint.append(f"{where} joins tensors of {a.channels} and {b.channels} channels")
            parent[r] = root
            a.producers += b.producers
            a.passes += b.passes
            a.consumers += b.consumers
            a.taint += b.taint
        return root

    for index, node in enumerate(graph.node):
        where = label(node, index)
        data = [(pos, name) for pos, name in enumerate(node.input) if name in of]
        out = node.output[0] if node.output else ""
        if data:
            roots = [find(of[name]) for _, name in data]
            root = union(roots, where) if len(set(roots)) > 1 else roots[0]
            space = spaces[root]
            first_pos, first = data[0]
            axis = axis_of[first]
            shape = facts.shapes.get(first, ())
            rank = len(shape) if shape else (1 - axis if axis < -1 else None)
            nonconst = [name for name in node.input if name and facts.const(name) is None]
            kind = consumer_kind(facts, node, axis) if (first_pos, len(data)) == (0, 1) else None
            follows = True
            block = block_of[first]
            if block > 1 and not (
                kind in ("gemm", "matmul") or (node.op_type in UNARY and len(nonconst) == 1)
            ):
                space.taint.append(
                    f"{where} reads channels flattened with their {block} spatial values: only element-wise "
                    "activations and Gemm / MatMul are followed there"
                )
                follows = False
            elif kind is not None:
                space.consumers.append((index, kind))
                follows = False
            elif node.op_type in UNARY | POOLS and first_pos == 0 and len(nonconst) == 1:
                if node.op_type in POOLS and (rank is None or rank < 3 or axis != 1 - rank):
                    space.taint.append(f"{where} pools a tensor whose channels are not on axis 1")
            elif node.op_type == "BatchNormalization" and first_pos == 0 and len(nonconst) == 1:
                if rank is None or axis != 1 - rank:
                    space.taint.append(f"{where} normalizes an axis other than the channels")
            elif node.op_type in BINARY:
                outside = [n for n in nonconst if n not in of]
                if outside:
                    space.taint.append(
                        f"{where} combines the channels with {outside}, which no prunable layer produces"
                    )
                if len({axis_of[name] for _, name in data}) > 1:
                    space.taint.append(f"{where} joins tensors whose channels lie on different axes")
            elif first_pos == 0 and len(data) == 1 and is_depthwise(facts, node, space.channels):
                pass
            elif node.op_type in REDUCE and first_pos == 0 and rank is not None:
                reduced = _reduced_axis(facts, node, axis, rank)
                if reduced is None:
                    space.taint.append(f"{where} reduces over the channel axis or over unknown axes")
                else:
                    axis = reduced
            elif node.op_type == "Pad" and first_pos == 0 and rank is not None:
                if not _pads_around_channels(facts, node, rank, axis):
                    space.taint.append(
                        f"{where} pads the channel axis, with a value other than 0, or not by a constant"
                    )
            elif (flat := _flattened_block(facts, node, shape, axis)) is not None:
                axis, block = -1, flat
            else:
                space.taint.append(
                    f"{where} reads the channels (input {first!r}) and is not followed by the channel pruner "
                    "(it may mix or reshape channels)"
                )
                follows = False
            if follows and [o for o in node.output[1:] if o]:
                space.taint.append(
                    f"{where} has a second output (mask, indices, statistics) over the channels"
                )
            if follows and out:
                space.passes.append(index)
                of[out], axis_of[out], block_of[out] = root, axis, block
        found = producer_channels(facts, node)
        if found is not None and out:
            spaces.append(Space(found[0], found[1], producers=[index]))
            parent.append(len(parent))
            of[out], axis_of[out], block_of[out] = len(spaces) - 1, found[0], 1
    outputs = {o.name for o in graph.output}
    for name, sid in of.items():
        if name in outputs:
            spaces[find(sid)].taint.append(
                f"tensor {name!r} is a graph output: its channels are the model's output"
            )
    found_spaces = {i: spaces[i] for i in range(len(spaces)) if find(i) == i}
    for space in found_spaces.values():
        space.passes = sorted(set(space.passes))
    return found_spaces, {name: (find(sid), axis_of[name], block_of[name]) for name, sid in of.items()}
