"""SmoothQuant-style scale migration on an ONNX golden model: smoothquant.py's scales (s_j = max|X_j|^α /
max|W_{:,j}|^(1−α), one s per group of layers reading the same input) for the configuration's Conv (not
grouped), Gemm and MatMul layers. The weights' input channels are multiplied by s in the recovered model's
initializers, and 1/s goes into the output rows (and bias) of the Conv/Gemm/MatMul layer producing the input, through a
Relu, when nothing else reads it; else into a scale node (a Mul on the input, feeding only the smoothed
layers). The torch path also folds into a LayerNorm or BatchNorm; the ONNX path gives those groups a scale
node. Folding matters beyond the extra Mul: the activation quantizers sit on layer outputs, so only a fold
shrinks the range the producer's output quantizer sees."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from worker.engine.compression import Config
from worker.engine.compression.model import Feeds, batches
from worker.engine.recovery.onnx_model import OnnxLayerOp, OnnxRecovery, ScaleNode, layer_ops, ort_session
from worker.engine.recovery.smoothquant import SmoothedGroup, SmoothQuantParams, SmoothQuantResult


def _weight_ranges(op: OnnxLayerOp) -> torch.Tensor:
    """max|W| per input channel of the layer (its torch form: input channels on axis 1), float64."""
    w = op.module.weight.detach().to(torch.float64).movedim(1, 0)
    return w.reshape(w.shape[0], -1).abs().amax(dim=1)


def _input_ranges(
    recovery: OnnxRecovery, groups: Mapping[str, list[OnnxLayerOp]], feeds: Feeds, batch_size: int
) -> dict[str, torch.Tensor]:
    """max|X_j| per input channel of each group's input over `feeds` (channel axis 1 for a Conv, the last axis
    for a Gemm / MatMul), streamed batch by batch."""
    import onnx

    model = recovery.model()
    existing = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=t) for t in groups if t not in existing)
    session = ort_session(model, recovery.golden.threads)
    inputs = [i.name for i in session.get_inputs()]
    names = list(groups)
    ranges: dict[str, torch.Tensor] = {}
    for batch in batches(feeds, batch_size):
        for name, value in zip(
            names, session.run(names, {n: np.asarray(batch[n]) for n in inputs}), strict=True
        ):
            x = torch.from_numpy(np.abs(np.asarray(value, dtype=np.float64)))
            moved = x if isinstance(groups[name][0].module, nn.Linear) else x.movedim(1, -1)
            part = moved.reshape(-1, moved.shape[-1]).amax(dim=0)
            ranges[name] = part if name not in ranges else torch.maximum(ranges[name], part)
    return ranges


def _fold_target(
    recovery: OnnxRecovery, tensor: str, members: list[OnnxLayerOp], by_output: Mapping[str, OnnxLayerOp]
) -> tuple[OnnxLayerOp, bool] | None:
    """The layer whose output rows can absorb 1/s for `tensor`: its producer (a Conv/Gemm/MatMul layer,
    optionally through a Relu: relu(z/s) = relu(z)/s for s > 0), when every reader of the tensor (and of the
    layer's output) is a smoothed member. None: the group needs a scale node."""
    graph = recovery.golden.model.graph
    readers = {n for n, node in enumerate(graph.node) if tensor in node.input}
    own = {
        n
        for n, node in enumerate(graph.node)
        for op in members
        if recovery.golden.tensor_value(op.weight_key)[0] in node.input
    }
    if readers != own:
        return None
    producer = next((node for node in graph.node if tensor in node.output), None)
    through_relu = producer is not None and producer.op_type == "Relu"
    source = producer.input[0] if through_relu and producer is not None else tensor
    if through_relu and sum(source in node.input for node in graph.node) != 1:
        return None
    owner = by_output.get(source)
    if owner is None or owner.module.weight.shape[0] != members[0].module.weight.shape[1]:
        return None
    if isinstance(owner.module, nn.Conv1d | nn.Conv2d) and owner.module.groups != 1:
        return None
    return owner, through_relu


def smooth_onnx(
    recovery: OnnxRecovery,
    plan: Mapping[str, Config],
    feeds: Feeds,
    params: SmoothQuantParams,
    *,
    batch_size: int = 64,
) -> SmoothQuantResult:
    """Smooth the configuration's layers of `recovery` (see the module docstring)."""
    result = SmoothQuantResult(alpha=params.alpha)
    skipped: list[str] = []
    handle = recovery.handle()
    every = {op.name: op for op in layer_ops(handle, [layer.name for layer in handle.layers()], skipped)}
    result.notes.extend(f"not smoothed: {reason}" for reason in skipped if reason.split(":")[0] in plan)
    by_output = {op.output: op for op in every.values()}
    groups: dict[str, list[OnnxLayerOp]] = defaultdict(list)
    for op in (every[name] for name in every if name in plan):
        module = op.module
        if isinstance(module, nn.Conv1d | nn.Conv2d) and module.groups != 1:
            result.notes.append(f"{op.name}: a grouped convolution, not smoothed")
        elif op.pre_pad is not None:
            result.notes.append(f"{op.name}: its input is padded asymmetrically, not smoothed")
        else:
            groups[op.input].append(op)
    for tensor, members in list(groups.items()):
        if len({type(op.module) for op in members}) > 1:
            result.notes.append(f"{tensor}: read by layers of different kinds, not smoothed")
            del groups[tensor]
    if not groups:
        if not result.notes:
            result.notes.append("no Conv, Gemm or MatMul layer of the configuration to smooth")
        return result
    ranges = _input_ranges(recovery, groups, feeds, batch_size)
    touched: dict[str, OnnxLayerOp] = {}
    biases: dict[str, torch.Tensor] = {}
    for tensor, members in groups.items():
        a = ranges[tensor]
        w = torch.stack([_weight_ranges(op) for op in members]).amax(dim=0)
        ok = (a > 0) & (w > 0)
        raw = a.clamp_min(1e-30) ** params.alpha / w.clamp_min(1e-30) ** (1 - params.alpha)
        s = torch.where(ok, raw, torch.ones_like(a))
        for op in members:
            weight = op.module.weight
            view = (1, -1) + (1,) * (weight.dim() - 2)
            with torch.no_grad():
                weight.copy_((weight.to(torch.float64) * s.reshape(view)).to(weight.dtype))
            touched[op.name] = op
        target = _fold_target(recovery, tensor, members, by_output)
        if target is not None:
            owner, through_relu = target
            weight = owner.module.weight
            with torch.no_grad():
                view = (-1,) + (1,) * (weight.dim() - 1)
                weight.copy_((weight.to(torch.float64) / s.reshape(view)).to(weight.dtype))
            touched[owner.name] = owner
            if owner.bias_key is not None:
                bias = biases.get(owner.name, recovery.read(owner.bias_key).to(torch.float64))
                biases[owner.name] = bias / s
        else:
            through_relu = False
            inverse = (1 / s).numpy()
            rank = len(members[0].module.weight.shape)
            shaped = (
                inverse
                if isinstance(members[0].module, nn.Linear)
                else inverse.reshape(-1, *([1] * (rank - 2)))
            )
            weights = tuple(recovery.golden.tensor_value(op.weight_key)[0] for op in members)
            recovery.scale_nodes.append(ScaleNode(tensor, shaped, weights))
        median = float(a.median())
        result.groups.append(
            SmoothedGroup(
                layers=[op.name for op in members],
                folded_into=None if target is None else target[0].name,
                fold="scale node"
                if target is None
                else ("conv" if target[0].channel_axis == 1 else "linear"),
                through_relu=through_relu,
                outlier_ratio=float(a.max()) / median if median > 0 else float("inf"),
                scales=[float(v) for v in s],
            )
        )
    for op in touched.values():
        recovery.store(op)
    for name, bias in biases.items():
        key = every[name].bias_key
        assert key is not None
        recovery.tensors[key] = bias.to(torch.float32)
    return result
