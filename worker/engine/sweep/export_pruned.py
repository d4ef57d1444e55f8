"""Physical channel removal in an exported ONNX graph (issue 33).

ChannelPrune's simulation zeroes output channels (weights, and biases of the channel group). This pass
takes such a float graph and removes every output channel whose weights are exactly zero from its
producer (Conv with group 1, Gemm, MatMul with a constant 2-D weight), from every per-channel op between
the producer and its consumers (see `pruned_graph`) and from the consumers' input channels, so the
exported file is smaller and runs fewer MACs, and computes what the zeroed dense graph computes.

What a removed channel carries is tracked as a constant per channel: its producer's bias (0 when the
simulation zeroed the bias too, as the ONNX backend does; a torch model's batch norm folded by the
exporter leaves beta − gamma·mean/σ), then each op applied to it (Relu(0) = 0, but Sigmoid(0) = 0.5 and a
BatchNormalization of 0 is its shift). A consumer gets the constant folded into its bias when that is
exact: a Gemm (bias += alpha/beta · Σ c·B[c, :]), a Conv that does not pad (bias += Σ c·ΣW[:, c]). A
non-zero constant reaching a zero-padding Conv (its border outputs would see 0, not c), a depthwise Conv
or AveragePool that pads, or a MatMul (no bias to fold into) leaves the whole group dense with that
reason. So Sigmoid after a pruned channel is handled by folding where exact, refused where not.

A group (producers joined by a residual Add, a SiLU's Mul, a squeeze-excitation) removes the channels
that every producer of it zeroes; when they zero different channels nothing is removed and each
producer is listed as left dense, the reason naming the group. A group read by anything the pass does
not follow (Concat, Reshape, Transpose, a graph output...) is left dense with the reason naming that node.
If every channel of a group is zero, one is kept (a tensor of 0 channels is not a valid ONNX value).
The ops' constants are evaluated in `pruned_values`; `structured_export.prune_proto` checks the result
against the dense graph in onnxruntime before it is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.sweep.pruned_graph import (
    BINARY,
    GraphFacts,
    Space,
    attr,
    find_spaces,
    label,
    zero_channels,
)
from worker.engine.sweep.pruned_values import Refused, binary, operand_values, padded, show, unary

if TYPE_CHECKING:
    import onnx

Edit = tuple[int, int, int, Callable[[np.ndarray | None], np.ndarray]]
"""(phase, node, input position, new value from the current one). Phase 0 (input channels, bias folds)
runs before phase 1 (output channels), so a fold sees the bias before its channels are sliced."""


@dataclass
class StructuredPruning:
    """What `remove_zero_channels` did to a graph."""

    pruned: list[dict[str, Any]] = field(default_factory=list)
    """{layer, channels, removed, group}: one entry per producer whose channels were removed."""
    left_dense: list[dict[str, Any]] = field(default_factory=list)
    """{layer, zero_channels, reason}: producers with zeroed channels that stay in the file."""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"pruned": self.pruned, "left_dense": self.left_dense, "notes": self.notes}


def remove_zero_channels(model: onnx.ModelProto) -> StructuredPruning:
    """Remove the all-zero output channels of the graph's layers in place (see the module docstring)."""
    facts = GraphFacts(model)
    spaces, tensors = find_spaces(facts)
    nodes = model.graph.node
    result = StructuredPruning()
    edits: list[Edit] = []
    attrs: dict[int, int] = {}
    for sid, space in spaces.items():
        names = [label(nodes[i], i) for i in space.producers]
        zeros = [zero_channels(facts, nodes[i]) for i in space.producers]
        if not any(zeros):
            continue
        try:
            if space.taint:
                raise Refused("; ".join(dict.fromkeys(space.taint)))
            common = set.intersection(*zeros)
            if not common:
                raise Refused(
                    f"the group {names} (joined by element-wise ops such as a residual Add) zeroes different "
                    "channels in each layer: no channel is zero in all of them"
                )
            if len(common) == space.channels:
                common.discard(min(common))
                result.notes.append(f"{names}: every channel is zero; one is kept (0 channels is not valid)")
            planned, groups, removed, kept = _plan_largest(
                facts, space, sid, tensors, np.array(sorted(common))
            )
            result.notes += [f"{names}: {reason}" for reason in kept]
        except Refused as why:
            for name, zero in zip(names, zeros, strict=True):
                if zero:
                    result.left_dense.append({"layer": name, "zero_channels": len(zero), "reason": str(why)})
            continue
        edits += planned
        attrs.update(groups)
        for name, zero in zip(names, zeros, strict=True):
            result.pruned.append(
                {"layer": name, "channels": space.channels, "removed": len(removed), "group": names}
            )
            if len(zero) > len(removed):
                result.notes.append(
                    f"{name}: {len(zero) - len(removed)} of its zero channels kept (zero in only some of the group "
                    f"{names}, or carrying a constant that cannot be folded)"
                )
    _apply(model, facts, edits, attrs)
    return result


