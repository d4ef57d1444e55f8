"""Per-class damage (worker/engine/tasks/classification.py) on the digits CNN trained in the test session:
fp32 against a copy with 3-bit weights, compared by `compare_models` in uneven batches. Every figure is
checked against scikit-learn (confusion_matrix, per-class accuracy) and numpy/scipy computed here from
the two models' full logits."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
import torch
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics import accuracy_score, confusion_matrix

from worker.demo.models import DigitsCNN, DigitsSplit
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.fidelity.compare import FidelityParams, FidelityReport, compare_models
from worker.engine.types import TensorSpec

BATCH = 37  # does not divide the 360 test samples: the last batch is short
CLASSES = 10


class ModuleRunner:
    """A torch module as a Runner: input 'x' (batch, 1, 8, 8), output 'logits' (batch, 10)."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module.eval()

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("x", ("batch", 1, 8, 8), "float32")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec("logits", ("batch", CLASSES), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            return {"logits": self.module(torch.from_numpy(np.asarray(feeds["x"]))).numpy()}


@pytest.fixture(scope="module")
def low_bit_cnn(digits_cnn: DigitsCNN) -> torch.nn.Module:
    plan = {name: WeightQuant(3) for name in ("conv1", "conv2", "fc")}
    return compress_module(digits_cnn, plan)[0]


@pytest.fixture(scope="module")
def logits(
    digits_cnn: DigitsCNN, low_bit_cnn: torch.nn.Module, digits_split: DigitsSplit
) -> tuple[np.ndarray, np.ndarray]:
    x = torch.from_numpy(digits_split.x_test)
    with torch.inference_mode():
        return digits_cnn.eval()(x).double().numpy(), low_bit_cnn.eval()(x).double().numpy()


def _report(
    golden: torch.nn.Module, compressed: torch.nn.Module, split: DigitsSplit, labels: bool, confidence: float
) -> FidelityReport:
    arrays = {"x": split.x_test}
    return compare_models(
        ModuleRunner(golden),
        ModuleRunner(compressed),
        arrays,
        split.y_test if labels else None,
        FidelityParams(batch_size=BATCH, flip_confidence=confidence),
    )


def _dense(cells: list[list[int]]) -> np.ndarray:
    m = np.zeros((CLASSES, CLASSES), dtype=np.int64)
    for r, c, count in cells:
        m[r, c] = count
    return m


def test_per_class_with_labels_matches_sklearn(
    digits_cnn: DigitsCNN,
    low_bit_cnn: torch.nn.Module,
    digits_split: DigitsSplit,
    logits: tuple[np.ndarray, np.ndarray],
) -> None:
    g, c = logits
    y = digits_split.y_test
    p, q = softmax(g, axis=1), softmax(c, axis=1)
    g_pred, c_pred = g.argmax(axis=1), c.argmax(axis=1)
    assert (g_pred != c_pred).sum() >= 5, "3-bit weights should change some predictions"
    # The confident-flip threshold: the median top probability of the flips, so some pass and some do not.
    flipped = (g_pred == y) & (c_pred != y)
    threshold = float(np.median(np.minimum(p.max(axis=1), q.max(axis=1))[flipped]))

    report = _report(digits_cnn, low_bit_cnn, digits_split, labels=True, confidence=threshold)
    doc = report.classes_dict()
    assert doc is not None and doc["primary_output"] == "logits"
    cls = doc["outputs"]["logits"]
    assert cls["by"] == "label" and cls["n_samples"] == len(y) and cls["flip_confidence"] == threshold

    np.testing.assert_array_equal(
        _dense(cls["confusion"]["cells"]), confusion_matrix(g_pred, c_pred, labels=range(CLASSES))
    )
    kl = scipy_entropy(p, q, axis=1)
    for row in cls["classes"]:
        k = row["class_index"]
        sel = y == k
        assert row["n"] == sel.sum()
        assert row["golden_accuracy"] == pytest.approx(accuracy_score(y[sel], g_pred[sel]), abs=1e-12)
        assert row["compressed_accuracy"] == pytest.approx(accuracy_score(y[sel], c_pred[sel]), abs=1e-12)
        drop = 100 * (accuracy_score(y[sel], g_pred[sel]) - accuracy_score(y[sel], c_pred[sel]))
        assert row["accuracy_drop_pp"] == pytest.approx(drop, abs=1e-9)
        assert row["top1_agreement"] == pytest.approx(float((g_pred[sel] == c_pred[sel]).mean()), abs=1e-12)
        assert row["kl_mean_nats"] == pytest.approx(float(kl[sel].mean()), rel=1e-6, abs=1e-9)
    assert sorted(r["class_index"] for r in cls["classes"]) == list(range(CLASSES))
    drops = [r["accuracy_drop_pp"] for r in cls["classes"]]
    assert drops == sorted(drops, reverse=True), "most damaged classes first"

    confident = flipped & (p.max(axis=1) >= threshold) & (q.max(axis=1) >= threshold)
    assert 0 < confident.sum() < flipped.sum()
    flips = cls["confident_flips"]
    assert flips["count"] == confident.sum() and not flips["capped"]
    assert [f["index"] for f in flips["items"]] == np.flatnonzero(confident).tolist()
    for f in flips["items"]:
        i = f["index"]
        assert (f["label"], f["golden_class"], f["compressed_class"]) == (y[i], g_pred[i], c_pred[i])
        assert f["golden_probability"] == pytest.approx(p[i].max(), rel=1e-6)
        assert f["compressed_probability"] == pytest.approx(q[i].max(), rel=1e-6)
    per_class_flips = np.bincount(y[confident], minlength=CLASSES)
    assert {r["class_index"]: r["confident_flips"] for r in cls["classes"]} == {
        k: int(per_class_flips[k]) for k in range(CLASSES)
    }
    # The per-class document is not part of the summary (the summary has its own typed schema).
    assert "classes" not in report.summary_dict()["outputs"]["logits"]


def test_per_class_without_labels_groups_by_golden_prediction(
    digits_cnn: DigitsCNN,
    low_bit_cnn: torch.nn.Module,
    digits_split: DigitsSplit,
    logits: tuple[np.ndarray, np.ndarray],
) -> None:
    g, c = logits
    p, q = softmax(g, axis=1), softmax(c, axis=1)
    g_pred, c_pred = g.argmax(axis=1), c.argmax(axis=1)
    cls = _report(digits_cnn, low_bit_cnn, digits_split, labels=False, confidence=0.5).per_class["logits"]
    assert cls["by"] == "golden_prediction"
    counts = np.bincount(g_pred, minlength=CLASSES)
    for row in cls["classes"]:
        k = row["class_index"]
        assert row["n"] == counts[k]
        assert row["golden_accuracy"] is None and row["accuracy_drop_pp"] is None
        agree = float((c_pred[g_pred == k] == k).mean())
        assert row["top1_agreement"] == pytest.approx(agree, abs=1e-12)
    disagreement = [1 - r["top1_agreement"] for r in cls["classes"]]
    assert disagreement == sorted(disagreement, reverse=True)
    confident = (g_pred != c_pred) & (p.max(axis=1) >= 0.5) & (q.max(axis=1) >= 0.5)
    assert cls["confident_flips"]["count"] == confident.sum()
    assert all(f["label"] is None for f in cls["confident_flips"]["items"])


def test_flip_confidence_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="flip_confidence"):
        FidelityParams(flip_confidence=1.5)
    with pytest.raises(ValueError, match="pooling"):
        FidelityParams(pooling="max")  # type: ignore[arg-type]
