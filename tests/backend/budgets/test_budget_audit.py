"""The audit trail names what each event was about by its current name, resolved by the API (issue 35: it
read "model 70016e19"), null once the target is deleted; budget changes and alert acknowledgements are
recorded; and the projects list counts each project's open alerts, for the badges where a user lands.

The alert is raised by the real budget check over a real fidelity summary (tests/support/budget_jobs.py)."""

from __future__ import annotations

import csv
import io
import uuid
from typing import Any

from fastapi.testclient import TestClient

from backend import budgets as budget_checks
from backend.accounts import Caller, Role
from backend.audit import AuditAction, record
from backend.db.models import Job
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files
from tests.support.accounts import TestAccount
from tests.support.budget_jobs import Measured, breaching_setup, create_budget


def _events(client: TestClient, account: TestAccount) -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/teams/{account.team_id}/audit", params={"limit": 500})
    assert response.status_code == 200, response.text
    return response.json()["items"]  # type: ignore[no-any-return]


def test_events_name_their_targets_as_they_are_now_and_deleted_ones_null(
    client: TestClient, account: TestAccount, settings: Settings, project: dict[str, str]
) -> None:
    models = f"/api/v1/projects/{project['id']}/models"
    kept = client.post(
        models, files={"file": ("a.onnx", files.minimal_onnx_bytes("a"))}, data={"name": "cnn"}
    )
    gone = client.post(
        models, files={"file": ("b.onnx", files.minimal_onnx_bytes("b"))}, data={"name": "tmp"}
    )
    assert kept.status_code == gone.status_code == 201, (kept.text, gone.text)
    model_id, gone_id = kept.json()["id"], gone.json()["id"]
    assert client.patch(f"/api/v1/models/{model_id}", json={"name": "digits-cnn int8"}).status_code == 200
    assert client.patch(f"/api/v1/models/{model_id}", json={"tags": ["int8"]}).status_code == 200
    assert client.delete(f"/api/v1/models/{gone_id}").status_code == 204
    # Two jobs on the model: one unnamed (named by its kind and model), one named.
    with session_factory(settings.resolved_database_url)() as s:
        caller = Caller(account.user_id, account.username, False, {account.team_id: Role.admin})
        jobs = []
        for name in ("", "nightly check"):
            job = Job(
                project_id=uuid.UUID(project["id"]),
                kind="fidelity",
                name=name,
                params={"golden_model_id": str(uuid.uuid4()), "compressed_model_id": model_id},
                status="succeeded",
                attempts=1,
            )
            s.add(job)
            s.flush()
            record(s, caller, account.team_id, AuditAction.job_launched, "job", job.id, job.project_id)
            jobs.append(str(job.id))
        s.commit()

    events = _events(client, account)
    named = {(e["action"], e["resource_id"]): e["target_name"] for e in events}
    assert named[("project.created", project["id"])] == project["name"]
    # every event of the kept model reads its name now, the tag change (whose detail has no name) included
    assert [named[(a, model_id)] for a in ("model.uploaded", "model.updated")] == ["digits-cnn int8"] * 2
    assert "name" not in next(e["detail"] for e in events if e["action"] == "model.updated")  # newest: tags
    assert named[("model.uploaded", gone_id)] is None and named[("model.deleted", gone_id)] is None
    assert [e["detail"]["name"] for e in events if e["resource_id"] == gone_id] == ["tmp", "tmp"]
    assert named[("job.launched", jobs[0])] == "fidelity of digits-cnn int8"
    assert named[("job.launched", jobs[1])] == "nightly check"

    rows = list(csv.DictReader(io.StringIO(client.get(f"/api/v1/teams/{account.team_id}/audit.csv").text)))
    assert [r["target_name"] for r in rows] == [e["target_name"] or "" for e in events]


def test_budget_changes_and_acknowledgements_are_audited_and_open_alerts_counted(
    client: TestClient, account: TestAccount, settings: Settings, project: dict[str, str], measured: Measured
) -> None:
    url = f"/api/v1/projects/{project['id']}/budgets"
    rules = [{"metric": "kl_mean", "bound": "max", "value": 1.0}]
    made = create_budget(client, project["id"], name="release", rules=rules)
    renamed = client.put(f"{url}/{made['id']}", json={"name": "release gate", "rules": rules})
    assert renamed.status_code == 200, renamed.text
    short = create_budget(client, project["id"], name="short-lived", rules=rules)
    assert client.delete(f"{url}/{short['id']}").status_code == 204
    refused = client.put(f"{url}/{made['id']}", json={"name": "release gate", "rules": []})
    assert refused.status_code == 422  # refused changes record nothing

    quiet = client.post("/api/v1/projects", json={"name": f"q-{uuid.uuid4().hex[:6]}"}).json()
    breaching_setup(settings, project["id"], measured, jobs=2)
    with session_factory(settings.resolved_database_url)() as s:
        assert len(budget_checks.check_finished_jobs(s, webhook=False).alert_ids) == 2

    def open_counts() -> dict[str, int]:
        listed = client.get("/api/v1/projects").json()
        return {p["id"]: p["open_alerts_count"] for p in listed}

    assert open_counts() == {project["id"]: 2, quiet["id"]: 0}
    assert client.get(f"/api/v1/projects/{project['id']}").json()["open_alerts_count"] == 2
    alerts = client.get(f"/api/v1/projects/{project['id']}/alerts").json()["items"]
    ack = f"/api/v1/projects/{project['id']}/alerts/{alerts[0]['id']}/ack"
    assert client.post(ack).status_code == 200 and client.post(ack).status_code == 200  # twice: one event
    assert open_counts() == {project["id"]: 1, quiet["id"]: 0}

    events = [e for e in _events(client, account) if e["resource_type"] in ("budget", "alert")]
    assert [(e["action"], e["target_name"]) for e in reversed(events)] == [
        ("budget.created", "release gate"),
        ("budget.updated", "release gate"),
        ("budget.created", None),
        ("budget.deleted", None),
        ("alert.acknowledged", "strict"),
    ]
    by_action = {(e["action"], e["resource_id"]): e for e in events}
    assert by_action[("budget.updated", made["id"])]["detail"] == {
        "name": "release gate",
        "before": "release",
        "scope": "all",
        "scope_value": "",
    }
    assert by_action[("budget.deleted", short["id"])]["detail"]["name"] == "short-lived"
    acked = by_action[("alert.acknowledged", alerts[0]["id"])]
    assert acked["project_name"] == project["name"] and acked["detail"]["job_id"] == alerts[0]["job_id"]
    assert acked["actor_name"] == account.username