def _plan_largest(
    facts: GraphFacts, space: Space, sid: int, tensors: dict[str, tuple[int, int, int]], removed: np.ndarray
) -> tuple[list[Edit], dict[int, int], np.ndarray, list[str]]:
    """`_plan` for `removed`, less the channels whose constant cannot be folded (each time noted)."""
    kept: list[str] = []
    while True:
        keep = np.setdiff1d(np.arange(space.channels), removed)
        try:
            edits, groups = _plan(facts, space, sid, tensors, removed, keep)
            return edits, groups, removed, kept
        except Refused as why:
            if why.channels is None or not 0 < len(why.channels) < len(removed):
                raise
            kept.append(f"{len(why.channels)} zero channel(s) kept because {why}")
            removed = np.setdiff1d(removed, why.channels)


def _take(axis: int, keep: np.ndarray) -> Callable[[np.ndarray | None], np.ndarray]:
    def slice_(value: np.ndarray | None) -> np.ndarray:
        assert value is not None
        return np.take(value, keep, axis=axis)

    return slice_


def _slice_operand(
    value: np.ndarray, axis: int, channels: int, keep: np.ndarray
) -> Callable[..., np.ndarray]:
    pos = value.ndim + axis
    if pos < 0 or value.shape[pos] != channels:
        return lambda current: current  # a scalar or broadcast operand stays
    return _take(pos, keep)


