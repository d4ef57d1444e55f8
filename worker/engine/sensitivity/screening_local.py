"""Estimated damage of every layer × config of an ONNX model from one pass per config (screening).

Each layer's compressed weights are run through a copy of the few nodes after it (its *segment*), inside
one probe model that also computes the golden graph: the segment starts at the nodes that read the
layer's changed weights and follows the single consumer of its output until the output is joined by
another activation (a residual Add, attention's Q·Kᵀ), is read by several nodes, is a graph output, or
`SEGMENT_NODES` nodes were copied. The segment's end tensor z and its perturbed copy z' give the local
error ‖z' − z‖² / ‖z‖² (a local SQNR). Downstream of the join the noise is assumed to keep its share of
the joined tensor: the estimate is that local SQNR taken as the output's.

Why a segment rather than the layer's own output: on a residual MLP whose branches are scaled by 0.01-1
after their second Linear, the layer's own relative output error ranked layers with Spearman 0.06-0.11
against the exact scan (the branch scale, which sets how much of the error reaches the stream, is
downstream of the layer); carrying the error to the residual Add takes the scale, the ReLU and the next
Linear into account. Copying the segments costs a few nodes per layer: the probe model is one pass of
the golden graph plus every segment, per config.

Weights only: activation fake-quant of a config (its output chains) is not probed, and a layer whose
weight is part of a larger value is estimated from the weight's own relative error (noted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from worker.engine.compression.configs import Config
from worker.engine.compression.layers import CompressionOutcome, compress_tensors
from worker.engine.compression.model import Calibration, Feeds, batches, importance_scores
from worker.engine.compression.onnx_backend import OnnxCompressible

SEGMENT_NODES = 8
"""Nodes copied per layer at most (a plain chain of Gemm + Relu would otherwise be copied to the end)."""


@dataclass(frozen=True)
class LocalError:
    """Local error of one layer × config: the relative error at its segment's end, as an SQNR (dB)."""

    local_sqnr_db: float
    from_data: bool
    """False: the weight's own relative error (no segment could be probed)."""


@dataclass
class _Segment:
    nodes: list[int]
    ends: list[str]


def _segments(model: OnnxCompressible, starts: dict[str, list[int]]) -> dict[str, _Segment]:
    graph = model.model.graph
    constants = {init.name for init in graph.initializer} | {
        out for node in graph.node if node.op_type == "Constant" for out in node.output
    }
    outputs = {o.name for o in graph.output}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        for name in dict.fromkeys(node.input):
            consumers.setdefault(name, []).append(i)
    found: dict[str, _Segment] = {}
    for layer, first in starts.items():
        if len(first) != 1:  # a weight read by several nodes: each node's own output is the end
            found[layer] = _Segment(first, [graph.node[i].output[0] for i in first])
            continue
        nodes = list(first)
        produced = set(graph.node[first[0]].output)
        tensor = graph.node[first[0]].output[0]
        while len(nodes) < SEGMENT_NODES and tensor not in outputs:
            readers = consumers.get(tensor, [])
            if len(readers) != 1:
                break
            node = graph.node[readers[0]]
            nodes.append(readers[0])
            produced |= set(node.output)
            tensor = node.output[0]
            if any(name and name not in constants and name not in produced for name in node.input):
                break  # joined by another activation
        found[layer] = _Segment(nodes, [tensor])
    return found


def local_errors(
    model: OnnxCompressible,
    feeds: Feeds,
    configs: Sequence[Config],
    layers: Sequence[str],
    calibration: Calibration,
    batch_size: int,
) -> dict[tuple[str, str], LocalError]:
    """Every layer × config's local error: one probe pass over `feeds` per config."""
    errors: dict[tuple[str, str], LocalError] = {}
    for config in configs:
        changes: dict[str, dict[str, np.ndarray]] = {}
        for layer in layers:
            outcome = _compress(model, layer, config, calibration)
            values: dict[str, np.ndarray] = {}
            whole = True
            for key, tensor in outcome.tensors.items():
                value, index = model.tensor_value(key)
                if index is not None:
                    whole = False
                    break
                values[value] = tensor.numpy()
            if whole:
                changes[layer] = values
            else:
                errors[(layer, config.id)] = _weight_error(model, layer, outcome.tensors)
        errors.update(_probe(model, feeds, config, changes, batch_size))
    return errors


