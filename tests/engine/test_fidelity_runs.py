"""How a comparison runs and what it keeps: progress after every batch and cancellation that
propagates, a fixed-batch runner called in padded chunks, per-sample damage judged concentrated or uniform,
a capped list of label flips, and parameters validated.

compare_models and bind_inputs with tiny numpy-backed fake runners (tests/support/fake_runners.py);
references computed independently from the runners' full-dataset outputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.fake_runners import C, D, LinearRunner, N, assert_tree_close, run_all, summary_json
from worker.engine.errors import JobCancelled
from worker.engine.fidelity.compare import FidelityParams, compare_models

# ---------------------------------------------------------------------------------------------- progress, batching


def test_progress_reports_every_batch_and_cancellation_propagates(data: dict[str, np.ndarray]) -> None:
    seen: list[tuple[int, int]] = []
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    compare_models(
        golden,
        compressed,
        {"x": data["x"]},
        None,
        FidelityParams(batch_size=100),
        lambda d, t: seen.append((d, t)),
    )
    assert seen == [(100, N), (200, N), (300, N), (360, N)]

    def cancel(done: int, total: int) -> None:
        if done >= 200:
            raise JobCancelled("cancelled by user")

    golden.calls.clear()
    with pytest.raises(JobCancelled):
        compare_models(golden, compressed, {"x": data["x"]}, None, FidelityParams(batch_size=100), cancel)
    assert golden.calls == [100, 100]


def test_fixed_batch_runner_is_called_in_padded_chunks(data: dict[str, np.ndarray]) -> None:
    fixed = LinearRunner(data["w_noisy"], input_shape=(4, D))
    dynamic = LinearRunner(data["w_noisy"])
    x = data["x"][:30]
    a = compare_models(LinearRunner(data["w"]), fixed, {"x": x}, None, FidelityParams(batch_size=9))
    b = compare_models(LinearRunner(data["w"]), dynamic, {"x": x}, None, FidelityParams(batch_size=9))
    assert set(fixed.calls) == {4}
    assert_tree_close(summary_json(a), summary_json(b))


def test_concentration_verdicts(data: dict[str, np.ndarray]) -> None:
    x = data["x"]
    hot = np.zeros(N, dtype=bool)
    hot[[5, 77, 200]] = True

    def perturb_few(xb: np.ndarray, y: np.ndarray) -> np.ndarray:
        y = y.copy()
        rows = np.isin(xb[:, 0], x[hot, 0])
        y[rows] = y[rows][:, ::-1]
        return y

    golden = LinearRunner(data["w"])
    report = compare_models(
        golden, LinearRunner(data["w"], transform=perturb_few), {"x": x}, None, FidelityParams()
    )
    conc = report.per_sample_summary["concentration"]
    kl = report.per_sample["kl"]
    assert set(np.flatnonzero(kl > 0)) == set(np.flatnonzero(hot))
    assert conc["verdict"] == "concentrated" and conc["worst_1pct_share"] == pytest.approx(1.0)

    report = compare_models(golden, LinearRunner(data["w"] * 1.3), {"x": x}, None, FidelityParams())
    conc = report.per_sample_summary["concentration"]
    kl = np.sort(report.per_sample["kl"])[::-1]
    assert conc["worst_10pct_share"] == pytest.approx(kl[:36].sum() / kl.sum(), rel=1e-12)
    assert conc["worst_1pct_share"] == pytest.approx(kl[:4].sum() / kl.sum(), rel=1e-12)
    assert kl[:36].sum() < 0.5 * kl.sum()  # a temperature change spreads KL over every sample
    assert conc["verdict"] == "uniform"


def test_label_flip_list_is_capped(data: dict[str, np.ndarray]) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2500, D))
    golden, other = LinearRunner(data["w"]), LinearRunner(rng.normal(size=(D, C)))
    m = summary_json(compare_models(golden, other, {"x": x}, None, FidelityParams(batch_size=500)))[
        "outputs"
    ]["logits"]
    expected = int(np.sum(run_all(golden, x).argmax(1) != run_all(other, x).argmax(1)))
    assert m["label_flips"]["count"] == expected > 1000
    assert m["label_flips"]["stored"] == 1000 and m["label_flips"]["capped"] is True


def test_params_validation() -> None:
    with pytest.raises(ValueError):
        FidelityParams(batch_size=0)
    with pytest.raises(ValueError):
        FidelityParams(top_k=0)
    with pytest.raises(ValueError):
        FidelityParams(threshold_kl=-1.0)
    with pytest.raises(ValueError, match="unknown task 'translation'"):
        FidelityParams(task="translation")
