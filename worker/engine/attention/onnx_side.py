"""The ONNX side of the attention-map fidelity (issue 13, transformer internals).

An attention softmax is a Softmax over the last axis whose output is 4-D, [N, heads, Tq, Tk]. Both models
run on augmented copies that also output those softmaxes (as the layer profile does,
worker/engine/layer_profile/onnx_side.py: graph optimizations off, so a QDQ model runs as simulated
quantization); folding.py pairs them k-th with k-th and folds the batches.

A graph that fuses attention into one operator (com.microsoft Attention / MultiHeadAttention, written by
onnxruntime's transformer optimizer, or ONNX's own Attention of opset 23) has no Softmax to read: its
probabilities live inside the kernel. `OnnxSide.note` names those operators and what to do instead.

Each graph is parsed once per job (`OnnxSide`): the cheap check, the notes and the augmented copy all use
that one proto.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from worker.engine.attention.folding import ATTENTION_RANK
from worker.engine.errors import ModelLoadError
from worker.engine.layer_profile.onnx_side import ort_session
from worker.engine.layer_profile.sides import bind_feeds

if TYPE_CHECKING:
    import onnx
    import onnxruntime

FUSED_ADVICE = (
    "Export the model with its attention unfused to compare attention maps: skip onnxruntime's transformer "
    "optimizer (onnxruntime.transformers.optimizer, optimum's ORTOptimizer) and quantize the plain export."
)


@dataclass(frozen=True)
class AttentionNode:
    node: str
    output: str


def load_onnx(path: Path) -> onnx.ModelProto:
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf decode errors and OSError share no useful base class
        raise ModelLoadError(f"onnx could not load {path.name}: {exc}") from exc


def attention_softmaxes(model: onnx.ModelProto) -> list[AttentionNode]:
    """The main graph's Softmax nodes over the last axis whose output is (or may be: rank unknown after
    shape inference) 4-D, in graph order."""
    import onnx

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        ranks = {
            vi.name: len(vi.type.tensor_type.shape.dim)
            for vi in (*inferred.value_info, *inferred.output)
            if vi.type.tensor_type.HasField("shape")
        }
    except Exception:  # inference is only a filter: the runtime shapes are checked on the first batch
        ranks = {}
    found = []
    for i, node in enumerate(model.graph.node):
        if node.op_type != "Softmax" or node.domain not in ("", "ai.onnx") or not node.output:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), -1 if opset >= 13 else 1)
        rank = ranks.get(node.output[0])
        if rank is not None and rank != ATTENTION_RANK:
            continue
        if axis == -1 or axis == ATTENTION_RANK - 1:
            found.append(AttentionNode(node.name or f"Softmax#{i}", node.output[0]))
    return found


def fused_attention_ops(model: onnx.ModelProto) -> dict[str, int]:
    """Operators of the main graph that compute attention inside one kernel, as {"domain:op_type": count}:
    any op whose type contains "Attention" (com.microsoft Attention, MultiHeadAttention, QAttention,
    GroupQueryAttention, PackedAttention..., ONNX's Attention of opset 23, a custom domain's own)."""
    found = Counter(
        f"{node.domain or 'ai.onnx'}:{node.op_type}"
        for node in model.graph.node
        if "attention" in node.op_type.lower()
    )
    return dict(found)


def fused_note(role: str, fused: Mapping[str, int]) -> str:
    ops = ", ".join(f"{op} x{count}" for op, count in fused.items())
    return (
        f"the {role} graph fuses attention into single operators ({ops}) whose attention probabilities are "
        f"internal to the kernel, not graph values, so they cannot be read. {FUSED_ADVICE}"
    )


class OnnxSide:
    """An ONNX model parsed once: its attention softmaxes, its fused attention operators and the capture,
    all from the same proto. path: a .onnx (an onnx_zip extracted first: its external data beside it)."""

    def __init__(self, role: str, path: Path) -> None:
        self.role, self.path = role, path
        self.model = load_onnx(path)
        self.nodes = attention_softmaxes(self.model)
        self.fused = fused_attention_ops(self.model)

    @property
    def softmaxes(self) -> int:
        return len(self.nodes)

    def note(self) -> str | None:
        """Why a graph with fused attention gets no attention maps, or None when it fuses none."""
        return fused_note(self.role, self.fused) if self.fused else None

    def capture(self, workdir: Path, threads: int | None) -> OnnxCapture:
        return OnnxCapture(self.model, self.nodes, self.path, workdir, self.role, threads)


class OnnxCapture:
    """One model's augmented copy: its outputs are the attention softmaxes only."""

    def __init__(self, model: onnx.ModelProto, nodes: list[AttentionNode], path: Path, workdir: Path,
                 role: str, threads: int | None) -> None:  # fmt: skip
        """model: the proto read from path (its external data is looked up beside path); nodes: its
        attention softmaxes."""
        import onnx

        self.nodes = nodes
        augmented = onnx.ModelProto()
        augmented.CopyFrom(model)
        existing = {vi.name for vi in augmented.graph.output}
        augmented.graph.output.extend(
            onnx.ValueInfoProto(name=n.output) for n in self.nodes if n.output not in existing
        )
        target = workdir / f"{role}_attention.onnx"
        onnx.save(augmented, str(target))
        del augmented
        initializers = {init.name for init in model.graph.initializer}
        self.inputs = [vi.name for vi in model.graph.input if vi.name not in initializers]
        self.outputs = [n.output for n in self.nodes]
        self.role = role
        try:
            self.session: onnxruntime.InferenceSession = ort_session(target, path.parent, threads)
        except Exception as exc:  # onnxruntime's pybind exceptions share no public base class
            raise ModelLoadError(f"onnxruntime could not load the {role} model: {exc}") from exc
        dims = [arg.shape[0] if arg.shape else None for arg in self.session.get_inputs()]
        fixed = {dim for dim in dims if isinstance(dim, int) and dim > 0}
        self._fixed_batch = min(fixed) if fixed else None

    @property
    def names(self) -> list[str]:
        return [n.node for n in self.nodes]

    @property
    def fixed_batch(self) -> int | None:
        return self._fixed_batch

    def run(self, batch: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        feeds = bind_feeds(batch, self.inputs, self.role)
        return [np.asarray(a) for a in self.session.run(self.outputs, feeds)]