def _compress(
    model: OnnxCompressible, layer: str, config: Config, calibration: Calibration
) -> CompressionOutcome:
    """The layer's compressed tensors, as `resolve` computes them, given only the layer and the layers it
    shares a tensor with: `resolve` hands `compress_tensors` every layer of the model, which costs O(layers)
    per cell (5.2 of 21 s screening a 501-layer MLP); activation chains are not probed anyway."""
    spec = model.layer(layer)
    plan = {layer: config}
    subset = [spec, *(model.layer(name) for name in spec.shared_with)]
    return compress_tensors(subset, plan, model.read, None, importance_scores(model, plan, calibration))


def _probe(
    model: OnnxCompressible,
    feeds: Feeds,
    config: Config,
    changes: dict[str, dict[str, np.ndarray]],
    batch_size: int,
) -> dict[tuple[str, str], LocalError]:
    import onnx
    from onnx import numpy_helper

    graph = model.model.graph
    readers: dict[str, set[int]] = {}
    for i, node in enumerate(graph.node):
        for name in node.input:
            readers.setdefault(name, set()).add(i)
    starts = {
        layer: sorted({i for value in values for i in readers.get(value, ())})
        for layer, values in changes.items()
        if values
    }
    segments = _segments(model, {layer: s for layer, s in starts.items() if s})
    probe = onnx.ModelProto()
    probe.CopyFrom(model.model)
    existing = {o.name for o in probe.graph.output}
    pairs: dict[str, list[tuple[str, str]]] = {}
    for number, (layer, segment) in enumerate(segments.items()):
        suffix = f"__screen{number}"
        renamed = {value: value + suffix for value in changes[layer]}
        for value, array in changes[layer].items():
            dtype = next(
                (
                    onnx.helper.tensor_dtype_to_np_dtype(i.data_type)
                    for i in graph.initializer
                    if i.name == value
                ),
                np.float32,
            )
            probe.graph.initializer.append(numpy_helper.from_array(array.astype(dtype), renamed[value]))
        for i in segment.nodes:
            node = onnx.NodeProto()
            node.CopyFrom(graph.node[i])
            node.name = node.name + suffix
            for pos, name in enumerate(node.input):
                node.input[pos] = renamed.get(name, name)
            for pos, name in enumerate(node.output):
                if name:
                    renamed[name] = name + suffix
                    node.output[pos] = name + suffix
            probe.graph.node.append(node)
        pairs[layer] = [(end, renamed[end]) for end in segment.ends]
        for end, copy in pairs[layer]:
            for name in (end, copy):
                if name not in existing:
                    probe.graph.output.append(onnx.ValueInfoProto(name=name))
                    existing.add(name)
    runner = model.open_session(probe.SerializeToString())
    sums = {layer: [0.0, 0.0] for layer in pairs}
    try:
        for batch in batches(feeds, batch_size):
            out = runner.run(batch)
            for layer, ends in pairs.items():
                for end, copy in ends:
                    golden = np.asarray(out[end], np.float64)
                    sums[layer][0] += float(np.sum(golden * golden))
                    sums[layer][1] += float(np.sum((np.asarray(out[copy], np.float64) - golden) ** 2))
    finally:
        runner.close()
    errors = {(layer, config.id): LocalError(_db(s, n), True) for layer, (s, n) in sums.items()}
    for layer in changes:  # nothing changed (e.g. already on the grid): the golden output
        errors.setdefault((layer, config.id), LocalError(math.inf, True))
    return errors


def _weight_error(model: OnnxCompressible, layer: str, tensors: Mapping[str, torch.Tensor]) -> LocalError:
    num = den = 0.0
    for weight in model.layer(layer).weights:
        golden = model.read(weight.key).numpy().astype(np.float64)
        new = tensors.get(weight.key)
        changed = new.numpy().astype(np.float64) if new is not None else golden
        num += float(np.sum((changed - golden) ** 2))
        den += float(np.sum(golden**2))
    return LocalError(_db(den, num), False)


def _db(signal: float, noise: float) -> float:
    if noise <= 0:
        return math.inf
    return 10.0 * math.log10(max(signal, 1e-300) / noise)
