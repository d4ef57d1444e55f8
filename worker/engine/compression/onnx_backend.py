"""Compression of ONNX models by editing the graph: new weight initializers, fake-quant nodes on outputs.

A layer is a weight-consuming node (Conv, Gemm, MatMul with a constant operand, LSTM / GRU / RNN,
Gather on a constant 2-D table = embedding), grouped by the torch module it came from when the
exporter recorded it (node metadata "pkg.torch.onnx.name_scopes", so a torch model and its ONNX export
get the same layer names), else by node. A weight is the value the node consumes: an initializer, or a
constant sub-graph (Transpose / Slice / Concat... of initializers, as the dynamo exporter writes LSTM
weights) evaluated once with onnx's reference evaluator. A compressed weight becomes an initializer fed
to the node directly; initializers used as is are replaced in place, so a tensor shared by two layers is
compressed once. Outputs are transformed with standard ops inserted after the layer: fake quantization
as Mul(1/scale) → Round → Add(zero) → Clip → Sub(zero) → Mul(scale) (torch's fake-quant formula), casts
as Cast(fp16|bf16) → Cast(float). Each variant runs in its own onnxruntime session.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from worker.engine.compression import ops
from worker.engine.compression.layers import BiasSpec, ChannelGroup, LayerSpec, WeightSpec, finish_layers
from worker.engine.compression.model import (
    Chains,
    CompressibleModel,
    Feeds,
    batches,
    digest_arrays,
)
from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.loaders import OnnxRunner
from worker.engine.types import Runner, TensorSpec

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
class _Use:
    """How a layer's node consumes one of its tensors."""

    node: int
    position: int
    value: str


@dataclass
class _Layer:
    name: str
    type: str
    nodes: list[int]
    scope_nodes: set[int]
    weights: list[WeightSpec] = field(default_factory=list)
    biases: list[BiasSpec] = field(default_factory=list)
    groups: list[ChannelGroup] = field(default_factory=list)
    output_channel_axis: int = -1


