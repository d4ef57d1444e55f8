"""A shareable report (issue 17) in headless Chromium: the demo stack's finished fidelity job downloaded with its
page's "Download report (HTML)" button, then opened from file:// in a context with the network off and every
request that is not for the file aborted. The charts must have drawn (an SVG of non-zero size with marks in each),
the headline numbers must be the API's, the worst sample's inspector must open from the file, and the file must
not have asked for anything outside itself.

Needs the built dashboard (`npm ci && npm run build` in frontend/, which builds dist/offline.html too), Node and
Chromium, like test_dashboard.py, whose `tools` and `stack` fixtures it uses. The driver is
drive_offline_report.mjs; screenshots land in test-artifacts/browser/."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from backend.client import KneeboardClient
from tests.browser.support import ADMIN_PASSWORD, ARTIFACTS, wait_for_demo
from tests.support.services import REPO_ROOT, Process

pytestmark = pytest.mark.browser

DRIVER = REPO_ROOT / "tests" / "browser" / "drive_offline_report.mjs"


def _number(shown: str) -> float:
    return float(shown.replace(",", "").split()[0])


def _drive(node: str, config: dict[str, Any], proc: Process) -> dict[str, Any]:
    result = subprocess.run(
        [node, str(DRIVER), json.dumps(config)], capture_output=True, text=True, timeout=240, cwd=REPO_ROOT
    )
    lines = result.stdout.strip().splitlines()
    assert lines, f"the driver printed nothing:\n{result.stderr[-4000:]}"
    seen: dict[str, Any] = json.loads(lines[-1])
    assert result.returncode == 0 and "error" not in seen, (
        f"{seen.get('error')}\nsteps: {seen['steps']}\n{result.stderr[-3000:]}\nAPI log:\n{proc.log()[-3000:]}"
    )
    assert seen["outsideRequests"] == [], "a file asked for something outside itself"
    assert not seen["consoleErrors"], seen["consoleErrors"]
    return seen


def _drew(opened: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every chart of an opened file drew an SVG of non-zero size with marks in it; by title."""
    charts = {c["title"]: c for c in opened["charts"]}
    assert charts
    for title, chart in charts.items():
        assert chart["svgs"] >= 1 and chart["width"] > 0 and chart["height"] > 0, (title, chart)
        assert chart["marks"] > 0, (title, chart)
    assert opened["downloadButtons"] == 0 and opened["apiLinks"] == [], opened
    assert "Offline copy" in opened["banner"]
    return charts


def test_a_downloaded_fidelity_report_draws_its_charts_offline(
    tools: tuple[str, str], stack: tuple[str, Process, str]
) -> None:
    node, chromium = tools
    base, proc, token = stack
    wait_for_demo(base, proc, token)
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
    seen = _drive(node, config, proc)
    assert seen["filename"] == f"kneeboard-fidelity-{job_id}.html"
    opened = seen["opened"]["fidelity"]
    # The histogram, both reliability diagrams and the per-layer profile (the demo's labelled digits set).
    titles = set(_drew(opened))
    assert {"Per-sample KL histogram", "Reliability: golden model", "Reliability: compressed model"} <= titles
    assert "Per-layer SQNR" in titles, sorted(titles)

    # The headline numbers: the file shows what the dashboard shows, and those are the API's.
    cards = opened["cards"]
    assert cards == seen["onlineCards"] and len(cards) >= 6
    report = client.http.get(f"/jobs/{job_id}/fidelity").json()["summary"]
    metrics = report["outputs"][report["primary_output"]]
    assert _number(cards["KL(P‖Q) mean"]) == pytest.approx(metrics["kl_mean_nats"], rel=1e-3)
    assert _number(cards["Top-1 match"]) / 100 == pytest.approx(metrics["top1_match"], abs=1e-4)
    assert opened["verdict"].startswith("Damage is") and opened["tableRows"] > 0

    # The sample inspector opens from the file: the worst sample by KL (the table's first row), its picture a
    # data: URL drawn at 256 px, its classes those the API serves for that sample (golden top-k first).
    worst = client.http.get(
        f"/jobs/{job_id}/fidelity/samples", params={"sort": "kl", "order": "desc", "limit": 1}
    )
    assert opened["inspectedSample"] == worst.json()["items"][0]["sample_index"]
    live = client.http.get(f"/jobs/{job_id}/samples/{opened['inspectedSample']}").json()
    golden = live["outputs"][0]["golden"]["classes"]
    assert opened["inspectorClasses"][: len(golden)] == golden
    assert opened["inspectorImage"] == {"src": "data:image/png;base64,", "natural": 256}


def test_sensitivity_and_sweep_reports_draw_offline(
    tools: tuple[str, str], stack: tuple[str, Process, str]
) -> None:
    """A sensitivity scan and a sweep of the demo's golden model, exported through the API: the heatmap, a
    selected layer's channel importance, the Pareto chart and another pair of axes, all from the file."""
    node, chromium = tools
    base, proc, token = stack
    wait_for_demo(base, proc, token)
    client = KneeboardClient(base, token=token)
    demo = next(p for p in client.projects() if p["name"] == "demo")
    golden = next(
        m for m in client.http.get(f"/projects/{demo['id']}/models").json() if "golden" in m["name"]
    )
    dataset = client.http.get(f"/projects/{demo['id']}/datasets").json()[0]
    common = {"model_id": golden["id"], "dataset_id": dataset["id"], "max_samples": 48}
    scan = client.create_job(
        demo["id"],
        "sensitivity",
        common
        | {
            "configs": [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 2}],
            "importance_methods": ["l1"],
        },
    )
    sweep = client.create_job(
        demo["id"],
        "sweep",
        common
        | {
            "configs": [
                {"type": "weight_quant", "bits": 8, "per_channel": True},
                {"type": "weight_quant", "bits": 4, "per_channel": True},
                {"type": "magnitude_prune", "sparsity": 0.5},
            ],
            "latency_batch_sizes": [1],
            "latency_repeats": 3,
        },
    )
    files = {}
    for kind, job in (("sensitivity", scan), ("sweep", sweep)):
        done = client.wait_job(job["id"], timeout=300)
        assert done["status"] == "succeeded", done["error"]
        response = client.http.get(f"/jobs/{job['id']}/export.html")
        assert response.status_code == 200, response.text
        path = ARTIFACTS / f"kneeboard-{kind}-{job['id']}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(response.content)
        files[kind] = str(path)
    seen = _drive(node, {"files": files, "chromium": chromium, "artifacts": str(ARTIFACTS)}, proc)

    sensitivity = seen["opened"]["sensitivity"]
    charts = _drew(sensitivity)
    assert "Sensitivity heatmap" in charts and f"Channel importance of {sensitivity['layer']}" in charts, (
        sorted(charts)
    )
    matrix = client.sensitivity(scan["id"])["matrix"]
    assert charts["Sensitivity heatmap"]["marks"] >= 1 and len(matrix["rows"]) >= 2

    swept = seen["opened"]["sweep"]
    charts = _drew(swept)
    assert swept["frontierBefore"] >= 2 and swept.get("swappedTo"), swept  # points and the frontier line
    assert not [e for e in swept["errors"] if "offline report" in e], swept["errors"]
