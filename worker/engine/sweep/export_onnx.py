"""Export of an ONNX golden model compressed by a plan, and the graph surgery the exports share.

* `onnx_builder`: the very graph `compressed()` runs (same weights, same fake-quant nodes, same
  calibration statistics), so onnxruntime reproduces the point's fidelity figures.
* `int8_weights`: real-int8-weights, the simulated graph with its quantized weight initializers
  replaced by their integers and a DequantizeLinear node (bit-exact with the simulation).
* `prune_dead`: drop the nodes and initializers nothing uses once compressed weights replace them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from worker.engine.compression import Calibration, Config
from worker.engine.compression.layers import LayerSpec
from worker.engine.compression.model import resolve
from worker.engine.compression.ops import weight_qparams
from worker.engine.errors import EngineError
from worker.engine.sweep.export_common import Builder, default_opset
from worker.engine.sweep.runtime_forms import last_weight_quant

if TYPE_CHECKING:
    import onnx

    from worker.engine.compression.onnx_backend import OnnxCompressible


def onnx_builder(golden: OnnxCompressible, calibration: Calibration | None) -> Builder:
    """How to build the simulated ONNX graph of a plan for an ONNX golden model."""

    def build_onnx(plan: Mapping[str, Config]) -> onnx.ModelProto:
        outcome, chains = resolve(golden, plan, calibration)
        proto = golden.build(outcome.tensors, chains)
        if outcome.tensors:
            prune_dead(proto)
        return proto

    return build_onnx


_SLICE = re.compile(r"^(.*)\[(\d+)\]$")
"""Weight names of recurrent layers: one tensor per direction, "<value>[<direction>]"."""


def int8_weights(
    proto: onnx.ModelProto,
    layers: list[LayerSpec],
    read: Callable[[str], torch.Tensor],
    plan: Mapping[str, Config],
    notes: list[str],
) -> dict[str, Any]:
    """Replace each quantized weight initializer of `proto` (the simulated graph) by its integers and
    a DequantizeLinear node. The integers are round(w_final / scale) + zero point with the scale and
    zero point the simulation used (computed from the weight as it was before its last quantization
    stage), so DequantizeLinear gives back the simulated weight exactly. A weight is found by name
    (the initializer the simulation wrote, or the torch parameter name); one that is missing, has
    another shape, or does not dequantize exactly to its value in the graph (e.g. a batch norm was
    folded into it by the exporter) stays float32, and `notes` says so.

    A recurrent weight (directions × rows × columns, one simulated tensor per direction) becomes one
    DequantizeLinear too: per tensor with one scale per direction (axis 0), or per channel when there
    is a single direction; per channel with two directions would need blocked scales: left in float."""
    from onnx import helper, numpy_helper

    from worker.engine.compression.configs import Schedule
    from worker.engine.compression.layers import compress_tensors

    opset = default_opset(proto) or 0
    graph = proto.graph
    inits = {init.name: init for init in graph.initializer}
    claimed: set[str] = set()
    new_nodes: list[onnx.NodeProto] = []
    converted: list[str] = []
    left: list[str] = []
    for layer in layers:
        config = plan.get(layer.name)
        found = None if config is None else last_weight_quant(config)
        if config is None or found is None:
            continue
        index, wq = found
        prefix = tuple(config.stages[:index]) if isinstance(config, Schedule) else ()
        try:
            before = compress_tensors(layers, {layer.name: Schedule(prefix)}, read).tensors if prefix else {}
        except EngineError as exc:  # e.g. channels ranked on calibration data, which this pass does not hold
            notes.append(
                f"{layer.name}: its weights before quantization cannot be recomputed ({exc}); left in float"
            )
            left.extend(spec.name for spec in layer.weights)
            continue
        groups: dict[str, list[Any]] = {}
        for spec in layer.weights:
            if spec.key in claimed:
                continue
            claimed.add(spec.key)
            match = _SLICE.match(spec.name)
            value = match.group(1) if match and spec.key == spec.name else spec.name
            groups.setdefault(value, []).append(spec)
        for value, specs in groups.items():
            name = value if value in inits else f"{value}__kneeboard"
            if name not in inits:
                notes.append(
                    f"{layer.name}: weight {value} is not an initializer of the graph; left in float"
                )
                left.append(value)
                continue
            final = numpy_helper.to_array(inits[name]).astype(np.float32)
            sliced = len(specs) != 1 or specs[0].name != value
            expected = (len(specs), *specs[0].shape) if sliced else specs[0].shape
            if tuple(final.shape) != tuple(expected):
                notes.append(f"{layer.name}: {value} has another layout in the graph; left in float")
                left.append(value)
                continue
            if wq.group_size is not None:
                notes.append(
                    f"{layer.name}: {value} has group-wise scales (groups of {wq.group_size}), which need a "
                    "blocked DequantizeLinear (opset 21) or MatMulNBits, not written yet; left in float"
                )
                left.append(value)
                continue
            if sliced and wq.per_channel and len(specs) > 1:
                notes.append(
                    f"{layer.name}: {value} needs blocked scales (per channel, several directions); left in float"
                )
                left.append(value)
                continue
            qparams = [
                weight_qparams(
                    before.get(spec.key, read(spec.key)),
                    wq.bits,
                    wq.symmetric,
                    wq.per_channel,
                    spec.quant_axis,
                )
                for spec in specs
            ]
            qmin, qmax = qparams[0][2], qparams[0][3]
            if wq.per_channel:
                axis = specs[0].quant_axis % len(specs[0].shape) + (1 if sliced else 0)
                scale = qparams[0][0].numpy().astype(np.float32)
                zero = qparams[0][1].numpy().astype(np.int32)
            elif sliced:
                axis = 0
                scale = np.array([float(q[0]) for q in qparams], dtype=np.float32)
                zero = np.array([int(q[1]) for q in qparams], dtype=np.int32)
            else:
                axis = None
                scale = qparams[0][0].numpy().astype(np.float32).reshape(())
                zero = qparams[0][1].numpy().astype(np.int32).reshape(())
            if axis is not None and opset < 13:
                notes.append(f"{layer.name}: per-axis DequantizeLinear needs opset 13; {value} left in float")
                left.append(value)
                continue
            shape = [1] * final.ndim
            if axis is not None:
                shape[axis] = -1
            s_b, z_b = scale.reshape(shape), zero.reshape(shape)
            q = np.clip(np.round(final / s_b) + z_b, qmin, qmax)
            back = ((q.astype(np.int32) - z_b).astype(np.float32) * s_b).astype(np.float32)
            if not np.array_equal(back, final):
                diff = float(np.max(np.abs(back - final)))
                notes.append(
                    f"{layer.name}: {value} in the graph is not the quantized weight (max difference "
                    f"{diff:.3g}; e.g. a batch norm folded into it); left in float"
                )
                left.append(value)
                continue
            dtype = np.int8 if wq.symmetric else np.uint8
            q_name, s_name, z_name = f"{name}__int", f"{name}__scale", f"{name}__zero_point"
            graph.initializer.remove(inits[name])
            graph.initializer.extend(
                [
                    numpy_helper.from_array(q.astype(dtype), q_name),
                    numpy_helper.from_array(scale, s_name),
                    numpy_helper.from_array(zero.astype(dtype), z_name),
                ]
            )
            node = helper.make_node("DequantizeLinear", [q_name, s_name, z_name], [name], name=f"{name}__dq")
            if axis is not None:
                node.attribute.append(helper.make_attribute("axis", axis))
            new_nodes.append(node)
            for graph_input in list(graph.input):
                if graph_input.name == name:
                    graph.input.remove(graph_input)
            converted.append(value)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(new_nodes + nodes)
    return {"method": "int8 initializers + DequantizeLinear", "weights": converted, "left_float": left}


def prune_dead(proto: onnx.ModelProto) -> int:
    """Drop nodes whose outputs nothing uses and initializers no node uses (e.g. the constant
    sub-graph a recurrent weight was computed from, once the compressed weight replaces it); returns
    the number of initializers removed."""
    graph = proto.graph

    def used_by(nodes: Any) -> set[str]:
        names: set[str] = set()
        for node in nodes:
            names.update(i for i in node.input if i)
            for attribute in node.attribute:  # sub-graphs may read outer values
                subgraphs = [attribute.g] if attribute.type == 5 else list(attribute.graphs)
                for sub in subgraphs:
                    names |= used_by(sub.node)
        return names

    outputs = {o.name for o in graph.output}
    while True:
        used = used_by(graph.node) | outputs
        dead = [node for node in graph.node if not any(o in used for o in node.output if o)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    used = used_by(graph.node) | outputs
    unused = [init for init in graph.initializer if init.name not in used]
    for init in unused:
        graph.initializer.remove(init)
    return len(unused)
