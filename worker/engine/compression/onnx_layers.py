"""The compressible layers of an ONNX graph (see `onnx_backend`'s docstring for what a layer is): the
weight-consuming nodes, grouped by the torch module scope the exporter recorded (else by node), their
weight and bias tensors (initializers, or constant sub-graphs evaluated once with onnx's reference
evaluator), and the outputs that leave each layer."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression.layers import BiasSpec, ChannelGroup, WeightSpec
from worker.engine.errors import EngineError

if TYPE_CHECKING:
    import onnx

_RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_CALL_SUFFIX = re.compile(r"@\d+$")
_NONDETERMINISTIC = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}


@dataclass
class OnnxLayer:
    """A layer found in the graph: its weight-consuming nodes and the nodes of its torch module scope."""

    name: str
    type: str
    nodes: list[int]
    scope_nodes: set[int]
    weights: list[WeightSpec] = field(default_factory=list)
    biases: list[BiasSpec] = field(default_factory=list)
    groups: list[ChannelGroup] = field(default_factory=list)
    output_channel_axis: int = -1


class OnnxLayerFinder:
    """Finds the layers of one ONNX graph; `values` / `tensors` hold the constant arrays it evaluated
    and where each weight / bias tensor lies in them."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graph = model.graph
        self.inits = {init.name: init for init in graph.initializer}
        self.producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
        self.consumers: dict[str, list[int]] = {}
        for i, node in enumerate(graph.node):
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(i)
        self.constants = self._constant_values()
        self.values: dict[str, np.ndarray] = {}
        self.tensors: dict[str, tuple[str, tuple[Any, ...]]] = {}
        """key → (value name, index into that value) of every weight / bias tensor."""

    def _constant_values(self) -> set[str]:
        """Names of values that do not depend on graph inputs (initializers and what is computed from them)."""
        graph = self.model.graph
        constants = set(self.inits)
        for node in graph.node:
            if node.op_type in _NONDETERMINISTIC or any(a.type in (5, 10) for a in node.attribute):
                continue  # 5/10: GRAPH / GRAPHS attributes (subgraphs may read outer values)
            if all((not name) or name in constants for name in node.input):
                constants.update(out for out in node.output if out)
        return constants

    def _is_const(self, name: str) -> bool:
        return bool(name) and name in self.constants

    def _scope(self, index: int) -> tuple[str | None, str | None]:
        """(module path, module class name) recorded by the torch exporter, if any."""
        node = self.model.graph.node[index]
        props = {p.key: p.value for p in node.metadata_props}
        scopes_text = props.get("pkg.torch.onnx.name_scopes")
        if not scopes_text:
            return None, None
        try:
            scopes = [str(s) for s in ast.literal_eval(scopes_text)]
            classes = [str(s) for s in ast.literal_eval(props.get("pkg.torch.onnx.class_hierarchy", "[]"))]
        except (ValueError, SyntaxError):
            return None, None
        parts = [_CALL_SUFFIX.sub("", s) for s in scopes[1:-1] if s]
        if not parts:
            return None, None
        nested = all(b.startswith(a + ".") for a, b in itertools.pairwise(parts))
        name = parts[-1] if nested and len(parts) > 1 else ".".join(parts)
        type_name = classes[-2].rsplit(".", 1)[-1] if len(classes) >= 2 else None
        return name, type_name

    def _fallback_name(self, index: int, weight_value: str) -> str:
        node = self.model.graph.node[index]
        if node.name.startswith("/") and node.name.count("/") >= 2:
            return ".".join(part for part in node.name.strip("/").split("/")[:-1] if part)
        if weight_value in self.inits and "." in weight_value:
            return weight_value.rsplit(".", 1)[0]
        return node.name or f"{node.op_type}_{index}"

    def _weight_uses(self, index: int) -> list[tuple[int, str]] | None:
        """(input position, kind) of the node's constant weights, or None when it is not compressible."""
        node = self.model.graph.node[index]
        inputs = list(node.input)

        def const(pos: int) -> bool:
            return len(inputs) > pos and self._is_const(inputs[pos])

        if node.domain not in ("", "ai.onnx"):
            return None
        if node.op_type == "Conv" and const(1):
            return [(1, "conv")]
        if node.op_type == "Gemm" and const(1):
            return [(1, "gemm")]
        if node.op_type == "MatMul" and const(1) and not const(0):
            return [(1, "matmul")]
        if node.op_type in _RNN_GATES and const(1) and const(2):
            return [(1, "rnn"), (2, "rnn")]
        if node.op_type == "Gather" and const(0) and not const(1) and _attr(node, "axis", 0) == 0:
            return [(0, "embedding")]
        return None

    def discover(self) -> list[OnnxLayer]:
        graph = self.model.graph
        layers: dict[str, OnnxLayer] = {}
        scope_of: dict[int, str | None] = {i: self._scope(i)[0] for i in range(len(graph.node))}
        candidates = [(i, uses) for i in range(len(graph.node)) if (uses := self._weight_uses(i))]
        self.evaluate([graph.node[i].input[pos] for i, uses in candidates for pos, _ in uses])
        for index, uses in candidates:
            node = graph.node[index]
            scope, type_name = self._scope(index)
            name = scope or self._fallback_name(index, node.input[uses[0][0]])
            if uses[0][1] == "embedding" and self.values[node.input[0]].ndim != 2:
                continue
            if uses[0][1] == "matmul" and self.values[node.input[1]].ndim != 2:
                continue
            layer = layers.get(name)
            if layer is None:
                scope_nodes = {i for i, s in scope_of.items() if s == name} if scope else {index}
                layer = layers[name] = OnnxLayer(name, type_name or node.op_type, [], scope_nodes)
            elif type_name is None and node.op_type not in layer.type.split("+"):
                layer.type += f"+{node.op_type}"
            layer.nodes.append(index)
            layer.scope_nodes.add(index)
            self._add_tensors(layer, index, uses)
        return list(layers.values())

    def _tensor(self, value: str, index: tuple[Any, ...], suffix: str = "") -> str:
        key = value + suffix
        self.tensors[key] = (value, index)
        return key

    def _add_tensors(self, layer: OnnxLayer, index: int, uses: list[tuple[int, str]]) -> None:
        node = self.model.graph.node[index]
        inputs = list(node.input)
        kind = uses[0][1]

        def shape(value: str) -> tuple[int, ...]:
            return tuple(int(d) for d in self.values[value].shape)

        def maybe_bias(pos: int, size: int) -> BiasSpec | None:
            if len(inputs) > pos and self._is_const(inputs[pos]):
                self.evaluate([inputs[pos]])
                if shape(inputs[pos]) == (size,):
                    return BiasSpec(self._tensor(inputs[pos], ()), inputs[pos], (size,))
            return None

        if kind in ("conv", "gemm", "matmul"):
            value = inputs[1]
            axis = 0 if kind == "conv" or (kind == "gemm" and _attr(node, "transB", 0)) else 1
            w = WeightSpec(self._tensor(value, ()), value, shape(value), quant_axis=axis, prune_axis=axis)
            out = w.shape[axis]
            b = maybe_bias(2, out) if kind != "matmul" else self._matmul_bias(layer, index, out)
            layer.weights.append(w)
            if b:
                layer.biases.append(b)
            layer.groups.append(ChannelGroup((w.key,), (b.key,) if b else ()))
            layer.output_channel_axis = 1 if kind == "conv" else -1
        elif kind == "embedding":
            value = inputs[0]
            w = WeightSpec(self._tensor(value, ()), value, shape(value), quant_axis=0, prune_axis=1)
            layer.weights.append(w)
            layer.groups.append(ChannelGroup((w.key,)))
        elif kind == "rnn":
            gates = _RNN_GATES[node.op_type]
            w_value, r_value = inputs[1], inputs[2]
            directions, rows = shape(w_value)[0], shape(w_value)[1]
            b_value = inputs[3] if len(inputs) > 3 and self._is_const(inputs[3]) else None
            if b_value:
                self.evaluate([b_value])
            for d in range(directions):
                tag = "" if d == 0 else "_reverse"
                w = WeightSpec(
                    self._tensor(w_value, (d,), f"[{d}]"), f"{w_value}[{d}]", shape(w_value)[1:], gates=gates
                )
                r = WeightSpec(
                    self._tensor(r_value, (d,), f"[{d}]"), f"{r_value}[{d}]", shape(r_value)[1:], gates=gates
                )
                layer.weights += [w, r]
                bias_keys: list[str] = []
                if b_value:
                    for half, label in ((0, "W"), (1, "R")):
                        sl = (d, slice(half * rows, (half + 1) * rows))
                        key = self._tensor(b_value, sl, f"[{d},{label}]")
                        layer.biases.append(BiasSpec(key, f"{b_value}[{d},{label}b]{tag}", (rows,), gates))
                        bias_keys.append(key)
                layer.groups.append(ChannelGroup((w.key, r.key), tuple(bias_keys)))
            if directions > 1:  # forward direction last: it holds output channels 0..H-1
                layer.groups.append(layer.groups.pop(-directions))

    def _matmul_bias(self, layer: OnnxLayer, index: int, size: int) -> BiasSpec | None:
        """The constant operand of an Add that directly follows a MatMul (Linear exported as MatMul + Add)."""
        out = self.model.graph.node[index].output[0]
        for consumer in self.consumers.get(out, []):
            node = self.model.graph.node[consumer]
            if node.op_type != "Add":
                continue
            other = next((name for name in node.input if name != out), "")
            if self._is_const(other):
                self.evaluate([other])
                if tuple(self.values[other].shape) == (size,):
                    layer.scope_nodes.add(consumer)
                    return BiasSpec(self._tensor(other, ()), other, (size,))
        return None

    def evaluate(self, values: Sequence[str]) -> None:
        """Compute constant values (initializers are read, constant sub-graphs evaluated once)."""
        from onnx import numpy_helper

        missing = [v for v in dict.fromkeys(values) if v and v not in self.values]
        for name in [v for v in missing if v in self.inits]:
            self.values[name] = numpy_helper.to_array(self.inits[name])
        folded = [v for v in missing if v not in self.inits]
        if folded:
            self.values.update(self._fold(folded))

    def _fold(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        import onnx
        from onnx.reference import ReferenceEvaluator

        graph = self.model.graph
        needed: set[int] = set()
        stack = [self.producer[name] for name in names]
        while stack:
            index = stack.pop()
            if index in needed:
                continue
            needed.add(index)
            stack.extend(self.producer[i] for i in graph.node[index].input if i and i in self.producer)
        nodes = [graph.node[i] for i in sorted(needed)]
        used = {i for node in nodes for i in node.input if i}
        sub = onnx.helper.make_graph(
            nodes,
            "kneeboard_fold",
            [],
            [onnx.ValueInfoProto(name=name) for name in names],
            initializer=[init for name, init in self.inits.items() if name in used],
        )
        folding = onnx.helper.make_model(sub, opset_imports=list(self.model.opset_import))
        try:
            results = ReferenceEvaluator(folding).run(None, {})
        except Exception as exc:  # an op the reference evaluator lacks: report which weights
            raise EngineError(
                f"could not evaluate the constant weights {list(names)} of the ONNX graph: {exc}"
            ) from exc
        return {name: np.asarray(value) for name, value in zip(names, results, strict=True)}

    def layer_outputs(self, layer: OnnxLayer) -> list[str]:
        """Outputs of the layer's nodes that leave the layer (used outside it or graph outputs),
        excluding constants."""
        graph = self.model.graph
        graph_outputs = {o.name for o in graph.output}
        found = []
        for index in sorted(layer.scope_nodes):
            for out in graph.node[index].output:
                if not out or self._is_const(out):
                    continue
                outside = any(c not in layer.scope_nodes for c in self.consumers.get(out, []))
                if outside or out in graph_outputs:
                    found.append(out)
        return found


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    from onnx import helper

    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default
