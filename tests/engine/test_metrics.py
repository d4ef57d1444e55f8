"""The pure-numpy metrics against independent references (scipy, scikit-learn, direct loops)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.spatial.distance import jensenshannon
from scipy.special import log_softmax as scipy_log_softmax
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics import r2_score, top_k_accuracy_score
from sklearn.neighbors import NearestNeighbors

from worker.engine.metrics import agreement, calibration, distributions, numerical

LN2 = math.log(2.0)


def random_logits(seed: int, n: int = 200, c: int = 10) -> np.ndarray:
    """Logits with a spread of scales per row, from almost uniform to almost one-hot."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.01, 12.0, size=(n, 1))
    return rng.normal(size=(n, c)) * scale + rng.normal(0, 50, size=(n, 1))


def pair(seed: int, n: int = 200, c: int = 10, noise: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    a = random_logits(seed, n, c)
    b = a + np.random.default_rng(seed + 1000).normal(0, noise, size=a.shape)
    return a, b


# ---------------------------------------------------------------------------------------------- distributions


def test_log_softmax_matches_scipy_and_is_stable() -> None:
    a = random_logits(0)
    np.testing.assert_allclose(
        distributions.log_softmax(a), scipy_log_softmax(a, axis=-1), rtol=0, atol=1e-12
    )
    huge = np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]])
    out = distributions.log_softmax(huge)
    assert np.all(np.isfinite(out[:, :2]))
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(out[1], np.log(1 / 3), rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_kl_matches_scipy_entropy_both_directions(seed: int) -> None:
    a, b = pair(seed)
    lp, lq = distributions.log_softmax(a), distributions.log_softmax(b)
    p, q = softmax(a, axis=-1), softmax(b, axis=-1)
    np.testing.assert_allclose(distributions.kl(lp, lq), scipy_entropy(p, q, axis=-1), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(
        distributions.reverse_kl(lp, lq), scipy_entropy(q, p, axis=-1), rtol=1e-7, atol=1e-12
    )


def test_kl_is_not_symmetric() -> None:
    lp = np.log(np.array([[0.9, 0.1]]))
    lq = np.log(np.array([[0.5, 0.5]]))
    # closed forms: 0.9 ln(1.8) + 0.1 ln(0.2) and 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1)
    assert distributions.kl(lp, lq)[0] == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2), rel=1e-12)
    assert distributions.reverse_kl(lp, lq)[0] == pytest.approx(
        0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(5.0), rel=1e-12
    )


