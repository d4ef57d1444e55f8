"""Cross-layer equalization of an ONNX golden model: equalization.py's pairs and arithmetic (equalize_pair on
the layers' torch forms, onnx_model.OnnxLayerOp) for Conv/Gemm/MatMul → Relu (→ Flatten/Reshape) →
Conv/Gemm/MatMul chains in the ONNX graph, written back into the recovered model's initializers.

The first layer's output must feed only the Relu, the Relu only the second layer (or one Flatten/Reshape that
feeds only it); grouped convolutions are left out, as in the torch path. Biases are the layers' own
initializers (the first one's is divided by the same scales)."""

from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from worker.engine.recovery.equalization import EqualizationResult, Pair, equalize_pair
from worker.engine.recovery.onnx_model import OnnxLayerOp, OnnxRecovery, layer_ops

_FLATTEN = frozenset({"Flatten", "Reshape"})


def _equalizable(op: OnnxLayerOp) -> bool:
    module = op.module
    return isinstance(module, nn.Linear) or (isinstance(module, nn.Conv1d | nn.Conv2d) and module.groups == 1)


def onnx_pairs(recovery: OnnxRecovery, notes: list[str]) -> tuple[list[Pair], dict[str, OnnxLayerOp]]:
    """The equalizable pairs of the golden ONNX graph, and the layers they name."""
    handle = recovery.golden
    skipped: list[str] = []
    ops = {op.name: op for op in layer_ops(handle, [layer.name for layer in handle.layers()], skipped)}
    notes.extend(f"not equalized: {reason}" for reason in skipped)
    consumers: dict[str, list[int]] = defaultdict(list)
    graph = handle.model.graph
    for index, node in enumerate(graph.node):
        for name in node.input:
            consumers[name].append(index)
    by_input = {op.input: op for op in ops.values()}

    def only_consumer(tensor: str) -> int | None:
        found = consumers.get(tensor, [])
        return found[0] if len(found) == 1 else None

    pairs: list[Pair] = []
    for op in ops.values():
        if not _equalizable(op):
            continue
        relu = only_consumer(op.output)
        if relu is None or graph.node[relu].op_type != "Relu":
            continue
        tensor = graph.node[relu].output[0]
        nxt = only_consumer(tensor)
        flattened = nxt is not None and graph.node[nxt].op_type in _FLATTEN
        if flattened and nxt is not None:
            tensor = graph.node[nxt].output[0]
            if only_consumer(tensor) is None:
                continue
        second = by_input.get(tensor)
        if second is None or not _equalizable(second) or only_consumer(tensor) is None:
            continue
        channels = op.module.weight.shape[0]
        width = second.module.weight.shape[1]
        if width % channels or (not flattened and width != channels):
            notes.append(f"{op.name}→{second.name}: channel counts do not match ({channels} vs {width})")
            continue
        pairs.append(Pair(op.name, second.name, flattened))
    return pairs, ops


def equalize_onnx(
    recovery: OnnxRecovery, *, max_iterations: int = 20, tolerance: float = 1e-6
) -> EqualizationResult:
    """equalization.equalize on the ONNX graph's pairs: the same sweeps and scales, the layers' weights and
    the first layers' biases written into `recovery.tensors`."""
    result = EqualizationResult()
    pairs, ops = onnx_pairs(recovery, result.notes)
    result.pairs = pairs
    holder = nn.Module()
    for name in {name for pair in pairs for name in (pair.first, pair.second)}:
        holder.add_module(name.replace(".", "_"), ops[name].module)
    local = [Pair(p.first.replace(".", "_"), p.second.replace(".", "_"), p.flattened) for p in pairs]
    biases = {p.first: recovery.read(key).to(torch.float64) for p in pairs if (key := ops[p.first].bias_key)}
    totals = {
        f"{p.first}→{p.second}": torch.ones(ops[p.first].module.weight.shape[0], dtype=torch.float64)
        for p in pairs
    }
    for iteration in range(max_iterations):
        worst = 0.0
        for pair, named in zip(pairs, local, strict=True):
            s = equalize_pair(holder, named)
            totals[f"{pair.first}→{pair.second}"] *= s
            if pair.first in biases:
                biases[pair.first] = biases[pair.first] / s
            worst = max(worst, float((s - 1).abs().max()))
        result.iterations = iteration + 1
        if worst <= tolerance:
            break
    for name in {name for pair in pairs for name in (pair.first, pair.second)}:
        recovery.store(ops[name])
    for name, bias in biases.items():
        key = ops[name].bias_key
        assert key is not None
        recovery.tensors[key] = bias.to(torch.float32)
    result.scales = {key: [float(v) for v in value] for key, value in totals.items()}
    if not pairs and not result.notes:
        result.notes.append("no Conv/Gemm/MatMul → Relu → Conv/Gemm/MatMul pair to equalize")
    return result
