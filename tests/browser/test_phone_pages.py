"""Every page of the dashboard usable at a phone's 390x844 as at a desktop's 1440x900 (issue 35, "Phones"): the
projects list, a project with each of its launch forms and its jobs list, a model with its graph (the node
panel open, then side by side), a fidelity report (and a sample's inspector), a sensitivity scan, a sweep (and
a point's panel), a recovery's results, the compare page, a team, the account and the users pages. On each, in
headless Chromium:

- no page-level sideways scroll (the document scrolls no wider than the viewport);
- every visible control reachable without scrolling sideways: inside the viewport and not clipped by a box;
  a data table may scroll sideways, but only its header's sort buttons may sit in the part scrolled away;
- no single-line control stretched taller than 48 px, no select whose chosen label is cut while it could be
  wider;
- every Plotly title inside its chart's SVG (not clipped), axis titles clear of their tick labels, legends
  inside the chart and clear of the hover toolbar.

Uses the embedded stack and its demo project, with a small sensitivity scan, sweep and recovery launched
through the API (tests/browser/demo_jobs.py). Driven by drive_phone_pages.mjs (one browser, one run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backend.client import KneeboardClient
from tests.browser.demo_jobs import demo_pages_ids
from tests.browser.support import ARTIFACTS, DemoStack, driver_config, run_driver

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRIVER = Path(__file__).with_name("drive_phone_pages.mjs")
VIEWPORTS = {"phone": (390, 844), "desktop": (1440, 900)}
PAGES = (
    "projects",
    "project",
    "model",
    "report",
    "sensitivity",
    "sweep",
    "recovery",
    "compare",
    "team",
    "account",
    "users",
    "report-sample",
    "sweep-point",
    "graph-node",
    "graph-side",
)


def test_every_page_is_usable_on_a_phone(demo: DemoStack) -> None:
    node, chromium, base, proc, token = demo
    ids = demo_pages_ids(KneeboardClient(base, token=token))
    config = driver_config(base, chromium, "phone-pages", ids=ids, viewports=VIEWPORTS)
    seen: dict[str, Any] = run_driver(node, DRIVER, config, proc)
    (ARTIFACTS / "phone-pages" / "observations.json").write_text(json.dumps(seen, indent=1))

    launches = [f"launch-{k.lower()}" for k in seen["launchKinds"][1:]]
    assert len(launches) >= 3, seen["launchKinds"]  # sensitivity, sweep, recovery besides fidelity
    expected = {f"{v}/{p}" for v in VIEWPORTS for p in (*PAGES, *launches)}
    assert set(seen["pages"]) == expected, sorted(expected ^ set(seen["pages"]))
    failures: list[str] = []
    for key, page in sorted(seen["pages"].items()):
        width = VIEWPORTS[key.split("/")[0]][0]
        assert page["viewport"] == width, (key, page["viewport"])
        if page["scrollWidth"] > width:
            failures.append(f"{key}: the page is {page['scrollWidth']} px wide")
        failures += [f"{key}: unreachable {u}" for u in page["unreachable"]]
        failures += [f"{key}: stretched {s}" for s in page["stretched"]]
        failures += [f"{key}: cut select {s}" for s in page["cutSelects"]]
        failures += [f"{key}: chart '{c['label']}': {p}" for c in page["charts"] for p in c["problems"]]
    assert not failures, "\n".join(failures)
    # the pages with charts had them drawn (a check of nothing passes)
    for name, least in {"report": 3, "sensitivity": 1, "sweep": 1, "recovery": 1, "compare": 2}.items():
        for viewport in VIEWPORTS:
            assert len(seen["pages"][f"{viewport}/{name}"]["charts"]) >= least, (viewport, name)
    assert not seen["consoleErrors"], seen["consoleErrors"]
