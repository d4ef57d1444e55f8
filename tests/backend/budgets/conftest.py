"""The measured fidelity summary the budget tests share (one per module)."""

from __future__ import annotations

import pytest

from tests.support.budget_jobs import Measured


@pytest.fixture(scope="module")
def measured() -> Measured:
    m = Measured(noise=0.4)
    assert m.summary["primary_output"] == "logits"
    assert m.summary["outputs"]["logits"]["kl_mean_nats"] == pytest.approx(m.kl_mean, rel=1e-6)
    assert 0.5 < m.top1_match < 1.0, "the test needs a compressed model that flips some samples"
    return m
