"""The demo models: the data split, training quality and determinism, and the demo bundle files."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch

from worker.demo.models import (
    DemoBundle,
    DigitsCNN,
    DigitsSplit,
    accuracy,
    load_digits_split,
    train_digits_cnn,
    train_digits_lstm,
)


def test_split_shapes_scale_and_stratification(digits_split: DigitsSplit) -> None:
    s = digits_split
    assert s.x_train.dtype == s.x_test.dtype == np.float32
    assert s.y_train.dtype == s.y_test.dtype == np.int64
    assert s.x_train.shape[1:] == s.x_test.shape[1:] == (1, 8, 8)
    total = len(s.x_train) + len(s.x_test)
    assert abs(len(s.x_test) / total - 0.2) < 0.01
    assert min(s.x_train.min(), s.x_test.min()) == 0.0 and max(s.x_train.max(), s.x_test.max()) == 1.0
    train_share = np.bincount(s.y_train, minlength=10) / len(s.y_train)
    test_share = np.bincount(s.y_test, minlength=10) / len(s.y_test)
    np.testing.assert_allclose(test_share, train_share, atol=0.01)


def test_split_is_seeded() -> None:
    a, b, c = load_digits_split(seed=0), load_digits_split(seed=0), load_digits_split(seed=1)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.x_test, c.x_test)


def test_cnn_accuracy(digits_cnn: DigitsCNN, digits_split: DigitsSplit) -> None:
    assert not digits_cnn.training
    assert accuracy(digits_cnn, digits_split.x_test, digits_split.y_test) >= 0.90


def test_cnn_training_is_deterministic(digits_cnn: DigitsCNN, digits_split: DigitsSplit) -> None:
    again = train_digits_cnn(digits_split, seed=0)
    for (name, a), (_, b) in zip(digits_cnn.state_dict().items(), again.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    other = train_digits_cnn(digits_split, seed=1, epochs=1)
    assert not torch.equal(other.state_dict()["fc.weight"], digits_cnn.state_dict()["fc.weight"])


def test_training_leaves_global_torch_state_alone(digits_split: DigitsSplit) -> None:
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_digits_cnn(digits_split, seed=0, epochs=1)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_lstm_accuracy(digits_split: DigitsSplit) -> None:
    model = train_digits_lstm(digits_split, seed=0)
    assert not model.training
    assert accuracy(model, digits_split.x_test, digits_split.y_test) >= 0.85


def test_bundle_files(digits_bundle_timed: Any, digits_split: DigitsSplit) -> None:
    bundle = digits_bundle_timed.bundle
    assert digits_bundle_timed.seconds < 60, f"write_demo_bundle took {digits_bundle_timed.seconds:.1f} s"
    assert bundle.golden_onnx.name == "digits_cnn.onnx" and bundle.int8_onnx.name == "digits_cnn_int8.onnx"
    with np.load(bundle.test_npz, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["input", "labels"]
        assert npz["input"].dtype == np.float32 and npz["input"].shape == (len(digits_split.x_test), 1, 8, 8)
        assert npz["labels"].dtype == np.int64
        np.testing.assert_array_equal(npz["labels"], digits_split.y_test)


def predictions(path: str, images: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {"input": images})
    return np.asarray(logits).argmax(axis=1)


def test_int8_model_is_int8_and_agrees_with_golden(digits_bundle: DemoBundle) -> None:
    model = onnx.load(str(digits_bundle.int8_onnx))
    weights = [init for init in model.graph.initializer if len(init.dims) >= 2]
    assert weights and all(init.data_type == onnx.TensorProto.INT8 for init in weights)
    assert {node.op_type for node in model.graph.node} >= {"QuantizeLinear", "DequantizeLinear", "Conv"}
    with np.load(digits_bundle.test_npz) as npz:
        images, labels = npz["input"], npz["labels"]
    golden = predictions(str(digits_bundle.golden_onnx), images)
    int8 = predictions(str(digits_bundle.int8_onnx), images)
    assert (golden == labels).mean() >= 0.90
    assert abs((golden == labels).mean() - digits_bundle.test_accuracy) < 1e-6
    assert (golden == int8).mean() >= 0.95
