"""ONNX models that misbehave only when run, and the limits that contain them: a Loop of 2⁶²
iterations (past the per-task time limit), an Expand of every sample to HOG_SIDE² float32 (past the
per-process memory limit), and a harmless Abs to show the worker still serves a normal job."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

TIME_LIMIT_S = 20
MEMORY_LIMIT_MB = 3072
HOG_SIDE = 1 << 15
"""The memory hog expands every sample to HOG_SIDE² float32: 4 GiB per sample, above MEMORY_LIMIT_MB."""


def _check(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model, full_check=True)  # a well-formed model: only running it misbehaves
    onnx.save(model, path)
    return path


def endless_loop_model(path: Path) -> Path:
    """y = sin(sin(…sin(x))) for 2**62 iterations: an ONNX Loop that onnxruntime spins on (as good as forever)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Sin", ["v_in"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip_count", "keep_going", "input"], ["output"], body=body)],
        "endless_loop",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4])],
        initializer=[
            helper.make_tensor("trip_count", TensorProto.INT64, [], [2**62]),
            helper.make_tensor("keep_going", TensorProto.BOOL, [], [True]),
        ],
    )
    return _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def memory_hog_model(path: Path, side: int = HOG_SIDE) -> Path:
    """y = max over a (batch, side, side) broadcast of each sample's sum: a tensor of batch * side² floats,
    sized by the input at run time (so nothing is allocated while the model is loaded or inspected)."""
    nodes = [
        helper.make_node("Shape", ["input"], ["batch"], start=0, end=1),
        helper.make_node("Concat", ["batch", "square"], ["huge_shape"], axis=0),
        helper.make_node("ReduceSum", ["input", "axis_1"], ["sums"], keepdims=1),  # (batch, 1)
        helper.make_node("Unsqueeze", ["sums", "axis_2"], ["sums3"]),  # (batch, 1, 1)
        helper.make_node("Expand", ["sums3", "huge_shape"], ["huge"]),  # (batch, side, side)
        helper.make_node("ReduceMax", ["huge", "axes_12"], ["output"], keepdims=0),  # (batch,)
    ]
    graph = helper.make_graph(
        nodes,
        "memory_hog",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch"])],
        initializer=[
            helper.make_tensor("square", TensorProto.INT64, [2], [side, side]),
            helper.make_tensor("axis_1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis_2", TensorProto.INT64, [1], [2]),
            helper.make_tensor("axes_12", TensorProto.INT64, [2], [1, 2]),
        ],
    )
    return _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def abs_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Abs", ["input"], ["output"])], "abs", [x], [y])
    return _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
