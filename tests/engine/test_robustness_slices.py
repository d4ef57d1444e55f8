"""Robustness slices (worker/engine/robustness/run.py) on the digits CNN: the float ONNX export against
its int8 QDQ quantization (the demo bundle). Every figure is recomputed here from onnxruntime sessions of
our own on the corrupted inputs (themselves checked against scipy/numpy in test_robustness_transforms),
with scipy's softmax and entropy for the KL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from scipy.special import softmax
from scipy.stats import entropy

from worker.demo.models import DemoBundle
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders import load_model
from worker.engine.robustness import RobustnessParams, array_stats, corrupt, evaluate_robustness
from worker.engine.robustness import run as robustness_run
from worker.engine.types import TensorSpec

BATCH = 32


@pytest.fixture(scope="module")
def data(digits_bundle: DemoBundle) -> dict[str, np.ndarray]:
    with np.load(digits_bundle.test_npz) as npz:
        return {"input": npz["input"], "labels": npz["labels"]}


def run_document(bundle: DemoBundle, data: dict[str, np.ndarray], params: RobustnessParams) -> dict[str, Any]:
    golden, compressed = load_model(bundle.golden_onnx, "onnx"), load_model(bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    arrays = {"input": data["input"]}
    clean = compare_models(golden, compressed, arrays, data["labels"], fidelity)
    return evaluate_robustness(
        golden, compressed, arrays, data["labels"], fidelity, clean.per_sample, "classification", params
    )


@pytest.fixture(scope="module")
def document(digits_bundle: DemoBundle, data: dict[str, np.ndarray]) -> dict[str, Any]:
    return run_document(
        digits_bundle, data, RobustnessParams(slices=("gaussian_noise", "gaussian_blur"), seed=5)
    )


def logits(path: object, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return np.concatenate([session.run(None, {name: x[i : i + 7]})[0] for i in range(0, len(x), 7)]).astype(
        np.float64
    )


def reference(bundle: DemoBundle, x: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    g, c = logits(bundle.golden_onnx, x), logits(bundle.int8_onnx, x)
    kl = entropy(softmax(g, axis=1), softmax(c, axis=1), axis=1)
    return {
        "kl": kl,
        "kl_mean_nats": kl.mean(),
        "top1_agreement": np.mean(g.argmax(1) == c.argmax(1)),
        "golden_accuracy": np.mean(g.argmax(1) == labels),
        "compressed_accuracy": np.mean(c.argmax(1) == labels),
    }


def test_clean_and_slice_metrics_are_scipys(
    digits_bundle: DemoBundle, data: dict[str, np.ndarray], document: dict[str, Any]
) -> None:
    x, labels = data["input"], data["labels"]
    stats = array_stats(x)
    clean = reference(digits_bundle, x, labels)
    assert document["n_samples"] == len(x) and document["divergence"] == "kl"
    for key in ("kl_mean_nats", "top1_agreement", "golden_accuracy", "compressed_accuracy"):
        assert document["clean"][key] == pytest.approx(clean[key], rel=1e-4, abs=1e-9), key
    for slice_doc in document["slices"]:
        for point in slice_doc["points"]:
            corrupted = corrupt(slice_doc["name"], point["severity"], x, np.arange(len(x)), stats, seed=5)
            ref = reference(digits_bundle, corrupted, labels)
            where = f"{slice_doc['name']} {point['severity']}"
            for key in ("kl_mean_nats", "top1_agreement", "golden_accuracy", "compressed_accuracy"):
                assert point[key] == pytest.approx(ref[key], rel=1e-4, abs=1e-9), f"{where}: {key}"
            assert point["brittleness_ratio"] == pytest.approx(
                ref["kl_mean_nats"] / clean["kl_mean_nats"], rel=1e-4
            )
            worst = [w["sample_index"] for w in point["worst_samples"]]
            assert len(worst) == 10
            assert set(worst[:5]) <= set(np.argsort(-ref["kl"])[:10].tolist()), where  # ties aside


def test_the_int8_model_grows_more_brittle_with_noise(document: dict[str, Any]) -> None:
    noise = next(s for s in document["slices"] if s["name"] == "gaussian_noise")
    ratios = [p["brittleness_ratio"] for p in noise["points"]]
    assert [p["severity"] for p in noise["points"]] == [1, 2, 3]
    assert 1 < ratios[0] < ratios[1] < ratios[2]


def test_reruns_and_other_chunkings_give_the_same_document(
    digits_bundle: DemoBundle,
    data: dict[str, np.ndarray],
    document: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(robustness_run, "CHUNK_BUDGET_BYTES", 1)  # one batch per chunk: 12 chunks
    params = RobustnessParams(slices=("gaussian_noise", "gaussian_blur"), seed=5)
    assert robustness_run.chunk_rows({"input": data["input"]}, BATCH) == BATCH
    assert run_document(digits_bundle, data, params) == document


class Linear:
    """logits = x @ w on flat float features: a model whose inputs are not images."""

    def __init__(self, w: np.ndarray) -> None:
        self.w = w

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("x", ("batch", self.w.shape[0]), "float64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec("logits", ("batch", self.w.shape[1]), "float64")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"logits": np.asarray(feeds["x"]) @ self.w}


def test_flat_inputs_get_only_noise_and_max_samples_caps() -> None:
    rng = np.random.default_rng(3)
    w = rng.normal(size=(6, 4))
    x = rng.normal(size=(50, 6))
    golden, compressed = Linear(w), Linear(np.round(w, 1))
    fidelity = FidelityParams(batch_size=16)
    clean = compare_models(golden, compressed, {"x": x}, None, fidelity)
    doc = evaluate_robustness(
        golden, compressed, {"x": x}, None, fidelity, clean.per_sample, "classification",
        RobustnessParams(severities=(2,), max_samples=30),
    )  # fmt: skip
    assert [s["name"] for s in doc["slices"]] == ["gaussian_noise"]
    skipped = {s["name"]: s["reason"] for s in doc["skipped"]}
    assert set(skipped) == {
        "brightness", "contrast", "gaussian_blur", "occlusion", "jpeg", "token_replacement", "fgsm", "pgd"
    }  # fmt: skip
    assert "PyTorch golden model" in skipped["fgsm"] and "token-id" in skipped["token_replacement"]
    point = doc["slices"][0]["points"][0]
    assert doc["n_samples"] == point["n_samples"] == 30 and point["golden_accuracy"] is None
    noisy = corrupt("gaussian_noise", 2, x[:30], np.arange(30), array_stats(x[:30]))
    p, q = softmax(noisy @ w, axis=1), softmax(noisy @ np.round(w, 1), axis=1)
    assert point["kl_mean_nats"] == pytest.approx(entropy(p, q, axis=1).mean(), rel=1e-9)