def _plan(
    facts: GraphFacts,
    space: Space,
    sid: int,
    tensors: dict[str, tuple[int, int, int]],
    removed: np.ndarray,
    keep: np.ndarray,
) -> tuple[list[Edit], dict[int, int]]:
    """The edits removing `removed` from one space, or Refused."""
    nodes = facts.model.graph.node
    n = space.channels
    edits: list[Edit] = []
    groups: dict[int, int] = {}
    carried: dict[str, np.ndarray] = {}  # tensor → the constant each removed channel carries

    def mine(name: str) -> bool:
        return name in tensors and tensors[name][0] == sid

    consumers = dict(space.consumers)
    for index in sorted({*space.producers, *space.passes, *consumers}):
        node = nodes[index]
        where = label(node, index)
        inputs = list(node.input)
        bad = [name for name in inputs if name in carried and not np.all(np.isfinite(carried[name]))]
        if bad:  # e.g. Div(1, x) of a zero channel: nothing finite to fold
            infinite = carried[bad[0]]
            raise Refused(
                f"the removed channels carry {show(infinite)} into {where}", removed[~np.isfinite(infinite)]
            )
        if index in consumers:
            block = tensors[inputs[0]][2]
            features = (removed[:, None] * block + np.arange(block)).reshape(-1)
            kept = (keep[:, None] * block + np.arange(block)).reshape(-1)
            _consume(
                facts, index, consumers[index], np.repeat(carried[inputs[0]], block), features, kept, edits
            )
        if index in space.producers:
            carried[node.output[0]] = _produce(facts, index, removed, keep, edits)
            continue
        if index not in space.passes:
            continue
        data = [name for name in inputs if mine(name)]
        x = carried[data[0]]
        axis = tensors[data[0]][1]
        if node.op_type == "BatchNormalization":
            scale, bias, mean, var = (facts.const(inputs[i]) for i in range(1, 5))
            if scale is None or bias is None or mean is None or var is None:
                raise Refused(f"{where} has parameters computed at run time")
            eps = attr(node, "epsilon", 1e-5)
            carried[node.output[0]] = (x - mean[removed]) / np.sqrt(var[removed] + eps) * scale[
                removed
            ] + bias[removed]
            edits += [(1, index, pos, _take(0, keep)) for pos in range(1, 5)]
        elif node.op_type == "Conv":  # depthwise: its channels go with the group's
            weight = facts.const(inputs[1])
            assert weight is not None
            if padded(node) and np.any(x != 0):
                raise Refused(
                    f"{where} pads its input, and the removed channels carry {show(x)} there, not 0"
                )
            bias = facts.const(inputs[2]) if len(inputs) > 2 and inputs[2] else np.zeros(n)
            if bias is None:
                raise Refused(f"{where} has a bias computed at run time")
            carried[node.output[0]] = bias[removed] + x * weight[removed].reshape(len(removed), -1).sum(
                axis=1
            )
            edits.append((1, index, 1, _take(0, keep)))
            if len(inputs) > 2 and inputs[2]:
                edits.append((1, index, 2, _take(0, keep)))
            groups[index] = len(keep)
        elif node.op_type == "AveragePool" and padded(node) and attr(node, "count_include_pad", 0):
            if np.any(x != 0):
                raise Refused(
                    f"{where} averages zero padding with the removed channels' constant {show(x)}",
                    removed[x != 0],
                )
            carried[node.output[0]] = x
        elif node.op_type == "Pad":  # zero padding of the spatial axes (pruned_graph._pads_around_channels)
            if np.any(x != 0):
                raise Refused(
                    f"{where} pads the map with 0 while the removed channels carry {show(x)}",
                    removed[x != 0],
                )
            carried[node.output[0]] = x
        elif node.op_type == "Reshape":  # a flatten (pruned_graph._flattened_block): C·H·W shrinks
            target = facts.const(inputs[1])
            assert target is not None
            if int(target.reshape(-1)[1]) != -1:
                edits.append((1, index, 1, _reshape_to(target, len(keep) * tensors[node.output[0]][2])))
            carried[node.output[0]] = x
        elif node.op_type in BINARY or node.op_type == "Clip":
            values: list[np.ndarray] = []
            for pos, name in enumerate(inputs):
                if not name:
                    continue
                if mine(name):
                    values.append(carried[name])
                    continue
                value = facts.const(name)
                if value is None:
                    raise Refused(f"{where} reads {name!r}, computed outside the channels")
                values.append(
                    operand_values(value, axis, n, removed, where) if node.op_type != "Clip" else value
                )
                if value.size > 1:
                    edits.append((1, index, pos, _slice_operand(value, axis, n, keep)))
            carried[node.output[0]] = (
                unary(node, values[0], values[1:]) if node.op_type == "Clip" else binary(node.op_type, values)
            )
        else:
            carried[node.output[0]] = unary(node, x, [])
    return edits, groups


def _reshape_to(target: np.ndarray, features: int) -> Callable[[np.ndarray | None], np.ndarray]:
    return lambda _: np.array([target.reshape(-1)[0], features], dtype=target.dtype)


def _produce(
    facts: GraphFacts, index: int, removed: np.ndarray, keep: np.ndarray, edits: list[Edit]
) -> np.ndarray:
    """Edits slicing a producer's output channels; the constant its removed channels output."""
    node = facts.model.graph.node[index]
    inputs = list(node.input)
    where = label(node, index)
    if node.op_type == "Conv":
        edits.append((1, index, 1, _take(0, keep)))
        out_axis = 0
    elif node.op_type == "Gemm":
        out_axis = 0 if attr(node, "transB", 0) else 1
        edits.append((1, index, 1, _take(out_axis, keep)))
    else:
        edits.append((1, index, 1, _take(1, keep)))
        return np.zeros(len(removed))
    if len(inputs) < 3 or not inputs[2]:
        return np.zeros(len(removed))
    bias = facts.const(inputs[2])
    channels = len(keep) + len(removed)
    if bias is None:
        raise Refused(f"{where} has a bias computed at run time")
    if bias.size == 1:
        value = np.full(len(removed), float(bias.reshape(())))
    elif bias.size == channels:
        value = bias.reshape(-1)[removed].astype(np.float64)
        edits.append((1, index, 2, _take(-1, keep)))
    else:
        raise Refused(f"{where} adds a bias of shape {list(bias.shape)}, not one value per channel")
    beta = attr(node, "beta", 1.0) if node.op_type == "Gemm" else 1.0
    return np.asarray(value * beta)


