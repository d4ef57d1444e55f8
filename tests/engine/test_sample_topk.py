"""Each sample's top-k (worker/engine/fidelity/sample_topk.py) on the demo digits CNN and its int8 (QDQ) version, as the
fidelity job records it while comparing: checked against scipy's softmax of the logits of both ONNX files run
here independently with onnxruntime, for a model that outputs probabilities, and for a runner with a fixed
batch size (the recorder must see each sample once, and leave the comparison's numbers unchanged)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from scipy.special import softmax

from worker.demo.models import DemoBundle
from worker.engine.fidelity.compare import FidelityParams, FidelityReport, compare_models
from worker.engine.fidelity.sample_topk import TOP_K, SampleTopK
from worker.engine.loaders import load_model
from worker.engine.types import Runner, TensorSpec

BATCH = 37  # does not divide the 360 test samples: the last batch is short


def _logits(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0], dtype=np.float64)


def _expected_topk(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    classes = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return classes, np.take_along_axis(probs, classes, axis=1)


def _data(bundle: DemoBundle) -> dict[str, np.ndarray]:
    with np.load(bundle.test_npz) as data:
        return {"input": data["input"], "labels": data["labels"]}


def _run(
    golden: Runner, compressed: Runner, data: Mapping[str, np.ndarray]
) -> tuple[FidelityReport, dict, FidelityReport]:
    """The report with the recorder, its document, and the report of a plain comparison."""
    params = FidelityParams(batch_size=BATCH)
    arrays = {"input": data["input"]}
    recorder = SampleTopK()
    wrapped = compare_models(
        recorder.wrap(golden, "golden"),
        recorder.wrap(compressed, "compressed"),
        arrays,
        data["labels"],
        params,
    )
    document = recorder.document(wrapped)
    assert document is not None
    plain = compare_models(golden, compressed, arrays, data["labels"], params)
    return wrapped, document, plain


def _check(stored: dict, probs: np.ndarray) -> None:
    classes, expected = _expected_topk(probs, TOP_K)
    assert np.array_equal(np.asarray(stored["classes"]), classes)
    # 7 significant digits are stored
    np.testing.assert_allclose(np.asarray(stored["probabilities"]), expected, rtol=1e-6, atol=1e-12)


def test_topk_equal_scipy_softmax_of_both_onnx_models(digits_bundle: DemoBundle) -> None:
    data = _data(digits_bundle)
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    report, document, plain = _run(golden, compressed, data)

    (output,) = document["output_names"]
    entry = document["outputs"][output]
    n = len(data["input"])
    assert document["n_samples"] == n and len(entry["golden"]["classes"]) == n
    assert entry["outputs_are_probabilities"] == {"golden": False, "compressed": False}
    _check(entry["golden"], softmax(_logits(digits_bundle.golden_onnx, data["input"]), axis=1))
    _check(entry["compressed"], softmax(_logits(digits_bundle.int8_onnx, data["input"]), axis=1))
    # the top-1 of the document is the per-sample table's class, and the int8 model flips some samples
    assert [c[0] for c in entry["golden"]["classes"]] == report.per_sample["golden_class"].tolist()
    assert [c[0] for c in entry["compressed"]["classes"]] == report.per_sample["compressed_class"].tolist()
    # recording changes nothing in the comparison
    np.testing.assert_array_equal(report.per_sample["kl"], plain.per_sample["kl"])


class SoftmaxRunner:
    """An ONNX classifier whose output is its softmax, as a model with a softmax layer would give it."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner

    @property
    def inputs(self) -> list[TensorSpec]:
        return self.inner.inputs

    @property
    def outputs(self) -> list[TensorSpec]:
        return self.inner.outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: softmax(v.astype(np.float64), axis=1) for k, v in self.inner.run(feeds).items()}


