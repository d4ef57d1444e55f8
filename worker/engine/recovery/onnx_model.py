"""Training-free recovery of an ONNX golden model: AdaRound and bias correction on its Conv, Gemm and MatMul
layers, with the same arithmetic as the torch path (adaround.round_layer, common.channel_means).

The recovered model R is the golden ONNX model with rewritten initializers (`OnnxRecovery.tensors`), and
"the compressed model" is R compressed by the unchanged plan through the ONNX compression backend, as
sweeps compress it. During AdaRound each layer runs as the equivalent torch op (an nn.Conv / nn.Linear
holding the ONNX weights in torch's layout); its inputs are captured from onnxruntime running R.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from worker.engine.compression import Calibration, Config
from worker.engine.compression.layers import LayerSpec
from worker.engine.compression.model import Feeds, batches, resolve
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.recovery.adaround import AdaRoundParams, AdaRoundResult, round_layer
from worker.engine.recovery.bias_correction import BiasCorrectionResult
from worker.engine.recovery.common import (
    Layer,
    Progress,
    RecoveryError,
    channel_means,
    grid_of,
    no_progress,
    weight_quant_of,
)

if TYPE_CHECKING:
    import onnx

ONNX_METHODS = ("equalization", "smoothquant", "adaround", "bias_correction")
"""What recovery can do on an ONNX golden model (onnx_equalization.py, onnx_smoothquant.py, here): the
training-free methods; distillation and QAT train a torch module."""


@dataclass(frozen=True)
class OnnxLayerOp:
    """One compressible ONNX layer as recovery sees it: its weight (and bias) key, the tensor entering the
    op that reads the weight, the tensor the bias is added into, and the equivalent torch layer."""

    name: str
    weight_key: str
    bias_key: str | None
    input: str
    output: str
    """The tensor holding the bias-added output (the Conv / Gemm output, or the Add after a MatMul)."""
    channel_axis: int
    module: Layer
    transposed: bool
    """The ONNX weight is (in, out) (Gemm transB=0, MatMul): the torch weight is its transpose."""
    pre_pad: tuple[int, ...] | None = None
    """F.pad of the input before `module` (asymmetric Conv pads; the module then pads nothing)."""


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    from onnx import helper

    return {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}


def _torch_layer(node: onnx.NodeProto, w: torch.Tensor) -> tuple[Layer, bool, tuple[int, ...] | None]:
    """The torch layer computing `node` (bias left out) with weight `w`, whether `w` was transposed, and the
    F.pad to apply to its input first (asymmetric ONNX pads, as TensorFlow-style "same" convolutions have);
    RecoveryError for the forms it does not cover."""
    attrs = _attrs(node)
    if node.op_type == "Conv" and w.dim() in (3, 4):
        dims = w.dim() - 2
        pads = [int(p) for p in attrs.get("pads", [0] * 2 * dims)]
        if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise RecoveryError(f"{node.name}: only Conv with explicit pads is supported (not auto_pad)")
        pre_pad: tuple[int, ...] | None = None
        if pads[:dims] != pads[dims:]:  # ONNX: begins then ends, first axis first; F.pad: last axis first
            pre_pad = tuple(p for axis in reversed(range(dims)) for p in (pads[axis], pads[dims + axis]))
            pads = [0] * 2 * dims
        group = int(attrs.get("group", 1))
        kind = nn.Conv1d if dims == 1 else nn.Conv2d
        geometry: dict[str, Any] = {  # tuples of the Conv's rank
            "kernel_size": tuple(w.shape[2:]),
            "stride": tuple(attrs.get("strides", [1] * dims)),
            "padding": tuple(pads[:dims]),
            "dilation": tuple(attrs.get("dilations", [1] * dims)),
        }
        conv = kind(w.shape[1] * group, w.shape[0], groups=group, bias=False, **geometry)
        conv.weight.data = w.clone()
        return conv, False, pre_pad
    if node.op_type in ("Gemm", "MatMul") and w.dim() == 2:
        if node.op_type == "Gemm" and (
            attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0
        ):
            raise RecoveryError(f"{node.name}: only Gemm with transA=0, alpha=beta=1 is supported")
        transposed = not (node.op_type == "Gemm" and attrs.get("transB", 0))
        torch_w = w.t().contiguous() if transposed else w.clone()
        linear = nn.Linear(torch_w.shape[1], torch_w.shape[0], bias=False)
        linear.weight.data = torch_w
        return linear, transposed, None
    raise RecoveryError(f"{node.name}: recovery covers Conv, Gemm and MatMul layers, not {node.op_type}")


def layer_ops(
    handle: OnnxCompressible, names: Sequence[str], skipped: list[str] | None = None
) -> list[OnnxLayerOp]:
    """The layers `names` (in the model's order) as OnnxLayerOps. A layer recovery cannot map raises
    RecoveryError, or with `skipped` is left out and its reason appended there."""
    wanted = set(names)
    ops: list[OnnxLayerOp] = []
    for layer in handle.layers():
        if layer.name not in wanted or not layer.weights:
            continue
        try:
            ops.append(_layer_op(handle, layer))
        except RecoveryError as exc:
            if skipped is None:
                raise
            skipped.append(str(exc))
    return ops


def _layer_op(handle: OnnxCompressible, layer: LayerSpec) -> OnnxLayerOp:
    weight = layer.weights[0]
    key = weight.key
    value, index = handle.tensor_value(key)
    readers = handle.consumers_of(value)
    if index is not None or len(readers) != 1 or value not in readers[0].input[1:]:
        raise RecoveryError(f"{layer.name}: its weight is not the second input of one Conv/Gemm/MatMul")
    node = readers[0]
    module, transposed, pre_pad = _torch_layer(node, handle.read(key))
    if weight.quant_axis != (1 if transposed else 0):
        raise RecoveryError(
            f"{layer.name}: its weight is quantized along axis {weight.quant_axis}, not its outputs"
        )
    bias_key = layer.biases[0].key if layer.biases else None
    output = node.output[0]
    if bias_key is not None:
        bias_value, _ = handle.tensor_value(bias_key)
        adders = handle.consumers_of(bias_value)
        output = adders[0].output[0] if len(adders) == 1 else output
    return OnnxLayerOp(
        layer.name,
        key,
        bias_key,
        node.input[0],
        output,
        1 if node.op_type == "Conv" else -1,
        module,
        transposed,
        pre_pad,
    )


@dataclass(frozen=True)
class ScaleNode:
    """A Mul by `inverse` (1/s, shaped to broadcast along the channel axis) on `tensor`, feeding only the
    nodes that read the weights `readers` (SmoothQuant where no op can absorb 1/s)."""

    tensor: str
    inverse: np.ndarray
    readers: tuple[str, ...]


class OnnxRecovery:
    """The recovered float model R: the golden ONNX model with `tensors` (weight / bias key → value)
    written over its initializers, and SmoothQuant's scale nodes inserted."""

    def __init__(self, golden: OnnxCompressible) -> None:
        self.golden = golden
        self.tensors: dict[str, torch.Tensor] = {}
        self.scale_nodes: list[ScaleNode] = []

    def copy(self) -> OnnxRecovery:
        other = OnnxRecovery(self.golden)
        other.tensors, other.scale_nodes = dict(self.tensors), list(self.scale_nodes)
        return other

    def model(self) -> onnx.ModelProto:
        from onnx import helper, numpy_helper

        model = self.golden.build(self.tensors, {})
        graph = model.graph
        for index, node in enumerate(self.scale_nodes):
            scale, out = f"{node.tensor}__smooth_inverse_{index}", f"{node.tensor}__smoothed_{index}"
            graph.initializer.append(numpy_helper.from_array(node.inverse.astype(np.float32), scale))
            position = next(i for i, n in enumerate(graph.node) if node.tensor in n.input)
            graph.node.insert(position, helper.make_node("Mul", [node.tensor, scale], [out], name=out))
            for consumer in graph.node:
                if consumer.op_type != "Mul" and any(w in consumer.input for w in node.readers):
                    for i, name in enumerate(consumer.input):
                        if name == node.tensor:
                            consumer.input[i] = out
        return model

    def handle(self) -> OnnxCompressible:
        return OnnxCompressible(self.model(), intra_op_threads=self.golden.threads)

    def read(self, key: str) -> torch.Tensor:
        return self.tensors[key].clone() if key in self.tensors else self.golden.read(key)

    def store(self, op: OnnxLayerOp, weight: torch.Tensor | None = None) -> None:
        """Write a layer's weight (its torch form: `weight`, else the op's module's) in the ONNX layout."""
        w = (op.module.weight if weight is None else weight).detach()
        self.tensors[op.weight_key] = (w.t() if op.transposed else w).contiguous().clone()


def ort_session(model: onnx.ModelProto, threads: int | None) -> Any:
    """An onnxruntime CPU session of `model` with `threads` intra-op threads (default when None)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _capture(
    model: onnx.ModelProto, names: Sequence[str], feeds: Feeds, batch_size: int, threads: int | None
) -> dict[str, list[np.ndarray]]:
    """Every batch's value of the tensors `names` in `model`, run by onnxruntime."""
    import onnx as onnx_module

    augmented = onnx_module.ModelProto()
    augmented.CopyFrom(model)
    existing = {o.name for o in augmented.graph.output}
    augmented.graph.output.extend(
        onnx_module.ValueInfoProto(name=n) for n in dict.fromkeys(names) if n not in existing
    )
    session = ort_session(augmented, threads)
    inputs = [i.name for i in session.get_inputs()]
    seen: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for batch in batches(feeds, batch_size):
        values = session.run(list(seen), {name: np.asarray(batch[name]) for name in inputs})
        for name, value in zip(seen, values, strict=True):
            seen[name].append(np.asarray(value))
    return seen


def _means(chunks: Sequence[np.ndarray], axis: int) -> torch.Tensor:
    """Per-channel mean of a layer's outputs over the batches, as common.channel_means computes it."""
    tensors = [torch.from_numpy(np.moveaxis(c, axis, 1) if c.ndim > 2 and axis != 1 else c) for c in chunks]
    return channel_means(tensors)


def adaround_onnx(
    recovery: OnnxRecovery,
    plan: Mapping[str, Config],
    feeds: Feeds,
    params: AdaRoundParams | None = None,
    *,
    batch_size: int = 64,
    progress: Progress = no_progress,
) -> AdaRoundResult:
    """AdaRound every weight-quantized Conv/Gemm/MatMul layer of R (adaround.adaround's steps: inputs from
    R's own float forward pass, one captured pass for all layers, then each layer's rounding learned on them)."""
    params = params or AdaRoundParams()
    result = AdaRoundResult()
    handle = recovery.handle()
    wanted = []
    for op in layer_ops(handle, [name for name in plan]):
        if weight_quant_of(plan[op.name]) is None:
            result.notes.append(
                f"{op.name}: {plan[op.name].id} has no final integer weight grid; left as it is"
            )
        else:
            wanted.append(op)
    if not wanted:
        raise RecoveryError(
            "AdaRound needs a configuration that quantizes the weights of a Conv, Gemm or MatMul"
        )
    limited = {name: np.asarray(array)[: params.max_samples] for name, array in feeds.items()}
    seen = _capture(handle.model, [op.input for op in wanted], limited, batch_size, handle.threads)
    for index, op in enumerate(wanted):
        progress("adaround", index, len(wanted), f"AdaRound: {op.name}")
        wq = weight_quant_of(plan[op.name])
        assert wq is not None
        module = op.module
        w = module.weight.detach().to(torch.float32)
        x = torch.from_numpy(np.concatenate(seen[op.input]))
        if isinstance(module, nn.Linear):
            x = x.reshape(-1, x.shape[-1])
        elif op.pre_pad is not None:
            x = nn.functional.pad(x, op.pre_pad)
        learned, report = round_layer(module, x, grid_of(w, wq), params, wq.per_channel)
        report.name = op.name
        recovery.store(op, learned)
        result.layers.append(report)
    progress("adaround", len(wanted), len(wanted), "AdaRound done")
    return result


def correct_biases_onnx(
    recovery: OnnxRecovery,
    plan: Mapping[str, Config],
    feeds: Feeds,
    reference: OnnxRecovery,
    *,
    batch_size: int = 64,
    progress: Progress = no_progress,
) -> BiasCorrectionResult:
    """bias_correction.correct_biases on R: each layer's bias shifted by minus the mean output error per
    channel (R compressed by the plan vs `reference`, the float model before AdaRound), layer by layer in the
    model's order with the earlier corrections in place. The compared tensor is the op's bias-added output,
    before any activation fake-quantization the plan inserts after the layer."""
    result = BiasCorrectionResult()
    ops = [op for op in layer_ops(recovery.handle(), list(plan))]
    for op in ops:
        if op.bias_key is None:
            result.notes.append(f"{op.name}: no bias to correct")
    ops = [op for op in ops if op.bias_key is not None]
    golden = _capture(
        reference.model(), [op.output for op in ops], feeds, batch_size, recovery.golden.threads
    )
    golden_means = {op.name: _means(golden[op.output], op.channel_axis) for op in ops}
    for index, op in enumerate(ops):
        progress("bias_correction", index, len(ops), f"bias correction: {op.name}")
        handle = recovery.handle()
        outcome, chains = resolve(handle, plan, Calibration(handle, feeds, batch_size))
        compressed_model = handle.build(outcome.tensors, chains)
        seen = _capture(compressed_model, [op.output], feeds, batch_size, handle.threads)
        error = _means(seen[op.output], op.channel_axis) - golden_means[op.name]
        assert op.bias_key is not None
        bias = recovery.read(op.bias_key)
        recovery.tensors[op.bias_key] = bias - error.to(bias.dtype)  # as correct_biases: bias -= error
        result.shifts[op.name] = [-float(e) for e in error]
    progress("bias_correction", len(ops), len(ops), "bias correction done")
    return result