def test_kl_equals_cross_entropy_minus_entropy() -> None:
    a, b = pair(1)
    lp, lq = distributions.log_softmax(a), distributions.log_softmax(b)
    ce, h = distributions.cross_entropy(lp, lq), distributions.entropy(lp)
    np.testing.assert_allclose(distributions.kl(lp, lq), ce - h, rtol=1e-9, atol=1e-10)
    p, q = softmax(a, axis=-1), softmax(b, axis=-1)
    np.testing.assert_allclose(h, scipy_entropy(p, axis=-1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ce, -(p * np.log(q)).sum(axis=-1), rtol=1e-9, atol=1e-10)


def test_entropy_extremes() -> None:
    c = 7
    assert distributions.entropy(distributions.log_softmax(np.zeros((1, c))))[0] == pytest.approx(math.log(c))
    one_hot = distributions.log_softmax(np.array([[0.0, -1e6, -1e6]]))
    assert distributions.entropy(one_hot)[0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_divergences_are_non_negative_and_bounded(seed: int) -> None:
    rng = np.random.default_rng(seed)
    c = int(rng.integers(2, 50))
    a = rng.normal(size=(100, c)) * rng.uniform(0.1, 30)
    b = rng.normal(size=(100, c)) * rng.uniform(0.1, 30)
    lp, lq = distributions.log_softmax(a), distributions.log_softmax(b)
    assert np.all(distributions.kl(lp, lq) >= -1e-12)
    assert np.all(distributions.reverse_kl(lp, lq) >= -1e-12)
    j = distributions.js(lp, lq)
    assert np.all(j >= -1e-12)
    assert np.all(j <= LN2 + 1e-12)
    tv = distributions.total_variation(lp, lq)
    assert np.all((tv >= 0) & (tv <= 1 + 1e-12))


@pytest.mark.parametrize("seed", range(3))
def test_js_matches_scipy_jensenshannon_squared(seed: int) -> None:
    a, b = pair(seed, noise=2.0)
    lp, lq = distributions.log_softmax(a), distributions.log_softmax(b)
    p, q = softmax(a, axis=-1), softmax(b, axis=-1)
    expected = jensenshannon(p, q, axis=-1) ** 2  # natural log by default
    np.testing.assert_allclose(distributions.js(lp, lq), expected, rtol=1e-6, atol=1e-12)


def test_js_reaches_ln2_for_disjoint_distributions() -> None:
    lp = distributions.log_softmax(np.array([[0.0, -800.0]]))
    lq = distributions.log_softmax(np.array([[-800.0, 0.0]]))
    assert distributions.js(lp, lq)[0] == pytest.approx(LN2, rel=1e-12)
    assert distributions.total_variation(lp, lq)[0] == pytest.approx(1.0, rel=1e-12)


def test_identical_distributions_give_exact_zero() -> None:
    a = random_logits(3)
    lp = distributions.log_softmax(a)
    lq = distributions.log_softmax(a.copy())
    for fn in (distributions.kl, distributions.reverse_kl, distributions.js, distributions.total_variation):
        assert np.all(fn(lp, lq) == 0.0), fn.__name__


def test_total_variation_matches_direct_formula() -> None:
    a, b = pair(4, noise=1.0)
    p, q = softmax(a, axis=-1), softmax(b, axis=-1)
    expected = [
        0.5 * sum(abs(pi - qi) for pi, qi in zip(pr, qr, strict=True)) for pr, qr in zip(p, q, strict=True)
    ]
    got = distributions.total_variation(distributions.log_softmax(a), distributions.log_softmax(b))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_bits_are_nats_over_ln2() -> None:
    a, b = pair(5)
    p, q = softmax(a, axis=-1), softmax(b, axis=-1)
    nats = distributions.kl(distributions.log_softmax(a), distributions.log_softmax(b))
    np.testing.assert_allclose(distributions.to_bits(nats), nats / LN2, rtol=0, atol=0)
    np.testing.assert_allclose(
        distributions.to_bits(nats), scipy_entropy(p, q, base=2, axis=-1), rtol=1e-7, atol=1e-12
    )


def test_probabilities_to_log_clamps_and_renormalises() -> None:
    probs = np.array([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    lp = distributions.probabilities_to_log(probs, eps=1e-6)
    assert np.all(np.isfinite(lp))
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=1e-12)
    expected_first = np.log(np.array([1.0, 1e-6, 1e-6]) / (1.0 + 2e-6))
    np.testing.assert_allclose(lp[0], expected_first, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(lp[1], np.log([0.2, 0.3, 0.5]), rtol=1e-12)
    # KL against a one-hot with exact zeros stays finite
    lq = distributions.probabilities_to_log(np.array([[0.0, 1.0, 0.0]]))
    assert np.isfinite(distributions.kl(distributions.probabilities_to_log(probs[:1]), lq)[0])


def test_looks_like_probabilities() -> None:
    p = softmax(random_logits(6), axis=-1)
    assert distributions.looks_like_probabilities(p)
    assert not distributions.looks_like_probabilities(random_logits(6))
    assert not distributions.looks_like_probabilities(p * 1.01)
    assert distributions.looks_like_probabilities(p + 1e-5)  # within the 1e-3 tolerance per row
    with_nan = p.copy()
    with_nan[0, 0] = np.nan
    assert distributions.looks_like_probabilities(with_nan)  # non-finite rows are ignored
    assert not distributions.looks_like_probabilities(np.full((2, 3), np.nan))
    negative = p.copy()
    negative[1, :2] = [-0.1, negative[1, 0] + negative[1, 1] + 0.1]
    assert not distributions.looks_like_probabilities(negative)


# ---------------------------------------------------------------------------------------------- agreement


def test_top1_match_and_label_flips() -> None:
    a, b = pair(7, noise=2.0)
    match = agreement.top1_match(a, b)
    expected = [int(np.argmax(x)) == int(np.argmax(y)) for x, y in zip(a, b, strict=True)]
    assert match.tolist() == expected
    flips = agreement.label_flips(agreement.top1(a), agreement.top1(b), offset=100)
    expected_idx = [100 + i for i, same in enumerate(expected) if not same]
    assert flips.indices.tolist() == expected_idx
    assert flips.golden.tolist() == [int(np.argmax(a[i - 100])) for i in expected_idx]
    assert flips.compressed.tolist() == [int(np.argmax(b[i - 100])) for i in expected_idx]
    assert 0 < len(flips) < len(a)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_topk_agreement_matches_sklearn(k: int) -> None:
    a, b = pair(8, c=12, noise=3.0)
    got = agreement.topk_agreement(a, b, k).mean()
    y_true = np.argmax(a, axis=1)
    expected = top_k_accuracy_score(y_true, b, k=k, labels=np.arange(a.shape[1]))
    assert got == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("k", [1, 2, 5, 10, 50])
def test_topk_overlap_matches_sets(k: int) -> None:
    a, b = pair(9, c=10, noise=3.0)
    kk = min(k, a.shape[1])
    expected = [
        len(set(np.argsort(-x)[:kk].tolist()) & set(np.argsort(-y)[:kk].tolist())) / kk
        for x, y in zip(a, b, strict=True)
    ]
    np.testing.assert_allclose(agreement.topk_overlap(a, b, k), expected, rtol=0, atol=1e-15)


def test_in_topk_matches_sklearn_top_k_accuracy() -> None:
    a = random_logits(10, c=8)
    labels = np.random.default_rng(10).integers(0, 8, size=a.shape[0])
    for k in (1, 2, 5):
        expected = top_k_accuracy_score(labels, a, k=k, labels=np.arange(8))
        assert agreement.in_topk(a, labels, k).mean() == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("block", [1, 7, 10_000])
def test_nearest_neighbour_agreement_matches_sklearn(block: int) -> None:
    rng = np.random.default_rng(11)
    g = rng.normal(size=(120, 6))
    c = g + rng.normal(0, 0.4, size=g.shape)
    share, per = agreement.nearest_neighbour_agreement(g, c, block=block)

    def nn(x: np.ndarray) -> np.ndarray:
        idx = NearestNeighbors(n_neighbors=2, metric="cosine", algorithm="brute").fit(x).kneighbors(x)[1]
        return np.where(idx[:, 0] == np.arange(len(x)), idx[:, 1], idx[:, 0])

    expected = nn(g) == nn(c)
    assert per.tolist() == expected.tolist()
    assert share == pytest.approx(expected.mean())
    assert 0 < share < 1
    assert agreement.nearest_neighbour_agreement(g, g.copy(), block=block)[0] == 1.0


# ---------------------------------------------------------------------------------------------- calibration


def reference_ece_mce(conf: np.ndarray, correct: np.ndarray, n_bins: int = 15) -> tuple[float, float]:
    """Loop-based ECE/MCE with bins (m/n, (m+1)/n] (the first also holding 0), written independently."""
    total = len(conf)
    ece, mce = 0.0, 0.0
    for m in range(n_bins):
        lo, hi = m / n_bins, (m + 1) / n_bins
        members = [i for i in range(total) if (conf[i] > lo or (m == 0 and conf[i] >= 0)) and conf[i] <= hi]
        if not members:
            continue
        acc = sum(bool(correct[i]) for i in members) / len(members)
        avg_conf = sum(float(conf[i]) for i in members) / len(members)
        ece += len(members) / total * abs(acc - avg_conf)
        mce = max(mce, abs(acc - avg_conf))
    return ece, mce


def test_ece_and_mce_match_loop_reference() -> None:
    rng = np.random.default_rng(12)
    logits = random_logits(12, n=400, c=6) * 0.2
    probs = softmax(logits, axis=-1)
    labels = rng.integers(0, 6, size=400)
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    bins = calibration.ReliabilityBins()
    bins.update(conf, correct)
    ece, mce = reference_ece_mce(conf, correct)
    assert bins.ece() == pytest.approx(ece, rel=1e-12, abs=1e-15)
    assert bins.mce() == pytest.approx(mce, rel=1e-12, abs=1e-15)
    assert bins.total == 400
    assert ece > 0.01  # the setup is miscalibrated, so the check is not vacuous


def test_reliability_bins_stream_and_edges() -> None:
    rng = np.random.default_rng(13)
    conf = rng.uniform(0, 1, size=1000)
    conf[:4] = [0.0, 1.0, 1 / 15, 0.5]
    correct = rng.uniform(size=1000) < conf
    whole = calibration.ReliabilityBins()
    whole.update(conf, correct)
    streamed = calibration.ReliabilityBins()
    for start in range(0, 1000, 7):
        part = calibration.ReliabilityBins()
        part.update(conf[start : start + 7], correct[start : start + 7])
        streamed.merge(part)
    assert streamed.count.tolist() == whole.count.tolist()
    assert streamed.ece() == pytest.approx(whole.ece(), rel=1e-12)
    assert streamed.mce() == pytest.approx(whole.mce(), rel=1e-12)
    assert calibration.bin_index(np.array([0.0, 1.0, 0.5, 1e-9])).tolist() == [0, 14, 7, 0]
    ece, mce = reference_ece_mce(conf, correct)
    assert whole.ece() == pytest.approx(ece, rel=1e-12)
    assert whole.mce() == pytest.approx(mce, rel=1e-12)
    d = whole.to_dict()
    json.dumps(d, allow_nan=False)
    assert len(d["bins"]) == 15 and sum(b["count"] for b in d["bins"]) == 1000


def test_perfect_calibration_and_empty_bins() -> None:
    bins = calibration.ReliabilityBins()
    bins.update(np.array([1.0, 1.0, 0.5, 0.5]), np.array([True, True, True, False]))
    assert bins.ece() == 0.0 and bins.mce() == 0.0
    d = bins.to_dict()
    assert d["bins"][0]["confidence"] is None and d["bins"][0]["count"] == 0
    empty = calibration.ReliabilityBins()
    assert math.isnan(empty.ece()) and empty.to_dict()["ece"] is None


# ---------------------------------------------------------------------------------------------- numerical


def test_per_sample_numerical_metrics_match_direct_formulas() -> None:
    rng = np.random.default_rng(14)
    a = rng.normal(size=(30, 3, 4))
    b = a + rng.normal(0, 0.1, size=a.shape)
    ps = numerical.per_sample(a, b)
    for i in range(30):
        x, y = a[i].ravel(), b[i].ravel()
        assert ps.mse[i] == pytest.approx(np.mean((x - y) ** 2), rel=1e-12)
        assert ps.mae[i] == pytest.approx(np.mean(np.abs(x - y)), rel=1e-12)
        assert ps.max_abs[i] == pytest.approx(np.max(np.abs(x - y)), rel=1e-12)
        assert ps.cosine[i] == pytest.approx(1.0 - scipy_cosine_distance(x, y), rel=1e-12)
        assert ps.sqnr_db[i] == pytest.approx(10 * math.log10(np.sum(x**2) / np.sum((x - y) ** 2)), rel=1e-12)
    np.testing.assert_allclose(numerical.mse(a, b), ps.mse, rtol=1e-15)
    np.testing.assert_allclose(numerical.mae(a, b), ps.mae, rtol=1e-15)
    np.testing.assert_allclose(numerical.max_abs(a, b), ps.max_abs, rtol=1e-15)


def test_cosine_edge_cases() -> None:
    a = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1e-3, 7.0, -2.5]])
    b = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [1e-3, 7.0, -2.5]])
    assert numerical.cosine(a, b).tolist() == [1.0, 1.0, 0.0, -1.0, 1.0]


