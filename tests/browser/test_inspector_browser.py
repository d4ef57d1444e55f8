"""The sample inspector and the trends panel in headless Chromium at a phone's width (390 px), on the demo
project of the embedded stack (its fidelity job ran on the real worker): the inspector shows the sample's
picture (the 256 px PNG) and both models' top-5 with the probabilities the API serves; the golden model's page
draws the trend of its family. Driven by drive_inspector.mjs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_inspector.mjs")


def test_inspector_and_trends_on_a_phone(demo: DemoStack) -> None:
    node, chromium, base, proc, token = demo
    http = KneeboardClient(base, token=token).http
    project = next(p for p in http.get("/projects").json() if p["name"] == "demo")
    job = http.get("/jobs", params={"project_id": project["id"], "kind": "fidelity"}).json()["items"][0]
    first = http.get(f"/jobs/{job['id']}/fidelity/samples", params={"limit": 1}).json()["items"][0]
    index = first["sample_index"]  # the page's default order (highest KL first) puts it on the first page
    served = http.get(f"/jobs/{job['id']}/samples/{index}").json()

    ids = {"job": job["id"], "model": job["params"]["golden_model_id"], "sample": index}
    seen = run_driver(node, DRIVER, driver_config(base, chromium, "inspector", ids=ids), proc, timeout=240)

    assert seen["heading"] == f"Sample #{index}"
    # the inspector opens below the sample table on a phone, and scrolls itself into view (issue 35)
    assert 0 <= seen["inspectorTop"] < seen["viewportHeight"], (seen["inspectorTop"], seen["viewportHeight"])
    (output,) = served["outputs"]
    golden = dict(zip(output["golden"]["classes"], output["golden"]["probabilities"], strict=True))
    shown = {int(re.match(r"\d+", cells[0]).group()): cells[1] for cells in seen["rows"]}  # type: ignore[union-attr]
    assert set(golden) <= set(shown)
    for cls, p in golden.items():  # formatPercent with 2 decimals
        assert shown[cls] == f"{100 * p:.2f} %", (cls, shown[cls], p)
    assert seen["image"]["natural"] == 256 and 0 < seen["image"]["shown"] <= 390
    assert seen["reportWidth"] <= 390
    assert 0 < seen["chart"] <= 390 and len(seen["runs"]) >= 1
    assert "lower is better" in seen["caption"]
    # the demo's jobs ran on a real worker, which stored each run's spread: the KL trend uses the noise rule
    assert "Bars are ±2 standard errors." in seen["caption"], seen["caption"]
    assert seen["consoleErrors"] == []
