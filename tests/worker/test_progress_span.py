"""A fidelity job's bar counts its work (worker/jobs/progress_span.py): each step owns a span in proportion
to the samples it compares and moves through it with the count its message names, so "16 of 18 slices"
is never shown beside a bar held where the clean pass left it (issue 35)."""

from __future__ import annotations

import re
import uuid
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from backend.contracts import FidelityJobParams
from backend.robustness_contracts import RobustnessOptions
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.jobs.progress_span import fidelity_spans, generation_work, robustness_work, span_fraction
from worker.jobs.robustness_step import robustness_results

from .test_robustness_step import Scaled


def test_span_fraction_is_the_count_within_its_span() -> None:
    assert span_fraction(0.2, 0.6, 0, 18) == pytest.approx(0.2)
    assert span_fraction(0.2, 0.6, 16, 18) == pytest.approx(0.2 + 0.4 * 16 / 18)
    assert span_fraction(0.0, 1.0, 5, 5) == pytest.approx(0.999)  # the finish writes 1.0
    assert span_fraction(0.3, 0.5, 7, 0) == pytest.approx(0.5)  # no units: the step is done
    assert span_fraction(0.3, 0.5, 9, 4) == pytest.approx(0.5)  # never past its end


def test_spans_weigh_the_steps_by_the_samples_they_compare() -> None:
    ood = uuid.uuid4()
    options = RobustnessOptions(slices=["gaussian_noise", "brightness"], max_samples=50, ood_dataset_id=ood)
    # 2 slices x 3 severities x 50 samples, the second set counted as 50 more
    assert robustness_work(options, 100) == (300, 50)
    assert robustness_work(options, 30) == (180, 30)  # max_samples above n: n
    assert robustness_work(None, 100) == (0, 0)
    # 100 clean + 20 re-run + 300 + 50 + 3 x 20 profiled = 530 units
    spans = fidelity_spans(100, 20, 20, (300, 50))
    assert spans.generation == spans.rerun == pytest.approx(100 / 530)  # no generation: no span
    assert spans.robustness == pytest.approx(120 / 530)
    assert spans.ood == pytest.approx(420 / 530)
    assert spans.profile == pytest.approx(470 / 530)
    assert fidelity_spans(10, 0, 0, (0, 0)) == (1.0,) * 5  # a plain comparison owns the whole bar
    # 4 prompts x 16 new tokens after 4 clean samples: 4 + 64 = 68 units
    assert generation_work(4, 16) == 64
    spans = fidelity_spans(4, 0, 0, (0, 0), generation_work(4, 16))
    assert spans.generation == pytest.approx(4 / 68)
    assert spans.rerun == spans.profile == 1.0


def test_robustness_bar_says_what_its_message_says() -> None:
    x = np.random.default_rng(0).normal(size=(20, 3))
    runners = [Scaled(1.0), Scaled(0.9)]
    report = compare_models(runners[0], runners[1], {"x": x}, None, FidelityParams(batch_size=8))
    ood = uuid.uuid4()
    params = FidelityJobParams.model_validate(
        {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
        | {"robustness": {"ood_dataset_id": str(ood)}}
    )
    seen: list[tuple[float, str]] = []
    ctx = SimpleNamespace(progress=lambda fraction, message: seen.append((fraction, message)))
    read: dict[uuid.UUID, Any] = {ood: ("other", {"x": x[:12] + 1.0})}
    robustness_results(ctx, params, runners, {"x": x}, None, report, 0.2, read.__getitem__, spans=(0.6, 0.8))  # type: ignore[arg-type]
    slices = [(f, m) for f, m in seen if m.startswith("robustness:")]
    assert len(slices) == 3  # only gaussian_noise applies to flat inputs, at 3 severities
    for fraction, message in slices:
        match = re.match(r"robustness: (\d+) of (\d+)", message)
        assert match is not None
        done, total = int(match[1]), int(match[2])
        assert fraction == pytest.approx(0.2 + 0.4 * done / total)
    ood_seen = [(f, m) for f, m in seen if m.startswith("out-of-distribution data:")]
    assert ood_seen
    for fraction, message in ood_seen:
        match = re.match(r"out-of-distribution data: (\d+) of (\d+)", message)
        assert match is not None
        assert fraction == pytest.approx(0.6 + 0.2 * int(match[1]) / int(match[2]))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions)  # the bar never goes back
