"""A real fidelity job's bar, as the worker writes it (every heartbeat recorded), on the demo's digits CNN
(float ONNX against its int8 QDQ copy) with robustness slices and a layer profile: it never goes back, and
it moves through the robustness step with the slices its message counts (issue 35: "25 %" beside "16 of 18
slices", then the bar fell back after the kernel gap's re-run)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend import job_lifecycle
from backend.api.app import create_app
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.fidelity_api import FidelityApi
from tests.support.services import stack_settings
from worker.demo.models import DemoBundle, write_demo_bundle
from worker.runtime import JobContext


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("progress_trace"), "progress")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> DemoBundle:
    return write_demo_bundle(tmp_path_factory.mktemp("progress_demo"))


@pytest.fixture
def api(settings: Settings, pg_url: str, bundle: DemoBundle) -> Iterator[FidelityApi]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as http:
        yield FidelityApi(http, settings, "progress", bundle.golden_onnx, bundle.int8_onnx, bundle.test_npz)
    truncate_all(pg_url)


def test_the_bar_never_goes_back_and_moves_with_the_slices(
    api: FidelityApi, bundle: DemoBundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[float, str]] = []
    heartbeat = job_lifecycle.heartbeat

    def recording(session, claim, progress=None, message=None):  # type: ignore[no-untyped-def]
        if progress is not None and message is not None:
            seen.append((progress, message))
        return heartbeat(session, claim, progress=progress, message=message)

    monkeypatch.setattr(job_lifecycle, "heartbeat", recording)
    progress = JobContext.progress

    def unthrottled(self: JobContext, fraction: float, message: str) -> None:
        self.min_write_interval_s = 0.0  # every report written (0.5 s apart otherwise): the whole trace
        progress(self, fraction, message)

    monkeypatch.setattr(JobContext, "progress", unthrottled)
    options = {"slices": ["gaussian_noise", "occlusion", "jpeg"], "severities": [1, 2, 3], "max_samples": 64}
    # a profile on fewer samples than the set: the ONNX pair's kernel gap re-runs them before the slices
    api.fidelity(layer_profile=True, layer_profile_samples=16, robustness=options)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions), seen
    # the units: n clean samples, 16 re-run by the kernel gap, 3 slices x 3 severities x 64 samples, the
    # profile's 16 samples weighed 3x
    n = len(np.load(bundle.test_npz)["labels"])
    total = n + 16 + 9 * 64 + 3 * 16
    slices = [(f, m) for f, m in seen if m.startswith("robustness:")]
    assert [m.split(" (")[0] for _, m in slices] == [
        f"robustness: {k} of 9 slices x severities" for k in range(1, 10)
    ]
    for k, (fraction, _) in enumerate(slices, start=1):
        assert fraction == pytest.approx((n + 16 + k * 64) / total)
    compared = [(f, m) for f, m in seen if re.fullmatch(r"\d+ of \d+ samples compared", m)]
    assert compared[-1] == (pytest.approx(n / total), f"{n} of {n} samples compared")
    profile = [f for f, m in seen if re.fullmatch(r"layer profile: \d+ of 16 samples", m)]
    assert profile[0] == pytest.approx((n + 16 + 9 * 64 + 3) / total)  # 1 of 16 profiled