def test_probability_outputs_are_taken_as_probabilities(digits_bundle: DemoBundle) -> None:
    data = _data(digits_bundle)
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = SoftmaxRunner(load_model(digits_bundle.int8_onnx, "onnx"))
    report, document, _ = _run(golden, compressed, data)
    entry = document["outputs"][document["output_names"][0]]
    assert entry["outputs_are_probabilities"] == {"golden": False, "compressed": True}
    probs = softmax(_logits(digits_bundle.int8_onnx, data["input"]), axis=1)
    # as the engine reads probabilities: clamped at 1e-12 and renormalised (not a softmax of the probabilities)
    clamped = np.maximum(probs, 1e-12)
    _check(entry["compressed"], clamped / clamped.sum(axis=1, keepdims=True))
    assert report.outputs[document["output_names"][0]]["outputs_are_probabilities"]["compressed"] is True


class FixedBatchRunner:
    """The golden ONNX model declaring a fixed batch of 8: the comparison pads the last chunk of a batch."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        self.rows_seen = 0

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec(s.name, (8, *s.shape[1:]), s.dtype) for s in self.inner.inputs]

    @property
    def outputs(self) -> list[TensorSpec]:
        return self.inner.outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = {len(v) for v in feeds.values()}
        assert rows == {8}, rows
        self.rows_seen += 8
        return self.inner.run(feeds)


@pytest.mark.parametrize("n", [360, 45])
def test_a_fixed_batch_runner_is_recorded_once_per_sample(digits_bundle: DemoBundle, n: int) -> None:
    data = {k: v[:n] for k, v in _data(digits_bundle).items()}
    golden = FixedBatchRunner(load_model(digits_bundle.golden_onnx, "onnx"))
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    report, document, plain = _run(golden, compressed, data)
    entry = document["outputs"][document["output_names"][0]]
    assert len(entry["golden"]["classes"]) == n
    _check(entry["golden"], softmax(_logits(digits_bundle.golden_onnx, data["input"]), axis=1))
    np.testing.assert_array_equal(report.per_sample["kl"], plain.per_sample["kl"])
    assert golden.rows_seen > 2 * n  # both runs padded: the last chunk of each batch of 37 is short


def test_non_finite_samples_are_null_and_regression_outputs_have_no_document() -> None:
    class Fixed:
        def __init__(self, values: np.ndarray) -> None:
            self.values = values

        @property
        def inputs(self) -> list[TensorSpec]:
            return [TensorSpec("x", ("batch", 1), "float32")]

        @property
        def outputs(self) -> list[TensorSpec]:
            return [TensorSpec("y", ("batch", self.values.shape[1]), "float32")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            rows = feeds["x"][:, 0].astype(int)
            return {"y": self.values[rows]}

    rng = np.random.default_rng(3)
    logits = rng.normal(size=(6, 3))
    broken = logits.copy()
    broken[2, 1] = np.nan
    x = np.arange(6, dtype=np.float32)[:, None]
    recorder = SampleTopK()
    report = compare_models(
        recorder.wrap(Fixed(logits), "golden"), recorder.wrap(Fixed(broken), "compressed"), {"x": x}, None,
        FidelityParams(batch_size=4),
    )  # fmt: skip
    document = recorder.document(report)
    assert document is not None
    entry = document["outputs"]["y"]
    assert entry["compressed"]["classes"][2] is None and entry["golden"]["classes"][2] is not None
    assert len(entry["golden"]["classes"][0]) == 3  # k is clipped to the number of classes
    classes, expected = _expected_topk(softmax(logits, axis=1), 3)
    assert entry["golden"]["classes"] == classes.tolist()
    np.testing.assert_allclose(entry["golden"]["probabilities"], expected, rtol=1e-6)

    regression = SampleTopK()
    one = rng.normal(size=(6, 1))
    report = compare_models(
        regression.wrap(Fixed(one), "golden"), regression.wrap(Fixed(one), "compressed"), {"x": x}, None,
        FidelityParams(batch_size=4),
    )  # fmt: skip
    assert regression.document(report) is None
