"""N:M (2:4) sparsity as a sweep config (issue 33): the trained digits CNN (ONNX) keeps exactly the two
largest |w| of every four input weights (checked against a numpy reference on the golden file's weights),
its fidelity is measured like any point's, and the point says it needs sparse kernels and claims no size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from worker.demo.models import DigitsSplit
from worker.engine.compression import CompressionConfigError, NMSparsity, config_from_dict, open_compressible
from worker.engine.sweep import evaluate_point


def _two_of_four(weight: np.ndarray, out_axis: int) -> np.ndarray:
    """numpy reference: groups of 4 along the input axis at each (out, kernel position); keep the 2 largest."""
    in_axis = 1 if out_axis == 0 else 0
    moved = np.moveaxis(weight, (out_axis, in_axis), (0, -1))
    result = moved.copy()
    full = moved.shape[-1] // 4 * 4
    for index in np.ndindex(*moved.shape[:-1]):
        for start in range(0, full, 4):
            group = moved[index][start : start + 4]
            keep = sorted(range(4), key=lambda j: (-abs(group[j]), j))[:2]
            result[index][start : start + 4] = [group[j] if j in keep else 0.0 for j in range(4)]
    return np.moveaxis(result, (0, -1), (out_axis, in_axis))


def test_config_round_trip_and_refusals() -> None:
    assert config_from_dict(NMSparsity().to_dict()) == NMSparsity(2, 4)
    assert NMSparsity(1, 8).id == "sparse-1of8"
    with pytest.raises(CompressionConfigError, match=r"NMSparsity\.n must be less than m"):
        NMSparsity(4, 4)


def test_two_of_four_point_on_the_trained_digits_cnn(
    cnn_path: Path, digits_split: DigitsSplit, tmp_path: Path
) -> None:
    golden = open_compressible(cnn_path, "onnx", intra_op_threads=1)
    feeds = {"input": digits_split.x_test}
    base = evaluate_point(golden, feeds, digits_split.y_test, None)
    point = evaluate_point(golden, feeds, digits_split.y_test, NMSparsity(), export_dir=tmp_path)
    (manifest,) = point.exports
    original = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(cnn_path)).graph.initializer}
    exported = {
        i.name: numpy_helper.to_array(i)
        for i in onnx.load(str(tmp_path / manifest["file"])).graph.initializer
    }
    checked = 0
    for node in onnx.load(str(cnn_path)).graph.node:
        if node.op_type not in ("Conv", "Gemm"):
            continue
        weight = original[node.input[1]]
        transposed = node.op_type == "Gemm" and not any(a.name == "transB" and a.i for a in node.attribute)
        expected = _two_of_four(weight, 1 if transposed else 0)
        np.testing.assert_array_equal(exported[node.input[1]], expected)
        checked += int(weight.shape[1 if not transposed else 0] >= 4)
    assert checked == 2  # conv2 (8 inputs) and fc (256); conv1 has one input channel: no group of 4
    # fidelity measured like any point, on the file too
    assert point.fidelity["kl_mean"] > 0
    logits = ort.InferenceSession(str(tmp_path / manifest["file"]), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]
    accuracy = float(np.mean(np.argmax(logits, axis=1) == digits_split.y_test))
    assert accuracy == pytest.approx(point.fidelity["accuracy_compressed"], abs=1e-9)
    # marked, and no size or speed claimed: the dense size, the zeros counted only as params kept
    assert point.runtime["needs_sparse_kernels"] is True
    assert "needs sparse kernels" in point.runtime["runtime_note"]
    assert base.runtime["needs_sparse_kernels"] is False
    assert point.cost["size_bytes"] == base.cost["size_bytes"]
    assert point.cost["params_kept"] < base.cost["params_kept"]