def test_sqnr_dataset_formula_and_infinity() -> None:
    rng = np.random.default_rng(15)
    a = rng.normal(size=(50, 8))
    b = a + rng.normal(0, 0.05, size=a.shape)
    acc = numerical.NumericalAccumulator()
    for start in range(0, 50, 9):
        acc.update(a[start : start + 9], b[start : start + 9])
    expected = 10 * math.log10(float(np.sum(a**2)) / float(np.sum((a - b) ** 2)))
    assert acc.sqnr_db() == pytest.approx(expected, rel=1e-12)
    d = acc.to_dict()
    assert d["sqnr_db"] == pytest.approx(expected, rel=1e-12) and d["sqnr_db_infinite"] is False
    assert d["mse"] == pytest.approx(np.mean((a - b) ** 2), rel=1e-12)
    assert d["mae"] == pytest.approx(np.mean(np.abs(a - b)), rel=1e-12)
    assert d["max_abs_err"] == np.max(np.abs(a - b))
    cos = [1.0 - scipy_cosine_distance(x, y) for x, y in zip(a, b, strict=True)]
    assert d["cosine_mean"] == pytest.approx(np.mean(cos), rel=1e-12)
    assert d["cosine_min"] == pytest.approx(np.min(cos), rel=1e-12)

    same = numerical.NumericalAccumulator()
    same.update(a, a.copy())
    assert same.sqnr_db() == float("inf")
    assert numerical.json_sqnr(same.sqnr_db()) == {"sqnr_db": None, "sqnr_db_infinite": True}
    assert numerical.sqnr_db(0.0, 1.0) == float("-inf")
    assert numerical.json_sqnr(float("-inf")) == {"sqnr_db": None, "sqnr_db_infinite": False}
    json.dumps(same.to_dict(), allow_nan=False)


@pytest.mark.parametrize("columns", [1, 4])
def test_r2_streams_and_matches_sklearn(columns: int) -> None:
    rng = np.random.default_rng(16)
    golden = rng.normal(1000.0, 2.0, size=(300, columns))  # a large mean tests the variance merge
    compressed = golden + rng.normal(0, 0.7, size=golden.shape)
    acc = numerical.RegressionAccumulator()
    for start in range(0, 300, 11):
        acc.update(golden[start : start + 11], compressed[start : start + 11])
    assert acc.r2() == pytest.approx(r2_score(golden, compressed), rel=1e-10)


def test_r2_constant_column_follows_sklearn_convention() -> None:
    golden = np.column_stack([np.full(10, 3.0), np.arange(10.0)])
    for compressed in (golden.copy(), golden + np.array([0.5, 0.0])):
        acc = numerical.RegressionAccumulator()
        acc.update(golden, compressed)
        assert acc.r2() == pytest.approx(r2_score(golden, compressed), abs=1e-15)