class OnnxCompressible(CompressibleModel):
    """An ONNX model (weights in memory) as a `CompressibleModel`."""

    backend = "onnx"

    def __init__(self, model: onnx.ModelProto, *, intra_op_threads: int | None = None) -> None:
        self.model = model
        self.notes: list[str] = []
        self._threads = intra_op_threads
        graph = model.graph
        self._inits = {init.name: init for init in graph.initializer}
        self._producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
        self._consumers: dict[str, list[int]] = {}
        for i, node in enumerate(graph.node):
            for name in node.input:
                if name:
                    self._consumers.setdefault(name, []).append(i)
        self._constants = self._constant_values()
        self._values: dict[str, np.ndarray] = {}
        self._tensors: dict[str, tuple[str, tuple[Any, ...]]] = {}
        """key → (value name, index into that value) of every weight / bias tensor."""
        raw = self._discover()
        self._evaluate([v for v, _ in self._tensors.values()])
        self._raw = {layer.name: layer for layer in raw}
        self._layers = finish_layers(
            [
                LayerSpec(
                    name=layer.name,
                    type=layer.type,
                    weights=layer.weights,
                    biases=layer.biases,
                    channel_groups=layer.groups,
                    output_channel_axis=layer.output_channel_axis,
                )
                for layer in raw
            ]
        )
        self._outputs_of = {layer.name: self._layer_outputs(layer) for layer in raw}
        self._golden = self._session(model.SerializeToString())
        self._augmented: OnnxRunner | None = None
        self._prepared = False

    @classmethod
    def from_path(cls, path: Path, **kwargs: Any) -> OnnxCompressible:
        import onnx

        try:
            model = onnx.load(str(path), load_external_data=True)
        except Exception as exc:  # protobuf decode errors, missing external data...
            raise ModelLoadError(f"onnx could not load {Path(path).name}: {exc}") from exc
        return cls(model, **kwargs)

    # ---------------------------------------------------------------------------------- discovery

    def _constant_values(self) -> set[str]:
        """Names of values that do not depend on graph inputs (initializers and what is computed from them)."""
        graph = self.model.graph
        constants = set(self._inits)
        for node in graph.node:
            if node.op_type in _NONDETERMINISTIC or any(a.type in (5, 10) for a in node.attribute):
                continue  # 5/10: GRAPH / GRAPHS attributes (subgraphs may read outer values)
            if all((not name) or name in constants for name in node.input):
                constants.update(out for out in node.output if out)
        return constants

    def _is_const(self, name: str) -> bool:
        return bool(name) and name in self._constants

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
        if weight_value in self._inits and "." in weight_value:
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

    def _discover(self) -> list[_Layer]:
        graph = self.model.graph
        layers: dict[str, _Layer] = {}
        scope_of: dict[int, str | None] = {i: self._scope(i)[0] for i in range(len(graph.node))}
        candidates = [(i, uses) for i in range(len(graph.node)) if (uses := self._weight_uses(i))]
        self._evaluate([graph.node[i].input[pos] for i, uses in candidates for pos, _ in uses])
        for index, uses in candidates:
            node = graph.node[index]
            scope, type_name = self._scope(index)
            name = scope or self._fallback_name(index, node.input[uses[0][0]])
            if uses[0][1] == "embedding" and self._values[node.input[0]].ndim != 2:
                continue
            if uses[0][1] == "matmul" and self._values[node.input[1]].ndim != 2:
                continue
            layer = layers.get(name)
            if layer is None:
                scope_nodes = {i for i, s in scope_of.items() if s == name} if scope else {index}
                layer = layers[name] = _Layer(name, type_name or node.op_type, [], scope_nodes)
            elif type_name is None and node.op_type not in layer.type.split("+"):
                layer.type += f"+{node.op_type}"
            layer.nodes.append(index)
            layer.scope_nodes.add(index)
            self._add_tensors(layer, index, uses)
        return list(layers.values())

    def _tensor(self, value: str, index: tuple[Any, ...], suffix: str = "") -> str:
        key = value + suffix
        self._tensors[key] = (value, index)
        return key

    def _add_tensors(self, layer: _Layer, index: int, uses: list[tuple[int, str]]) -> None:
        node = self.model.graph.node[index]
        inputs = list(node.input)
        kind = uses[0][1]

        def shape(value: str) -> tuple[int, ...]:
            return tuple(int(d) for d in self._values[value].shape)

        def maybe_bias(pos: int, size: int) -> BiasSpec | None:
            if len(inputs) > pos and self._is_const(inputs[pos]):
                self._evaluate([inputs[pos]])
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
                self._evaluate([b_value])
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

    def _matmul_bias(self, layer: _Layer, index: int, size: int) -> BiasSpec | None:
        """The constant operand of an Add that directly follows a MatMul (Linear exported as MatMul + Add)."""
        out = self.model.graph.node[index].output[0]
        for consumer in self._consumers.get(out, []):
            node = self.model.graph.node[consumer]
            if node.op_type != "Add":
                continue
            other = next((name for name in node.input if name != out), "")
            if self._is_const(other):
                self._evaluate([other])
                if tuple(self._values[other].shape) == (size,):
                    layer.scope_nodes.add(consumer)
                    return BiasSpec(self._tensor(other, ()), other, (size,))
        return None

    def _evaluate(self, values: Sequence[str]) -> None:
        """Compute constant values (initializers are read, constant sub-graphs evaluated once)."""
        from onnx import numpy_helper

        missing = [v for v in dict.fromkeys(values) if v and v not in self._values]
        for name in [v for v in missing if v in self._inits]:
            self._values[name] = numpy_helper.to_array(self._inits[name])
        folded = [v for v in missing if v not in self._inits]
        if folded:
            self._values.update(self._fold(folded))

    def _fold(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        import onnx
        from onnx.reference import ReferenceEvaluator

        graph = self.model.graph
        needed: set[int] = set()
        stack = [self._producer[name] for name in names]
        while stack:
            index = stack.pop()
            if index in needed:
                continue
            needed.add(index)
            stack.extend(self._producer[i] for i in graph.node[index].input if i and i in self._producer)
        nodes = [graph.node[i] for i in sorted(needed)]
        used = {i for node in nodes for i in node.input if i}
        sub = onnx.helper.make_graph(
            nodes,
            "kneeboard_fold",
            [],
            [onnx.ValueInfoProto(name=name) for name in names],
            initializer=[init for name, init in self._inits.items() if name in used],
        )
        folding = onnx.helper.make_model(sub, opset_imports=list(self.model.opset_import))
        try:
            results = ReferenceEvaluator(folding).run(None, {})
        except Exception as exc:  # an op the reference evaluator lacks: report which weights
            raise EngineError(
                f"could not evaluate the constant weights {list(names)} of the ONNX graph: {exc}"
            ) from exc
        return {name: np.asarray(value) for name, value in zip(names, results, strict=True)}

    def _layer_outputs(self, layer: _Layer) -> list[str]:
        """Outputs of the layer's nodes that leave the layer (used outside it or graph outputs),
        excluding constants."""
        graph = self.model.graph
        graph_outputs = {o.name for o in graph.output}
        found = []
        for index in sorted(layer.scope_nodes):
            for out in graph.node[index].output:
                if not out or self._is_const(out):
                    continue
                outside = any(c not in layer.scope_nodes for c in self._consumers.get(out, []))
                if outside or out in graph_outputs:
                    found.append(out)
        return found

    # ---------------------------------------------------------------------------------- protocol

    @property
    def inputs(self) -> list[TensorSpec]:
        return self._golden.inputs

    @property
    def outputs(self) -> list[TensorSpec]:
        return self._golden.outputs

    def layers(self) -> list[LayerSpec]:
        return self._layers

    def read(self, key: str) -> torch.Tensor:
        value, index = self._tensors[key]
        array = self._values[value][index] if index else self._values[value]
        return torch.from_numpy(np.array(array, dtype=np.float32, copy=True))

    def output_keys(self, layer: str) -> list[str]:
        return list(self._outputs_of.get(layer, []))

    def run(self, feeds: Feeds) -> dict[str, np.ndarray]:
        return self._golden.run(feeds)

    def prepare(self, sample: Feeds) -> None:
        """Count MACs per layer (inspection's ONNX rules at the sample's shapes)."""
        if self._prepared:
            return
        self._prepared = True
        from worker.engine.inspection import _onnx_macs

        shapes = {
            spec.name: list(np.asarray(sample[spec.name]).shape)
            for spec in self.inputs
            if spec.name in sample
        }
        try:
            macs, notes = _onnx_macs(self.model, shapes)
        except Exception as exc:  # MACs are optional metadata
            self.notes.append(f"MACs not counted: {exc}")
            return
        self.notes.extend(notes)
        if macs is None:
            return
        for layer in self._layers:
            values = [macs[i] for i in self._raw[layer.name].scope_nodes]
            layer.macs = None if any(v is None for v in values) else sum(v for v in values if v is not None)

    def collect_stats(
        self, layers: Sequence[str], feeds: Feeds, batch_size: int, histogram: bool
    ) -> dict[tuple[str, str], ops.ActivationStats]:
        runner = self._augmented_runner()
        names = [(layer, key) for layer in layers for key in self.output_keys(layer)]
        stats = {pair: ops.ActivationStats() for pair in names}
        passes = [ops.ActivationStats.update_range] + (
            [ops.ActivationStats.update_histogram] if histogram else []
        )
        for update in passes:
            for batch in batches(feeds, batch_size):
                values = runner.run(batch)
                for layer, key in names:
                    array = values[key]
                    if np.issubdtype(array.dtype, np.floating):
                        update(stats[(layer, key)], array.astype(np.float32, copy=False))
        return stats

    def _augmented_runner(self) -> OnnxRunner:
        import onnx

        if self._augmented is None:
            augmented = onnx.ModelProto()
            augmented.CopyFrom(self.model)
            existing = {o.name for o in augmented.graph.output}
            wanted = dict.fromkeys(
                key for keys in self._outputs_of.values() for key in keys if key not in existing
            )
            augmented.graph.output.extend(onnx.ValueInfoProto(name=name) for name in wanted)
            self._augmented = self._session(augmented.SerializeToString())
        return self._augmented

    def _session(self, data: bytes) -> OnnxRunner:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if self._threads is not None:
            options.intra_op_num_threads = self._threads
        try:
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's pybind errors share no public base class
            raise EngineError(f"onnxruntime could not load the (compressed) ONNX model: {exc}") from exc
        return OnnxRunner(session)

    def build(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> onnx.ModelProto:
        """A copy of the model with `tensors` written and `chains` inserted after the layers' outputs."""
        import onnx
        from onnx import numpy_helper

        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        graph = model.graph
        arrays: dict[str, np.ndarray] = {}
        for key, tensor in tensors.items():
            value, index = self._tensors[key]
            if value not in arrays:
                arrays[value] = np.array(self._values[value], copy=True)
            target = arrays[value]
            if index:
                target[index] = tensor.numpy().astype(target.dtype)
            else:
                arrays[value] = tensor.numpy().astype(target.dtype).reshape(target.shape)
        inits = {init.name: init for init in graph.initializer}
        for value, array in arrays.items():
            if value in inits:
                inits[value].CopyFrom(numpy_helper.from_array(array, value))
                continue
            new_name = f"{value}__kneeboard"
            graph.initializer.append(numpy_helper.from_array(array, new_name))
            for consumer in self._consumers.get(value, []):
                node = graph.node[consumer]
                for pos, name in enumerate(node.input):
                    if name == value:
                        node.input[pos] = new_name
        if chains:
            _insert_chains(graph, chains)
        return model

    @contextmanager
    def session(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> Iterator[Runner]:
        if not tensors and not chains:
            yield self._golden
            return
        runner = self._session(self.build(tensors, chains).SerializeToString())
        try:
            yield runner
        finally:
            runner.close()

    def weights_digest(self) -> str:
        return digest_arrays([self._values[v] for v in sorted({v for v, _ in self._tensors.values()})])


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    from onnx import helper

    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def _insert_chains(graph: onnx.GraphProto, chains: Chains) -> None:
    """Rename each transformed output to <name>__raw at its producer and insert the chain's nodes
    right after the producer, ending in the original name (so consumers and graph outputs are unchanged)."""
    from onnx import TensorProto, helper, numpy_helper

    per_output = {key: chain for per_key in chains.values() for key, chain in per_key.items()}
    nodes = list(graph.node)
    del graph.node[:]
    counter = 0
    for node in nodes:
        renamed = []
        for pos, out in enumerate(node.output):
            if out in per_output:
                node.output[pos] = f"{out}__raw"
                renamed.append(out)
        graph.node.append(node)
        for out in renamed:
            current = f"{out}__raw"
            chain = per_output[out]
            for step, (kind, value) in enumerate(chain):
                last = step == len(chain) - 1
                target = out if last else f"{out}__kb{step}"
                prefix = f"kneeboard_{counter}"
                counter += 1
                if kind == "cast":
                    low = TensorProto.FLOAT16 if value == "fp16" else TensorProto.BFLOAT16
                    graph.node.append(helper.make_node("Cast", [current], [f"{prefix}_low"], to=low))
                    graph.node.append(
                        helper.make_node("Cast", [f"{prefix}_low"], [target], to=TensorProto.FLOAT)
                    )
                else:
                    q: ops.ActivationQParams = value
                    scale = np.float32(q.scale)
                    consts = {
                        "inv": np.float32(1.0) / scale,
                        "zero": np.float32(q.zero_point),
                        "lo": np.float32(0.0),
                        "hi": np.float32(q.qmax),
                        "scale": scale,
                    }
                    for label, number in consts.items():
                        graph.initializer.append(
                            numpy_helper.from_array(np.array(number, dtype=np.float32), f"{prefix}_{label}")
                        )
                    chain_nodes = [
                        ("Mul", [current, f"{prefix}_inv"], f"{prefix}_scaled"),
                        ("Round", [f"{prefix}_scaled"], f"{prefix}_rounded"),
                        ("Add", [f"{prefix}_rounded", f"{prefix}_zero"], f"{prefix}_shifted"),
                        ("Clip", [f"{prefix}_shifted", f"{prefix}_lo", f"{prefix}_hi"], f"{prefix}_clipped"),
                        ("Sub", [f"{prefix}_clipped", f"{prefix}_zero"], f"{prefix}_centred"),
                        ("Mul", [f"{prefix}_centred", f"{prefix}_scale"], target),
                    ]
                    for op, ins, result in chain_nodes:
                        graph.node.append(helper.make_node(op, ins, [result]))
                current = target
