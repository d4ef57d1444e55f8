"""Every dashboard page at a phone's size (390x844) and a desktop's (1440x900) in headless Chromium: no
horizontal overflow, a compact header on phones, side panels stacked below the charts, captions as wide as
their chart, every chart drawn with a non-zero size, and nothing that leaves the server (no element, link or
Plotly toolbar button pointing elsewhere, no request to another origin: every request is intercepted). Also the
report page's time to usable in a fresh browser (printed; the number is measured, not asserted).

Uses the embedded stack and its demo project (tests/browser/test_dashboard.py's fixtures); a small sensitivity
scan and sweep are launched through the API so that their pages have charts. Driven by drive_layout.mjs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from backend.client import KneeboardClient
from tests.browser.demo_jobs import demo_pages_ids
from tests.browser.support import ADMIN_PASSWORD, ARTIFACTS, DemoStack
from tests.support.services import REPO_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRIVER = Path(__file__).with_name("drive_layout.mjs")
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
)


def test_every_page_fits_phones_and_desktops_and_stays_on_the_server(
    demo: DemoStack,
) -> None:
    node, chromium, base, proc, token = demo
    ids = demo_pages_ids(KneeboardClient(base, token=token))
    config = {
        "base": base,
        "chromium": chromium,
        "artifacts": str(ARTIFACTS / "layout"),
        "username": "admin",
        "password": ADMIN_PASSWORD,
        "ids": ids,
        "viewports": VIEWPORTS,
    }
    result = subprocess.run(
        [node, str(DRIVER), json.dumps(config)], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
    )
    lines = result.stdout.strip().splitlines()
    assert lines, f"the driver printed nothing:\n{result.stderr[-4000:]}"
    seen: dict[str, Any] = json.loads(lines[-1])
    (ARTIFACTS / "layout" / "observations.json").write_text(json.dumps(seen, indent=1))
    assert result.returncode == 0 and "error" not in seen, (
        f"{seen.get('error')}\nsteps: {seen['steps']}\n{result.stderr[-3000:]}\nAPI log:\n{proc.log()[-3000:]}"
    )
    print(f"report page time to usable in a fresh browser: {seen['timeToUsable']}")

    assert sorted(seen["pages"]) == sorted(f"{v}/{p}" for v in VIEWPORTS for p in PAGES)
    for key, page in seen["pages"].items():
        viewport, name = key.split("/")
        width = VIEWPORTS[viewport][0]
        assert page["scrollWidth"] <= width, (key, page["scrollWidth"], page["wide"])
        assert not page["external"], (key, page["external"])
        assert not page["modebarOut"], (key, page["modebarOut"])
        for chart in page["charts"]:
            assert chart["width"] > 0.6 * min(width, 1400) * (0.45 if viewport == "desktop" else 1) and (
                chart["height"] > 100
            ), (key, chart)
        for caption in page["captions"]:
            assert caption["width"] >= min(0.6 * width, 300), (key, caption)  # not one word per line
        if viewport == "phone":
            assert page["headerHeight"] <= 110, (key, page["headerHeight"])
            for split in page["splits"]:
                assert split["stacked"], (key, split)  # side panel below the chart, not on top of it
    charted = {"report": 3, "sensitivity": 1, "sweep": 1, "recovery": 1, "model": 0}
    for name, least in charted.items():
        for viewport in VIEWPORTS:
            assert len(seen["pages"][f"{viewport}/{name}"]["charts"]) >= least, (viewport, name)
    assert not seen["externalRequests"], seen["externalRequests"]
    assert not seen["docsExternal"], seen["docsExternal"]  # /docs: Swagger UI from this server
    assert seen["plotlyBundleLoads"] <= 1, seen["plotlyBundleLoads"]  # loaded once per browser, lazily
    assert not seen["consoleErrors"], seen["consoleErrors"]
