"""Every fidelity metric matches an independent reference (scipy, scikit-learn, direct formulas): the
classification metrics, calibration (ECE), the numerical metrics and SQNR; streaming over batches equals one
batch, and identical models give exactly zero divergence.

compare_models and bind_inputs with tiny numpy-backed fake runners (tests/support/fake_runners.py);
references computed independently from the runners' full-dataset outputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics import accuracy_score, mean_squared_error, top_k_accuracy_score

from tests.support.fake_runners import C, LinearRunner, N, assert_tree_close, run_all, summary_json
from worker.engine.fidelity.compare import FidelityParams, compare_models

# ---------------------------------------------------------------------------------------------- classification


def test_classification_metrics_match_references(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    x, labels = data["x"], data["labels"]
    report = compare_models(golden, compressed, {"x": x}, labels, FidelityParams(batch_size=32, top_k=3))
    m = summary_json(report)["outputs"]["logits"]
    a, b = run_all(golden, x), run_all(compressed, x)
    p, q = softmax(a, axis=1), softmax(b, axis=1)

    kl = scipy_entropy(p, q, axis=1)
    assert m["kind"] == "classification"
    assert m["kl_mean_nats"] == pytest.approx(kl.mean(), rel=1e-9)
    assert m["kl_mean_bits"] == pytest.approx(scipy_entropy(p, q, axis=1, base=2).mean(), rel=1e-9)
    assert m["kl_reverse_mean_nats"] == pytest.approx(scipy_entropy(q, p, axis=1).mean(), rel=1e-9)
    assert m["kl_max_nats"] == pytest.approx(kl.max(), rel=1e-9)
    mix = (p + q) / 2
    js = 0.5 * scipy_entropy(p, mix, axis=1) + 0.5 * scipy_entropy(q, mix, axis=1)
    assert m["js_mean_nats"] == pytest.approx(js.mean(), rel=1e-9)
    assert m["cross_entropy_mean_nats"] == pytest.approx((-(p * np.log(q)).sum(axis=1)).mean(), rel=1e-9)
    assert m["entropy_golden_mean_nats"] == pytest.approx(scipy_entropy(p, axis=1).mean(), rel=1e-9)
    assert m["entropy_compressed_mean_nats"] == pytest.approx(scipy_entropy(q, axis=1).mean(), rel=1e-9)
    assert m["tv_mean"] == pytest.approx(0.5 * np.abs(p - q).sum(axis=1).mean(), rel=1e-9)

    g_cls, c_cls = a.argmax(axis=1), b.argmax(axis=1)
    assert m["top1_match"] == pytest.approx(accuracy_score(g_cls, c_cls))
    assert m["topk_agreement"] == pytest.approx(top_k_accuracy_score(g_cls, b, k=3, labels=np.arange(C)))
    assert m["confidence_shift"] == pytest.approx(q.max(axis=1).mean() - p.max(axis=1).mean(), rel=1e-9)
    flips = [i for i in range(N) if g_cls[i] != c_cls[i]]
    assert m["label_flips"]["count"] == len(flips) > 0
    assert [f["index"] for f in m["label_flips"]["items"]] == flips
    assert [f["compressed"] for f in m["label_flips"]["items"]] == c_cls[flips].tolist()

    lab = m["labels"]
    acc_g, acc_c = accuracy_score(labels, g_cls), accuracy_score(labels, c_cls)
    assert lab["golden_top1_accuracy"] == pytest.approx(acc_g)
    assert lab["compressed_top1_accuracy"] == pytest.approx(acc_c)
    assert lab["top1_accuracy_drop_pp"] == pytest.approx(100 * (acc_g - acc_c))
    top3_g = top_k_accuracy_score(labels, a, k=3, labels=np.arange(C))
    top3_c = top_k_accuracy_score(labels, b, k=3, labels=np.arange(C))
    assert lab["golden_topk_accuracy"] == pytest.approx(top3_g)
    assert lab["compressed_topk_accuracy"] == pytest.approx(top3_c)
    assert lab["topk_accuracy_drop_pp"] == pytest.approx(100 * (top3_g - top3_c))

    ps = report.per_sample
    np.testing.assert_allclose(ps["kl"], kl, rtol=1e-9, atol=1e-15)
    assert ps["golden_class"].tolist() == g_cls.tolist()
    assert ps["label"].tolist() == labels.tolist()
    expected_flag = (kl > 0.1) | (g_cls != c_cls)
    assert np.any((kl > 0.1) & (g_cls == c_cls))  # flagged by KL alone happens here
    relaxed = compare_models(golden, compressed, {"x": x}, None, FidelityParams(threshold_kl=None))
    assert relaxed.per_sample["flagged"].tolist() == (g_cls != c_cls).tolist()
    assert ps["flagged"].tolist() == expected_flag.tolist()
    assert report.per_sample_summary["n_flagged"] == int(expected_flag.sum())


def reference_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> tuple[float, list[int]]:
    """A loop over samples and bins (m/n, (m+1)/n], written independently of the implementation."""
    conf = [float(max(row)) for row in probs]
    correct = [int(np.argmax(row)) == int(y) for row, y in zip(probs, labels, strict=True)]
    ece, counts = 0.0, []
    for m in range(n_bins):
        lo, hi = m / n_bins, (m + 1) / n_bins
        idx = [i for i, c in enumerate(conf) if lo < c <= hi]
        counts.append(len(idx))
        if idx:
            gap = abs(sum(correct[i] for i in idx) / len(idx) - sum(conf[i] for i in idx) / len(idx))
            ece += len(idx) / len(conf) * gap
    return ece, counts


def test_calibration_matches_loop_reference(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"] * 2.0)
    x, labels = data["x"], data["labels"]
    report = compare_models(golden, compressed, {"x": x}, labels, FidelityParams(batch_size=50))
    cal = summary_json(report)["outputs"]["logits"]["labels"]["calibration"]
    for role, runner in (("golden", golden), ("compressed", compressed)):
        ece, counts = reference_ece(softmax(run_all(runner, x), axis=1), labels)
        assert cal[role]["ece"] == pytest.approx(ece, rel=1e-12)
        assert [b["count"] for b in cal[role]["bins"]] == counts
    assert cal["ece_shift"] == pytest.approx(cal["compressed"]["ece"] - cal["golden"]["ece"], rel=1e-12)


def test_numerical_metrics_and_sqnr_match_direct_formulas(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    x = data["x"]
    m = summary_json(compare_models(golden, compressed, {"x": x}, None, FidelityParams(batch_size=13)))
    out = m["outputs"]["logits"]
    a, b = run_all(golden, x), run_all(compressed, x)
    assert out["sqnr_db"] == pytest.approx(10 * math.log10(np.sum(a**2) / np.sum((a - b) ** 2)), rel=1e-12)
    assert out["sqnr_db_infinite"] is False
    assert out["mse"] == pytest.approx(mean_squared_error(a.ravel(), b.ravel()), rel=1e-12)
    assert out["mae"] == pytest.approx(np.abs(a - b).mean(), rel=1e-12)
    assert out["max_abs_err"] == pytest.approx(np.abs(a - b).max(), rel=1e-12)
    cos = [1 - scipy_cosine_distance(u, v) for u, v in zip(a, b, strict=True)]
    assert out["cosine_mean"] == pytest.approx(np.mean(cos), rel=1e-12)
    assert out["cosine_min"] == pytest.approx(np.min(cos), rel=1e-12)
    assert out["labels"] is None


def test_streaming_equals_one_batch(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    args = ({"x": data["x"]}, data["labels"])
    small = compare_models(golden, compressed, *args, FidelityParams(batch_size=7))
    whole = compare_models(golden, compressed, *args, FidelityParams(batch_size=10_000))
    assert len(golden.calls) == math.ceil(N / 7) + 1
    s, w = summary_json(small), summary_json(whole)
    s["params"].pop("batch_size")
    w["params"].pop("batch_size")
    assert_tree_close(s, w)
    assert small.per_sample.keys() == whole.per_sample.keys()
    for key in small.per_sample:
        np.testing.assert_allclose(small.per_sample[key], whole.per_sample[key], rtol=1e-12, atol=1e-15)


def test_identical_models_give_exactly_zero_divergence(data: dict[str, np.ndarray]) -> None:
    golden, same = LinearRunner(data["w"]), LinearRunner(data["w"].copy())
    report = compare_models(golden, same, {"x": data["x"]}, data["labels"], FidelityParams(batch_size=64))
    m = summary_json(report)["outputs"]["logits"]
    for key in (
        "kl_mean_nats",
        "kl_reverse_mean_nats",
        "js_mean_nats",
        "tv_mean",
        "kl_max_nats",
        "mse",
        "mae",
    ):
        assert m[key] == 0.0, key
    assert m["max_abs_err"] == 0.0
    assert m["top1_match"] == 1.0 and m["topk_agreement"] == 1.0 and m["topk_overlap"] == 1.0
    assert m["cosine_mean"] == 1.0 and m["cosine_min"] == 1.0
    assert m["sqnr_db"] is None and m["sqnr_db_infinite"] is True
    assert m["label_flips"]["count"] == 0 and m["confidence_shift"] == 0.0
    assert m["labels"]["top1_accuracy_drop_pp"] == 0.0
    assert np.all(report.per_sample["kl"] == 0.0) and not report.per_sample["flagged"].any()
    assert report.per_sample_summary["concentration"]["verdict"] == "uniform"
