"""How a dataset is bound to a model's inputs: by name or, for a single array, any name (labels
ignored, dtypes cast), fixed and symbolic dims checked, the compressed model's inputs matched by position,
labels taken from the dataset and checked, and a shape mismatch named with what was expected and given.

compare_models and bind_inputs with tiny numpy-backed fake runners (tests/support/fake_runners.py);
references computed independently from the runners' full-dataset outputs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from tests.support.fake_runners import LinearRunner, N, summary_json
from worker.engine.errors import DatasetMismatchError, EngineError
from worker.engine.fidelity.compare import FidelityParams, bind_inputs, compare_models
from worker.engine.types import TensorSpec

# ---------------------------------------------------------------------------------------------- bind_inputs


def test_bind_inputs_mismatched_shape_names_expected_and_given() -> None:
    spec = TensorSpec("input", ("batch", 1, 8, 8), "float32")
    with pytest.raises(DatasetMismatchError) as err:
        bind_inputs({"x": np.zeros((360, 64))}, [spec])
    msg = str(err.value)
    assert "'input'" in msg and "(batch, 1, 8, 8)" in msg and "(360, 64)" in msg


def test_bind_inputs_single_array_any_name_ignores_labels_and_casts() -> None:
    spec = TensorSpec("input", ("batch", 1, 8, 8), "float32")
    x = np.random.default_rng(1).normal(size=(5, 1, 8, 8))
    bound = bind_inputs({"whatever": x, "labels": np.arange(5)}, [spec])
    assert list(bound) == ["input"]
    assert bound["input"].dtype == np.float32
    np.testing.assert_array_equal(bound["input"], x.astype(np.float32))
    images = np.zeros((5, 1, 8, 8), dtype=np.uint8)
    assert bind_inputs({"x": images}, [spec])["input"].dtype == np.float32


def test_bind_inputs_fixed_and_symbolic_dims() -> None:
    specs = [TensorSpec("ids", (1, "seq"), "int64"), TensorSpec("mask", (None, "seq"), "int64")]
    bound = bind_inputs({"ids": np.zeros((4, 7), np.int32), "mask": np.ones((4, 9), np.int64)}, specs)
    assert bound["ids"].dtype == np.int64 and bound["ids"].shape == (4, 7)


def test_bind_inputs_errors() -> None:
    specs = [TensorSpec("a", ("batch", 3), "float32"), TensorSpec("b", ("batch", 2), "float32")]
    with pytest.raises(DatasetMismatchError, match=r"expects inputs \['a', 'b'\]"):
        bind_inputs({"a": np.zeros((4, 3))}, specs)
    with pytest.raises(DatasetMismatchError, match="different lengths"):
        bind_inputs({"a": np.zeros((4, 3)), "b": np.zeros((5, 2))}, specs)
    with pytest.raises(
        DatasetMismatchError, match=r"expects shape \(batch, 3\) but the dataset gives \(4, 3, 1\)"
    ):
        bind_inputs({"a": np.zeros((4, 3, 1)), "b": np.zeros((4, 2))}, specs)
    int_spec = [TensorSpec("ids", ("batch", 3), "int32")]
    with pytest.raises(DatasetMismatchError, match=r"int32.*float64"):
        bind_inputs({"ids": np.zeros((4, 3))}, int_spec)
    with pytest.raises(DatasetMismatchError, match="int32"):
        bind_inputs({"ids": np.full((4, 3), 2**40, dtype=np.int64)}, int_spec)
    with pytest.raises(DatasetMismatchError, match="scalar"):
        bind_inputs({"ids": np.array(3)}, int_spec)


def test_compressed_inputs_matched_by_position(data: dict[str, np.ndarray]) -> None:
    golden = LinearRunner(data["w"], input_name="x")
    other = LinearRunner(data["w_noisy"], input_name="input_0")
    feeds = {"x": data["x"]}
    s = summary_json(compare_models(golden, other, feeds, None, FidelityParams()))
    assert s["outputs"]["logits"]["n_finite"] == N


def test_labels_from_dataset_and_label_errors(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    s = summary_json(
        compare_models(golden, compressed, {"x": data["x"], "labels": data["labels"]}, None, FidelityParams())
    )
    assert s["outputs"]["logits"]["labels"]["n"] == N
    with pytest.raises(DatasetMismatchError, match="10 classes"):
        compare_models(golden, compressed, {"x": data["x"]}, data["labels"] + 5, FidelityParams())
    with pytest.raises(DatasetMismatchError, match="shape"):
        compare_models(golden, compressed, {"x": data["x"]}, data["labels"][:-1], FidelityParams())
    with pytest.raises(DatasetMismatchError, match="no samples"):
        compare_models(golden, compressed, {"x": data["x"][:0]}, None, FidelityParams())


def test_dataset_shape_mismatch_through_compare_models() -> None:
    class ImageRunner(LinearRunner):
        @property
        def inputs(self) -> list[TensorSpec]:
            return [TensorSpec("input", ("batch", 1, 8, 8), "float32")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {self.output_name: feeds["input"].reshape(len(feeds["input"]), -1) @ self.weight}

    w = np.ones((64, 3))
    with pytest.raises(DatasetMismatchError) as err:
        compare_models(ImageRunner(w), ImageRunner(w), {"x": np.zeros((360, 64))}, None, FidelityParams())
    assert "(batch, 1, 8, 8)" in str(err.value) and "(360, 64)" in str(err.value)
    assert isinstance(err.value, EngineError)
