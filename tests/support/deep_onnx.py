"""A deep ONNX model built by hand: `blocks` x (Gemm + Relu) with the dynamo exporter's module scopes
(blocks.<i>.linear, blocks.<i>.act), so the graph view has 2 * blocks nodes grouped per block."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from worker.engine.inspection.identity import NAME_SCOPES_KEY


def _scoped(node: onnx.NodeProto, scopes: list[str]) -> onnx.NodeProto:
    prop = node.metadata_props.add()
    prop.key, prop.value = NAME_SCOPES_KEY, repr(scopes)
    return node


def deep_chain_onnx(path: Path, blocks: int = 250, width: int = 8, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    tensor = "input"
    for i in range(blocks):
        weight = rng.normal(0, 1 / np.sqrt(width), (width, width)).astype(np.float32)
        inits += [
            numpy_helper.from_array(weight, f"blocks.{i}.linear.weight"),
            numpy_helper.from_array(np.zeros(width, np.float32), f"blocks.{i}.linear.bias"),
        ]
        block = f"blocks.{i}"
        gemm = helper.make_node(
            "Gemm",
            [tensor, f"{block}.linear.weight", f"{block}.linear.bias"],
            [f"gemm_{i}"],
            f"node_gemm_{i}",
            transB=1,
        )
        relu_out = "output" if i == blocks - 1 else f"relu_{i}"
        relu = helper.make_node("Relu", [f"gemm_{i}"], [relu_out], f"node_relu_{i}")
        nodes += [
            _scoped(gemm, ["", block, f"{block}.linear", "linear"]),
            _scoped(relu, ["", block, f"{block}.act", "relu"]),
        ]
        tensor = relu_out
    graph = helper.make_graph(
        nodes,
        "deep_chain",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, width])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
