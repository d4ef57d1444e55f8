"""The profile's fast paths give the plain paths' numbers: runs bound to reused buffers (bound_run.py)
equal onnxruntime's plain runs, including when the batch size changes and when an output's shape depends
on the values; the shared float64 sums equal float64 numpy references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from worker.engine.layer_profile.bound_run import BoundRunner
from worker.engine.metrics.numerical import ROW_DOT_ELEMENTS, sample_sums, shared_sample_sums


def _session(tmp_path: Path, data_dependent: bool = False) -> tuple[Any, list[str]]:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 4], np.arange(12, dtype=np.float32).tolist())
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if data_dependent:  # the positive elements of x: a shape that changes with the values
        nodes += [
            helper.make_node(
                "Constant", [], ["zero"], value=helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])
            ),
            helper.make_node("Greater", ["x", "zero"], ["mask"]),
            helper.make_node("Compress", ["x", "mask"], ["pos"]),
        ]
        outputs.append(helper.make_tensor_value_info("pos", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", [x], outputs, [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    names = [o.name for o in outputs] + ["h"]
    model.graph.output.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, None))
    onnx.save(model, str(tmp_path / "m.onnx"))
    return ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"]), names


def test_bound_runs_equal_plain_runs_across_batch_sizes(tmp_path: Path) -> None:
    session, names = _session(tmp_path)
    runner = BoundRunner(session, names)
    rng = np.random.default_rng(0)
    first_buffers: dict[str, int] = {}
    for n in (1, 5, 5, 5, 2, 5):
        x = rng.normal(size=(n, 3)).astype(np.float32)
        got = runner.run({"x": x})
        want = dict(zip(names, session.run(names, {"x": x}), strict=True))
        for name in names:
            np.testing.assert_array_equal(got[name], want[name])
        if n == 5 and first_buffers:  # later batches of one size reuse the buffers
            assert {k: v.ctypes.data for k, v in got.items()} == first_buffers
        if n == 5 and not first_buffers and runner._binding is not None:
            first_buffers = {k: v.ctypes.data for k, v in got.items()}
    assert runner.enabled and first_buffers


def test_a_value_dependent_shape_falls_back_to_plain_runs(tmp_path: Path) -> None:
    session, names = _session(tmp_path, data_dependent=True)
    runner = BoundRunner(session, names)
    x = np.array([[1.0, -1.0, 2.0], [3.0, 4.0, -5.0]], dtype=np.float32)
    runner.run({"x": x})
    y = -x  # same input shape, another number of positive elements
    got = runner.run({"x": y})
    np.testing.assert_array_equal(got["pos"], y[y > 0])
    assert not runner.enabled


@pytest.mark.parametrize("elements", [7, ROW_DOT_ELEMENTS + 13])
def test_shared_sums_equal_float64_references_and_the_pairwise_sums(elements: int) -> None:
    rng = np.random.default_rng(1)
    g = rng.normal(size=(3, elements)).astype(np.float32)
    c = g + rng.normal(scale=0.01, size=g.shape).astype(np.float32)
    local = g + rng.normal(scale=0.001, size=g.shape).astype(np.float32)
    q_in = c + rng.normal(scale=0.01, size=g.shape).astype(np.float32)
    comparisons = [(0, 1), (0, 2), (3, 1)]
    shared = shared_sample_sums([g, c, local, q_in], comparisons)
    arrays = [g, c, local, q_in]
    for (i, j), sums in zip(comparisons, shared, strict=True):
        a, b = arrays[i].astype(np.float64), arrays[j].astype(np.float64)
        np.testing.assert_allclose(sums.signal, (a * a).sum(axis=1), rtol=1e-12)
        np.testing.assert_allclose(sums.error, ((a - b) ** 2).sum(axis=1), rtol=1e-12)
        np.testing.assert_allclose(sums.dot, (a * b).sum(axis=1), rtol=1e-12)
        np.testing.assert_allclose(sums.compressed_power, (b * b).sum(axis=1), rtol=1e-12)
        pairwise = sample_sums(arrays[i], arrays[j])
        for field in ("signal", "error", "dot", "compressed_power"):
            np.testing.assert_array_equal(getattr(sums, field), getattr(pairwise, field))


def test_shared_sums_refuse_arrays_of_different_shapes() -> None:
    with pytest.raises(ValueError, match="one shape"):
        shared_sample_sums([np.zeros((2, 3)), np.zeros((2, 4))], [(0, 1)])
