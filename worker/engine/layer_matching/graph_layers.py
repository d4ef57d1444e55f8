"""The weighted layers of an ONNX graph, in topological order, each with a normalised op class, its float
weight and the tensor that stands for its output.

Normalisation (so that a golden model and a compressed re-export compare):
* op class: Conv / ConvInteger / QLinearConv / com.microsoft FusedConv -> "conv"; MatMul / Gemm /
  MatMulInteger / QLinearMatMul / FusedMatMul / FusedGemm -> "dense"; Gather of a constant table ->
  "embed"; LayerNormalization / BatchNormalization / SimplifiedLayerNormalization -> "norm".
* weight: dequantized (weights.ConstFolder), dense weights as (in, out) whatever Gemm's transB.
* output: the node's output followed through the ops a fusion or a quantizer folds in - a constant bias
  Add (MatMul+Add = Gemm), an activation (Conv+Relu = fused Conv), QuantizeLinear -> DequantizeLinear
  pairs, Identity - while each step has one consumer. Both sides are followed the same way, so a golden
  Conv -> Relu and a compressed fused Conv meet at the same post-activation tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from worker.engine.inspection.identity import canonical_onnx_ids, node_label
from worker.engine.layer_matching.weights import ConstFolder

if TYPE_CHECKING:
    import onnx

_CLASS_AND_WEIGHT: dict[str, tuple[str, tuple[int, ...]]] = {
    "Conv": ("conv", (1,)),
    "ConvTranspose": ("conv", (1,)),
    "ConvInteger": ("conv", (1,)),
    "QLinearConv": ("conv", (3,)),
    "FusedConv": ("conv", (1,)),
    "Gemm": ("dense", (1, 0)),
    "FusedGemm": ("dense", (1, 0)),
    "MatMul": ("dense", (1, 0)),
    "FusedMatMul": ("dense", (1, 0)),
    "MatMulInteger": ("dense", (1, 0)),
    "QLinearMatMul": ("dense", (3, 0)),
    "Gather": ("embed", (0,)),
    "LayerNormalization": ("norm", (1,)),
    "SimplifiedLayerNormalization": ("norm", (1,)),
    "SkipLayerNormalization": ("norm", (2,)),
    "BatchNormalization": ("norm", (1,)),
}

_FOLDED_AFTER = frozenset(
    {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "QuantizeLinear", "DequantizeLinear", "Identity"}
)


@dataclass
class GraphLayer:
    index: int
    node_name: str
    canonical: str
    op_type: str
    op_class: str
    weight: np.ndarray | None
    output: str

    @property
    def shape(self) -> tuple[int, ...] | None:
        return None if self.weight is None else tuple(self.weight.shape)


def _attr_int(node: onnx.NodeProto, name: str) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), 0)


def graph_layers(model: onnx.ModelProto, folder: Path | None = None) -> list[GraphLayer]:
    """Weighted layers in graph (topological) order; a node whose weight is not constant (an attention
    MatMul of two activations) is no layer."""
    graph = model.graph
    folder_ = ConstFolder(graph, folder)
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(node)
    outputs = {value.name for value in graph.output}
    found: list[tuple[int, str, int]] = []
    for index, node in enumerate(graph.node):
        entry = _CLASS_AND_WEIGHT.get(node.op_type)
        if entry is None or not node.output:
            continue
        op_class, positions = entry
        position = next(
            (
                p
                for p in positions
                if p < len(node.input) and node.input[p] and folder_.is_constant(node.input[p])
            ),
            None,
        )
        if position is None or (op_class == "dense" and position == 0 and node.op_type == "Gemm"):
            continue
        found.append((index, op_class, position))
    ids = canonical_onnx_ids(graph, [i for i, _, _ in found])
    layers = []
    for index, op_class, position in found:
        node = graph.node[index]
        weight = folder_.value(node.input[position])
        gemm = node.op_type in ("Gemm", "FusedGemm")
        if weight is not None and op_class == "dense" and gemm and _attr_int(node, "transB"):
            weight = weight.T
        layers.append(
            GraphLayer(
                index=index,
                node_name=node_label(node, index),
                canonical=ids[index],
                op_type=node.op_type,
                op_class=op_class,
                weight=weight,
                output=_follow(node.output[0], consumers, outputs, folder_),
            )
        )
    return layers


def _follow(
    name: str, consumers: dict[str, list[onnx.NodeProto]], outputs: set[str], folder: ConstFolder
) -> str:
    for _ in range(8):
        users = consumers.get(name, [])
        if name in outputs or len(users) != 1 or not users[0].output:
            return name
        user = users[0]
        folds = user.op_type in _FOLDED_AFTER or (
            user.op_type == "Add" and any(i != name and folder.is_constant(i) for i in user.input)
        )
        if not folds:
            return name
        name = user.output[0]
    return name
