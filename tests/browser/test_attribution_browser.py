"""A sweep point's cause attribution in headless Chromium (issue 13): on the embedded stack's demo project, a
sweep with a schedule (prune 50 % then 4-bit weights) runs on the real worker; on its sweep page, picking the
schedule point draws the waterfall and the per-technique table, and every bar and cell equals the point's
attribution as the API serves it (itself checked against models compressed in numpy and run in onnxruntime
in tests/engine/test_attribution.py). Driven by drive_attribution.mjs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kneeboard_client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_attribution.mjs")
SCHEDULE = {
    "type": "schedule",
    "stages": [{"type": "magnitude_prune", "sparsity": 0.5}, {"type": "weight_quant", "bits": 4}],
}


def shown(text: str | None) -> float:
    """A figure as the table prints it: '0.01234 nats', '1.2e-4 nats', '0.5 nats (83 %)'."""
    assert text is not None
    return float(text.split(" nats")[0])


def test_the_schedule_points_attribution_is_drawn_as_served(demo: DemoStack) -> None:
    node, chromium, base, proc, token = demo
    client = KneeboardClient(base, token=token)
    project = next(p for p in client.projects() if p["name"] == "demo")
    demo_job = client.http.get("/jobs", params={"project_id": project["id"], "kind": "fidelity"}).json()
    params = demo_job["items"][0]["params"]
    sweep = client.create_job(
        project["id"],
        "sweep",
        {
            "model_id": params["golden_model_id"],
            "dataset_id": params["dataset_id"],
            "configs": [SCHEDULE],
            "max_samples": 100,
            "latency": False,
            "export": False,
        },
    )
    assert client.wait_job(sweep["id"], timeout=300)["status"] == "succeeded"
    items = client.http.get(f"/jobs/{sweep['id']}/sweep/points").json()["items"]
    point = next(p for p in items if p["config"].get("type") == "schedule")
    doc = client.http.get(f"/jobs/{sweep['id']}/sweep/points/{point['index']}").json()["point"]
    served = doc["attribution"]
    assert served is not None and served["metric"] == "kl_mean"
    labels = [t["label"] for t in served["techniques"]]
    assert len(labels) == 2, labels

    seen = run_driver(
        node,
        DRIVER,
        driver_config(base, chromium, "attribution", sweep=sweep["id"], label=point["label"]),
        proc,
        timeout=240,
    )
    assert seen["consoleErrors"] == []
    assert seen["heading"] == "Cause attribution"
    # the waterfall: step i starts at the cumulative value before it and adds cumulative[i] - cumulative[i-1];
    # the total bar starts at 0 and is the whole configuration's KL
    bars = {}
    for trace in seen["bars"]["traces"]:
        for x, y, b in zip(trace["x"], trace["y"], trace["base"], strict=True):
            bars[x] = (trace["name"], y, b)
    cumulative = served["cumulative"]
    assert seen["bars"]["categories"] == [f"{i + 1}. {label}" for i, label in enumerate(labels)] + ["total"]
    for i, label in enumerate(labels):
        name, y, b = bars[f"{i + 1}. {label}"]
        before = 0.0 if i == 0 else cumulative[i - 1]
        assert b == pytest.approx(before, rel=1e-12, abs=1e-15)
        assert y == pytest.approx(cumulative[i] - before, rel=1e-9, abs=1e-15)
        assert name == ("adds divergence" if y >= 0 else "removes divergence")
    assert bars["total"][1:] == pytest.approx((served["total"], 0.0))
    assert seen["bars"]["drawn"] == len(labels) + 1
    # the table: alone, added in order, removed when left out (total - leave_one_out), as shown (4 digits)
    assert [row[0] for row in seen["rows"]] == labels
    for i, row in enumerate(seen["rows"]):
        before = 0.0 if i == 0 else cumulative[i - 1]
        expected = (served["alone"][i], cumulative[i] - before, served["total"] - served["leave_one_out"][i])
        assert [shown(cell) for cell in row[1:]] == pytest.approx(expected, rel=2e-3, abs=1e-9), row
    # the summary names the technique whose leaving out removes the most
    removed = [served["total"] - v for v in served["leave_one_out"]]
    assert f"Leaving out {labels[removed.index(max(removed))]} removes" in seen["summary"]
