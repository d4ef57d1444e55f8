"""Managing runs in the browser (issue 16): on the demo project, a job renamed, tagged and annotated, the job
list filtered on the server by tag, text and kind, the job relaunched with the same parameters, a model renamed,
a job and a model deleted through confirm dialogs, who launched a job and the projects list's counts shown; the
project page, its edit dialog and the projects list fit a 390 px phone. Everything the browser did is then read
back through the API (and the audit trail), not from the page.

Uses the embedded stack and its demo project (tests/browser/test_dashboard.py's fixtures); driven by
drive_manage.mjs.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from backend.client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver
from tests.support import files

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_manage.mjs")


def test_rename_tag_filter_relaunch_and_delete_in_the_browser(
    demo: DemoStack,
) -> None:
    node, chromium, base, proc, token = demo
    client = KneeboardClient(base, token=token)
    http = client.http
    project = next(p for p in client.projects() if p["name"] == "demo")
    pid = project["id"]
    job = http.get("/jobs", params={"project_id": pid, "kind": "fidelity"}).json()["items"][0]
    model = next(
        m
        for m in http.get(f"/projects/{pid}/models").json()
        if m["id"] == job["params"]["compressed_model_id"]
    )
    doomed = http.post(
        f"/projects/{pid}/models",
        files={"file": ("doomed.onnx", files.minimal_onnx_bytes())},
        data={"name": "doomed"},
    )
    assert doomed.status_code == 201, doomed.text
    before = http.get(f"/projects/{pid}").json()  # counts as the list should show them (doomed included)

    config = driver_config(base, chromium, "manage") | {
        "ids": {
            "project": pid,
            "job": job["id"],
            "model": model["id"],
            "doomedModel": doomed.json()["id"],
            "team": project["team_id"],
        },
        "today": datetime.now(UTC).date().isoformat(),
    }
    seen = run_driver(node, DRIVER, config, proc, timeout=240)

    # The projects list: the demo's counts as the API counted them before the browser changed anything.
    headers = seen["projectHeaders"]
    cells = dict(zip(headers, seen["projectRow"], strict=True))
    assert cells["Models"] == str(before["models_count"]) and cells["Datasets"] == str(
        before["datasets_count"]
    )
    assert cells["Jobs"] == str(before["jobs_count"]) and "Last activity" in headers
    assert seen["launchedBy"] == "by admin"

    # The job as the browser left it, read back through the API.
    stored = http.get(f"/jobs/{job['id']}").json()
    assert (stored["name"], stored["notes"], stored["tags"]) == (
        "baseline int8",
        "the demo's first run",
        ["int8", "release-1"],
    )
    assert seen["jobTags"] == ["int8", "release-1"] and seen["jobNotes"] == "the demo's first run"
    assert seen["badTag"]["saveDisabled"] and '"quoted"' in seen["badTag"]["alert"]
    # The filters ran on the server: the one tagged job, then the one whose notes match (any case).
    assert seen["tagRows"] == job["id"] and seen["textRows"] == job["id"] and seen["unfilteredRows"] >= 3

    # The relaunched job had the same kind and parameters and was then deleted; the audit trail says so.
    assert http.get(f"/jobs/{seen['relaunchedId']}").status_code == 404
    team = http.get("/auth/me").json()["teams"][0]["id"]
    events = http.get(f"/teams/{team}/audit", params={"limit": 500}).json()["items"]
    launched = next(
        e for e in events if e["action"] == "job.launched" and e["resource_id"] == seen["relaunchedId"]
    )
    assert launched["detail"] == {"kind": "fidelity", "relaunched_from": job["id"]}
    assert any(e["action"] == "job.deleted" and e["resource_id"] == seen["relaunchedId"] for e in events)
    assert "cannot be undone" in seen["confirmText"] and seen["keptAfterCancel"] == 1

    assert seen["modelName"] == "int8 (renamed)" == http.get(f"/models/{model['id']}").json()["name"]
    renamed = next(e for e in events if e["action"] == "model.updated" and e["resource_id"] == model["id"])
    assert renamed["detail"]["name"] == {"from": model["name"], "to": "int8 (renamed)"}
    assert http.get(f"/models/{doomed.json()['id']}").status_code == 404
    after = http.get(f"/projects/{pid}").json()
    assert after["models_count"] == before["models_count"] - 1

    for name, layout in seen["layout"].items():
        assert layout["scrollWidth"] <= layout["viewport"], (name, layout)
        if layout["dialog"] is not None:
            assert layout["dialog"]["left"] >= 0 and layout["dialog"]["right"] <= layout["viewport"], (
                name,
                layout,
            )
    assert seen["layout"]["phone"]["viewport"] <= 390 and seen["layout"]["phoneDialog"]["dialog"] is not None
    assert not seen["consoleErrors"], seen["consoleErrors"]

    # The report page's link: the whole per-sample table (every sample of the output), as the API pages it.
    samples_csv = seen["samplesCsv"]
    assert samples_csv["status"] == 200, samples_csv
    table = list(csv.DictReader(io.StringIO(samples_csv["text"])))
    output = table[0]["output_name"]
    total = http.get(f"/jobs/{job['id']}/fidelity/samples", params={"output": output, "limit": 1}).json()[
        "total"
    ]
    assert len(table) == total > 50 and {r["output_name"] for r in table} == {output}
    assert [int(r["sample_index"]) for r in table] == list(range(total))

    # The audit trail filtered in the browser (person in another case, project, today, job.updated): the rows
    # the page showed, and the CSV of the same selection, are what the API returns for those filters.
    expected = http.get(
        f"/teams/{project['team_id']}/audit",
        params={"actor": "admin", "project_id": pid, "action": "job.updated", "since": config["today"]},
    ).json()
    assert len(seen["auditRows"]) == expected["total"] >= 1, (seen["auditRows"], expected)
    assert all(r[1] == "admin" and r[2] == "job.updated" and r[4] == "demo" for r in seen["auditRows"])
    audit_rows = list(csv.DictReader(io.StringIO(seen["auditCsv"]["text"])))
    assert seen["auditCsv"]["status"] == 200 and len(audit_rows) == expected["total"]
    assert [r["resource_id"] for r in audit_rows] == [e["resource_id"] for e in expected["items"]]
    assert {r["project_name"] for r in audit_rows} == {"demo"}
    assert seen["layout"]["phoneTeam"]["scrollWidth"] <= 390, seen["layout"]["phoneTeam"]
