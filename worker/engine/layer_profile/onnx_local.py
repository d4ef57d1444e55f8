"""Local values of ONNX layers: each layer's compressed nodes, run alone on the golden model's values.

The local value of a layer runs the compressed nodes that produce its tensor back to the nearest matched
tensors (e.g. DequantizeLinear -> QuantizeLinear -> Conv, with the weights' DequantizeLinear), with the
golden values of those tensors fed in; all layers' sub-graphs sit side by side in one extra model, run once
per batch. A layer's sub-graph includes the QuantizeLinear / DequantizeLinear of its own output, so even a
layer that only moves data (Reshape) shows the quantization noise of its output when fed the unquantized
golden values."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from worker.engine.layer_profile.accumulate import LayerPair
from worker.engine.layer_profile.bound_run import BoundRunner
from worker.engine.layer_profile.onnx_side import (
    NUMPY_OF_ORT,
    ORT_FLOAT_TYPES,
    OnnxSide,
    has_subgraph,
    ort_session,
)
from worker.engine.layer_profile.sides import Feeds

if TYPE_CHECKING:
    import onnx
    import onnxruntime

_LOCAL_PREFIX = "__kneeboard_local_{}__/"
_FAILED_NODE = re.compile(r"__kneeboard_local_(\d+)__/")


def _cluster(
    target: str, producers: Mapping[str, tuple[int, onnx.NodeProto]], stops: Collection[str]
) -> list[int]:
    """Indices (sorted) of the nodes that compute `target` back to the `stops`, graph inputs and
    initializers."""
    nodes: set[int] = set()
    seen: set[str] = set()
    stack = [target]
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        entry = producers.get(tensor)
        if entry is None or entry[0] in nodes:
            continue
        nodes.add(entry[0])
        stack.extend(name for name in entry[1].input if name and name not in stops)
    return sorted(nodes)


@dataclass
class LocalGraph:
    """The nodes of all local sub-graphs, renamed apart, and what the extra model reads and returns."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # golden name -> output of the extra model
    boundaries: dict[str, str] = field(default_factory=dict)  # compressed tensor fed -> golden name
    graph_inputs: set[str] = field(default_factory=set)
    skipped: dict[str, str] = field(default_factory=dict)  # golden name -> reason


def _copy_cluster(
    side: OnnxSide, indices: list[int], prefix: str, boundary: Mapping[str, str], local: LocalGraph
) -> None:
    """Append renamed copies of the nodes `indices`; record the boundary tensors and graph inputs read."""
    import onnx

    nodes = [side.model.graph.node[i] for i in indices]
    internal = {out for node in nodes for out in node.output if out}
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        del copy.input[:], copy.output[:]
        copy.input.extend(prefix + name if name in internal else name for name in node.input)
        copy.output.extend(prefix + name if name else name for name in node.output)
        local.nodes.append(copy)
        for name in node.input:
            if name in boundary and name not in internal:
                local.boundaries[name] = boundary[name]
            elif name in side.input_set:
                local.graph_inputs.add(name)


def _local_graph(side: OnnxSide, pairs: Sequence[LayerPair], left_out: Collection[str] = ()) -> LocalGraph:
    """Plan the local sub-graph of every pair but those whose golden name is in `left_out`: the compressed
    nodes from its tensor back to the tensors of the other pairs (a left-out pair's tensor is computed
    inside the sub-graphs that need it, not fed its golden value)."""
    boundary = {
        p.compressed: p.golden
        for p in pairs
        if p.compressed not in side.graph_inputs and p.golden not in left_out
    }
    local = LocalGraph()
    for index, pair in enumerate(pairs):
        if pair.golden in left_out:
            continue
        indices = _cluster(pair.compressed, side.producers, set(boundary) - {pair.compressed})
        if not indices:
            local.skipped[pair.golden] = "the compressed tensor is a model input"
            continue
        if any(has_subgraph(side.model.graph.node[i]) for i in indices):
            local.skipped[pair.golden] = (
                "the layer holds control flow (If/Loop/Scan), which is not re-run alone"
            )
            continue
        prefix = _LOCAL_PREFIX.format(index)
        _copy_cluster(side, indices, prefix, boundary, local)
        local.outputs[pair.golden] = prefix + pair.compressed
    return local


def failing_layer(message: str, pairs: Sequence[LayerPair]) -> str | None:
    """The golden name of the pair whose sub-graph a run failure names (onnxruntime's message gives the
    failing node's name, which carries the pair's prefix), None when it names none."""
    found = _FAILED_NODE.search(message)
    if found is None or int(found.group(1)) >= len(pairs):
        return None
    return pairs[int(found.group(1))].golden


class OnnxLocal:
    """Runs every layer's compressed sub-graph on golden activations, all in one extra ONNX model."""

    def __init__(
        self, side: OnnxSide, pairs: Sequence[LayerPair], workdir: Path, left_out: Collection[str] = ()
    ) -> None:
        self.pairs = list(pairs)
        self.left_out = set(left_out)
        self.plan = _local_graph(side, pairs, self.left_out)
        self._dtypes = {name: NUMPY_OF_ORT[side.types[name]] for name in self.plan.boundaries}
        self._inputs = sorted(self.plan.graph_inputs)
        self._side = side
        self._workdir = workdir
        self.session: onnxruntime.InferenceSession | None = None
        self._runner: BoundRunner | None = None
        if self.plan.outputs:  # a model without outputs would be refused
            self.session = ort_session(self._write(side, workdir / "local.onnx"), side.folder, side.threads)
            self._runner = BoundRunner(self.session, list(self.plan.outputs.values()))

    def without(self, golden_names: Collection[str]) -> OnnxLocal:
        """The same evaluator without these layers' sub-graphs, and without feeding their golden values
        (a layer whose sub-graph cannot run, or whose golden and compressed tensors differ in shape, must
        not cost every other layer its local value)."""
        self.session, self._runner = None, None  # free the old session before building the new one
        return OnnxLocal(self._side, self.pairs, self._workdir, self.left_out | set(golden_names))

    def _write(self, side: OnnxSide, target: Path) -> Path:
        """Save the compressed model with the planned nodes, inputs and outputs (and only the initializers
        they read) to `target`."""
        import onnx
        from onnx import helper

        model = onnx.ModelProto()
        model.CopyFrom(side.model)
        graph = model.graph
        inputs = [vi for vi in graph.input if vi.name in self.plan.graph_inputs]
        inputs += [
            helper.make_tensor_value_info(name, ORT_FLOAT_TYPES[side.types[name]], None)
            for name in self.plan.boundaries
        ]
        used = {name for node in self.plan.nodes for name in node.input}
        initializers = [init for init in graph.initializer if init.name in used]
        del graph.node[:], graph.input[:], graph.output[:], graph.value_info[:], graph.initializer[:]
        graph.initializer.extend(initializers)
        graph.node.extend(self.plan.nodes)
        graph.input.extend(inputs)
        graph.output.extend(onnx.ValueInfoProto(name=out) for out in self.plan.outputs.values())
        onnx.save(model, str(target))
        return target

    def run(self, feeds: Feeds, golden: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Local outputs by golden name for one batch; `golden` holds the golden activations. The arrays are
        buffers that the next run overwrites."""
        if self._runner is None:
            return {}
        bound = self._side.feeds(feeds)
        inputs = {name: bound[name] for name in self._inputs}
        inputs.update(
            {
                name: np.asarray(golden[g], dtype=self._dtypes[name])
                for name, g in self.plan.boundaries.items()
            }
        )
        values = self._runner.run(inputs)
        return {g: values[out] for g, out in self.plan.outputs.items()}
