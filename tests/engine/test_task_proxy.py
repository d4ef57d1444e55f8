"""Does the cheap proxy predict the task? (worker/engine/tasks/proxy.py, issue 30): Spearman's rho and its
p-value equal scipy's on the same kept samples, the sign reads "divergence predicts task loss" as positive
for both metric directions, undefined samples are excluded and counted, SQNR +∞ is the least divergent, and
the disagreement order is the one built by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from worker.engine.tasks.proxy import (
    PROXY_KL,
    PROXY_SQNR,
    choose_proxy,
    correlation,
    higher_is_better,
    proxy_document,
    with_deltas,
)


def _table(kl: np.ndarray, sqnr: np.ndarray | None = None) -> dict[str, np.ndarray]:
    return {"kl": kl, "sqnr_db": np.zeros_like(kl) if sqnr is None else sqnr}


def test_rho_and_p_equal_scipy_on_the_kept_samples() -> None:
    rng = np.random.default_rng(3)
    kl = rng.gamma(1.0, 0.1, 200)
    wer = 2.0 * kl + rng.normal(0, 0.1, 200)
    kl[[5, 17]] = np.nan  # a non-finite sample: no KL
    wer[[17, 40, 41]] = np.nan  # an utterance with no reference words
    found = correlation(kl, wer)
    keep = np.isfinite(kl) & np.isfinite(wer)
    expected = spearmanr(kl[keep], wer[keep])
    assert found["n"] == 196 and found["n_excluded"] == 4 and found["n_exact"] == 0
    assert found["spearman_rho"] == pytest.approx(float(expected.statistic), abs=1e-12)
    assert found["p_value"] == pytest.approx(float(expected.pvalue), rel=1e-9)
    assert found["spearman_rho"] > 0.5  # built to predict


def test_a_higher_is_better_metric_is_negated_so_prediction_reads_positive() -> None:
    rng = np.random.default_rng(4)
    kl = rng.gamma(1.0, 0.1, 100)
    iou = 1.0 - kl + rng.normal(0, 0.02, 100)  # more divergence, less IoU: the proxy predicts the loss
    document = proxy_document(
        _table(kl), {"iou_vs_golden": iou}, task="segmentation", task_output="logits", proxy_output="logits"
    )
    [metric] = document["metrics"]
    assert metric["higher_is_better"] is True and document["proxy"] == PROXY_KL
    assert metric["spearman_rho"] == pytest.approx(-float(spearmanr(kl, iou).statistic), abs=1e-12)
    assert metric["spearman_rho"] > 0.8


def test_the_disagreement_order_is_the_one_built_by_hand() -> None:
    # Divergence ranks 1..8 (sample i has rank i + 1). The loss follows it except: sample 0 has the worst loss
    # (loss rank 8, gap +7), sample 7 the best (loss rank 1, gap −7), samples 3 and 4 swap (gaps ±1).
    divergence = np.arange(8, dtype=np.float64)
    loss = np.array([100.0, 2, 3, 5, 4, 6, 7, 0])
    found = correlation(divergence, loss, top=4)
    gaps = [(row["sample_index"], row["rank_gap"]) for row in found["disagreements"]]
    assert gaps == [(0, 7.0), (7, -7.0), (3, 1.0), (4, -1.0)]  # |gap| 7, 7, then 1, 1 (ties by index)
    assert (
        found["disagreements"][0]["loss_rank"] == 8.0 and found["disagreements"][0]["divergence_rank"] == 1.0
    )


def test_exact_samples_are_the_least_divergent_and_undefined_ones_are_excluded() -> None:
    sqnr = np.array([np.inf, 40.0, 30.0, 20.0, 10.0, np.nan, -np.inf])
    name, divergence = choose_proxy(_table(np.full(7, np.nan), sqnr))
    assert name == PROXY_SQNR
    wer = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    found = correlation(divergence, wer)
    assert found["n"] == 5 and found["n_excluded"] == 2 and found["n_exact"] == 1
    assert found["spearman_rho"] == pytest.approx(1.0)  # lower SQNR, more WER: perfectly predicted
    assert found["disagreements"][0]["rank_gap"] == 0.0


def test_too_few_or_constant_samples_give_no_rho_and_say_why() -> None:
    few = correlation(np.array([1.0, 2.0, np.nan]), np.array([1.0, 2.0, 3.0]))
    assert few["spearman_rho"] is None and "at least 3" in few["undefined"]
    flat = correlation(np.array([1.0, 2.0, 3.0, 4.0]), np.zeros(4))
    assert flat["spearman_rho"] is None and "task value" in flat["undefined"]
    assert flat["disagreements"] == []


def test_directions_and_deltas() -> None:
    for name in ("iou_vs_golden", "pixel_agreement", "boundary_f1_vs_golden", "miou_delta"):
        assert higher_is_better(name), name
    for name in ("wer_vs_golden", "cer_vs_golden", "wer_golden", "wer_delta", "miou_drop"):
        assert not higher_is_better(name), name
    values = with_deltas({"wer_golden": np.array([0.5, 0.0]), "wer_compressed": np.array([1.0, 0.25])})
    np.testing.assert_array_equal(values["wer_delta"], [0.5, 0.25])


def test_a_task_value_array_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="per-sample values"):
        proxy_document(
            _table(np.ones(4)), {"wer_vs_golden": np.ones(3)}, task="ctc", task_output="o", proxy_output="o"
        )
