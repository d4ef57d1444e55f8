"""A shareable report (issue 17) in headless Chromium: the demo stack's finished fidelity job downloaded with its
page's "Download report (HTML)" button, then opened from file:// in a context with the network off and every
request that is not for the file aborted. The charts must have drawn (an SVG of non-zero size with marks in each),
the headline numbers must be the API's, and the file must not have asked for anything outside itself.

Needs the built dashboard (`npm ci && npm run build` in frontend/, which builds dist/offline.html too), Node and
Chromium, like test_dashboard.py, whose `tools` and `stack` fixtures it uses. The driver is
drive_offline_report.mjs; screenshots land in test-artifacts/browser/."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from backend.client import KneeboardClient
from tests.browser.test_dashboard import ADMIN_PASSWORD, ARTIFACTS, _wait_for_demo
from tests.browser.test_dashboard import (
    stack as stack,  # module-scoped fixtures: a stack of this module's own
)
from tests.browser.test_dashboard import tools as tools
from tests.support.services import REPO_ROOT, Process

pytestmark = pytest.mark.browser

DRIVER = REPO_ROOT / "tests" / "browser" / "drive_offline_report.mjs"


def _number(shown: str) -> float:
    return float(shown.replace(",", "").split()[0])


def test_a_downloaded_fidelity_report_draws_its_charts_offline(
    tools: tuple[str, str], stack: tuple[str, Process, str]
) -> None:
    node, chromium = tools
    base, proc, token = stack
    _wait_for_demo(base, proc, token)
    client = KneeboardClient(base, token=token)
    demo = next(p for p in client.projects() if p["name"] == "demo")
    jobs = client.http.get("/jobs", params={"project_id": demo["id"], "kind": "fidelity"}).json()["items"]
    job_id = jobs[0]["id"]
    config = {
        "base": base,
        "jobHash": f"#/jobs/{job_id}",
        "chromium": chromium,
        "artifacts": str(ARTIFACTS),
        "username": "admin",
        "password": ADMIN_PASSWORD,
    }
    result = subprocess.run(
        [node, str(DRIVER), json.dumps(config)], capture_output=True, text=True, timeout=180, cwd=REPO_ROOT
    )
    lines = result.stdout.strip().splitlines()
    assert lines, f"the driver printed nothing:\n{result.stderr[-4000:]}"
    seen: dict[str, Any] = json.loads(lines[-1])
    assert result.returncode == 0 and "error" not in seen, (
        f"{seen.get('error')}\nsteps: {seen['steps']}\n{result.stderr[-3000:]}\nAPI log:\n{proc.log()[-3000:]}"
    )

    assert seen["filename"] == f"kneeboard-fidelity-{job_id}.html"
    assert seen["outsideRequests"] == [], "the file asked for something outside itself"
    assert not seen["consoleErrors"], seen["consoleErrors"]
    assert seen["downloadButtons"] == 0 and "Offline copy" in seen["banner"]

    # Every chart drew: an SVG of non-zero size with marks in it; the histogram and both reliability diagrams
    # are among them (the demo's labelled digits set).
    charts = {c["title"]: c for c in seen["charts"]}
    for title, chart in charts.items():
        assert chart["svgs"] >= 1 and chart["width"] > 0 and chart["height"] > 0, (title, chart)
        assert chart["marks"] > 0, (title, chart)
    assert {"Per-sample KL histogram", "Reliability: golden model", "Reliability: compressed model"} <= set(
        charts
    ), sorted(charts)

    # The headline numbers: the file shows what the dashboard shows, and those are the API's.
    assert seen["offlineCards"] == seen["onlineCards"] and len(seen["offlineCards"]) >= 6
    report = client.http.get(f"/jobs/{job_id}/fidelity").json()["summary"]
    metrics = report["outputs"][report["primary_output"]]
    cards = seen["offlineCards"]
    assert _number(cards["KL(P‖Q) mean"]) == pytest.approx(metrics["kl_mean_nats"], rel=1e-3)
    assert _number(cards["Top-1 match"]) / 100 == pytest.approx(metrics["top1_match"], abs=1e-4)
    assert seen["verdict"].startswith("Damage is") and seen["sampleRows"] > 0