def _consume(
    facts: GraphFacts,
    index: int,
    kind: str,
    carried: np.ndarray,
    removed: np.ndarray,
    keep: np.ndarray,
    edits: list[Edit],
) -> None:
    """Edits slicing a consumer's input channels, folding a non-zero constant into its bias."""
    node = facts.model.graph.node[index]
    where = label(node, index)
    weight = facts.const(node.input[1])
    assert weight is not None
    nonzero = bool(np.any(carried != 0))
    if kind == "conv":
        edits.append((0, index, 1, _take(1, keep)))
        if nonzero and padded(node):
            raise Refused(
                f"the removed channels carry the constant {show(carried)} into {where}, which zero-pads its "
                "input: removing them would change its border outputs",
                removed[carried != 0],
            )
        fold = np.tensordot(
            weight[:, removed].reshape(weight.shape[0], len(removed), -1).sum(axis=2), carried, 1
        )
    elif kind == "gemm":
        rows = weight.T if attr(node, "transB", 0) else weight
        edits.append((0, index, 1, _take(1 if attr(node, "transB", 0) else 0, keep)))
        beta = attr(node, "beta", 1.0)
        if nonzero and beta == 0:
            raise Refused(
                f"{where} has beta 0: no bias to fold the removed channels' constant into",
                removed[carried != 0],
            )
        fold = attr(node, "alpha", 1.0) * (carried @ rows[removed]) / (beta or 1.0)
    else:
        if nonzero:
            raise Refused(
                f"the removed channels carry the constant {show(carried)} into {where}, a MatMul with no bias",
                removed[carried != 0],
            )
        edits.append((0, index, 1, _take(0, keep)))
        return
    if not nonzero:
        return
    size = len(fold)
    bias = facts.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if bias is not None and bias.size not in (1, size):
        raise Refused(f"{where} has a bias of shape {list(bias.shape)}")

    def folded(current: np.ndarray | None) -> np.ndarray:
        base = (
            np.zeros(size, np.float32) if current is None else np.broadcast_to(current.reshape(-1), (size,))
        )
        return (base.astype(np.float64) + fold).astype(np.float32)

    edits.append((0, index, 2, folded))


def _apply(model: onnx.ModelProto, facts: GraphFacts, edits: list[Edit], groups: dict[int, int]) -> None:
    from onnx import helper, numpy_helper

    from worker.engine.sweep.export_onnx import prune_dead

    graph = model.graph
    current: dict[tuple[int, int], np.ndarray | None] = {}
    for _, index, pos, change in sorted(edits, key=lambda e: e[0]):
        node = graph.node[index]
        key = (index, pos)
        if key not in current:
            name = node.input[pos] if pos < len(node.input) else ""
            current[key] = facts.const(name) if name else None
        current[key] = change(current[key])
    for (index, pos), value in current.items():
        node = graph.node[index]
        assert value is not None
        base = node.input[pos] if pos < len(node.input) and node.input[pos] else f"{node.name or index}_bias"
        name = f"{base}__pruned{index}_{pos}"
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        while len(node.input) <= pos:
            node.input.append("")
        node.input[pos] = name
    for index, group in groups.items():
        node = graph.node[index]
        for attribute in node.attribute:
            if attribute.name == "group":
                attribute.CopyFrom(helper.make_attribute("group", group))
    if current:
        del graph.value_info[:]  # inferred shapes of the old channel counts
        before = {init.name for init in graph.initializer}
        prune_dead(model)
        gone = before - {init.name for init in graph.initializer}
        for graph_input in [i for i in graph.input if i.name in gone]:
            graph.input.remove(graph_input)
