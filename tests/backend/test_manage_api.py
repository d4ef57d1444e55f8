"""Managing runs over the real API and Postgres: renaming, notes and tags (PATCH), who launched a job, job
list filters, relaunching a job, and the project list's counts and last activity. No worker: jobs stay
queued unless a test moves them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from backend.accounts import Role
from backend.api.app import create_app
from backend.db.models import AuditEvent, Job
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files
from tests.support.accounts import TestAccount, account_in


@pytest.fixture
def inputs(client: TestClient, project: dict[str, Any]) -> dict[str, str]:
    pid = project["id"]
    onnx = files.minimal_onnx_bytes()
    golden = client.post(f"/api/v1/projects/{pid}/models", files={"file": ("g.onnx", onnx)}).json()
    other = client.post(
        f"/api/v1/projects/{pid}/models",
        files={"file": ("c.onnx", onnx)},
        data={"input_shapes": '{"x": [1, 4]}'},
    ).json()
    data = files.npz_bytes(input=np.zeros((4, 4), "float32"))
    dataset = client.post(f"/api/v1/projects/{pid}/datasets", files={"file": ("d.npz", data)}).json()
    return {"golden_model_id": golden["id"], "compressed_model_id": other["id"], "dataset_id": dataset["id"]}


def _launch(client: TestClient, project_id: str, params: dict[str, Any]) -> dict[str, Any]:
    response = client.post(
        "/api/v1/jobs", json={"project_id": project_id, "kind": "fidelity", "params": params}
    )
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _audit(settings: Settings, action: str) -> list[AuditEvent]:
    with session_factory(settings.resolved_database_url)() as s:
        return list(s.scalars(select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)))


@pytest.fixture
def member(settings: Settings, account: TestAccount) -> Iterator[TestClient]:
    """A member of the same team (not its admin)."""
    other = account_in(settings.resolved_database_url, team=account.team_name, role=Role.member)
    with TestClient(create_app(settings, run_reaper=False), headers=other.headers) as c:
        yield c


@pytest.mark.parametrize("what", ["model", "dataset", "job"])
def test_rename_notes_and_tags(
    what: str,
    client: TestClient,
    project: dict[str, Any],
    inputs: dict[str, str],
    settings: Settings,
) -> None:
    ids = {
        "model": inputs["golden_model_id"],
        "dataset": inputs["dataset_id"],
        "job": _launch(client, project["id"], inputs)["id"],
    }
    url = f"/api/v1/{what}s/{ids[what]}"
    before = client.get(url).json()
    assert before["notes"] == "" and before["tags"] == []

    changed = client.patch(url, json={"name": "resnet int8 v2", "tags": ["int8", "v2", "int8"]})
    assert changed.status_code == 200, changed.text
    assert changed.json()["name"] == "resnet int8 v2" and changed.json()["tags"] == ["int8", "v2"]
    # Only the fields sent change: notes now, name and tags stay.
    noted = client.patch(url, json={"notes": "calibrated on 512 images"}).json()
    assert noted["notes"] == "calibrated on 512 images" and noted["name"] == "resnet int8 v2"
    assert noted["tags"] == ["int8", "v2"]
    again = client.get(url).json()
    assert (again["name"], again["notes"], again["tags"]) == (
        "resnet int8 v2",
        "calibrated on 512 images",
        ["int8", "v2"],
    )

    events = _audit(settings, f"{what}.updated")
    assert len(events) == 2 and events[0].resource_id == ids[what]
    assert events[0].detail["name"] == {"from": before["name"], "to": "resnet int8 v2"}
    assert events[0].detail["tags"] == {"from": [], "to": ["int8", "v2"]}
    assert str(events[0].project_id) == project["id"] and events[0].actor_name == "tester"
    # The same values again change nothing and record nothing.
    assert client.patch(url, json={"tags": ["int8", "v2"]}).status_code == 200
    assert len(_audit(settings, f"{what}.updated")) == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": ""}, "at least 1 character"),
        ({"tags": ["has space"]}, "should match pattern"),
        ({"tags": ['quote"d']}, "should match pattern"),
        ({"tags": [f"t{i}" for i in range(21)]}, "at most 20 items"),
        ({"owner": "me"}, "Extra inputs are not permitted"),
    ],
)
def test_bad_updates_are_refused(
    body: dict[str, Any], message: str, client: TestClient, inputs: dict[str, str]
) -> None:
    response = client.patch(f"/api/v1/models/{inputs['golden_model_id']}", json=body)
    assert response.status_code == 422, response.text
    assert message in str(response.json()["detail"])


@pytest.mark.parametrize("raw", [b'\xc3\x28":', b"{not json"])
def test_a_body_that_is_not_json_is_a_422_like_any_bad_input(
    raw: bytes, client: TestClient, inputs: dict[str, str]
) -> None:
    """Bytes that are not UTF-8 got FastAPI's bare 400 (found by the fuzz test), text that is not JSON a 422."""
    response = client.patch(
        f"/api/v1/models/{inputs['golden_model_id']}",
        content=raw,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_request"


def test_members_change_only_what_they_made(
    client: TestClient, member: TestClient, project: dict[str, Any], inputs: dict[str, str]
) -> None:
    admins_job = _launch(client, project["id"], inputs)
    refused = member.patch(f"/api/v1/jobs/{admins_job['id']}", json={"name": "mine now"})
    assert refused.status_code == 403 and "someone else's job" in refused.json()["detail"]
    assert client.get(f"/api/v1/jobs/{admins_job['id']}").json()["name"] == ""

    members_job = _launch(member, project["id"], inputs)
    assert member.patch(f"/api/v1/jobs/{members_job['id']}", json={"name": "mine"}).json()["name"] == "mine"
    # Team admins may change anything of the team.
    assert client.patch(f"/api/v1/jobs/{members_job['id']}", json={"tags": ["ok"]}).json()["tags"] == ["ok"]


def test_who_launched_a_job(
    client: TestClient, member: TestClient, project: dict[str, Any], inputs: dict[str, str]
) -> None:
    mine = _launch(client, project["id"], inputs)
    theirs = _launch(member, project["id"], inputs)
    assert mine["created_by_name"] == "tester"
    assert client.get(f"/api/v1/jobs/{theirs['id']}").json()["created_by_name"] == theirs["created_by_name"]
    listed = client.get("/api/v1/jobs", params={"project_id": project["id"], "kind": "fidelity"}).json()[
        "items"
    ]
    by_id = {j["id"]: j["created_by_name"] for j in listed}
    assert by_id[mine["id"]] == "tester"
    assert by_id[theirs["id"]] is not None and by_id[theirs["id"]].startswith("user-")


def test_job_list_filters(client: TestClient, project: dict[str, Any], inputs: dict[str, str]) -> None:
    pid = project["id"]
    a, b, c = (_launch(client, pid, inputs)["id"] for _ in range(3))
    client.patch(f"/api/v1/jobs/{a}", json={"name": "Baseline INT8", "tags": ["int8", "release-1"]})
    client.patch(
        f"/api/v1/jobs/{b}", json={"notes": "retry of the int8 run, 100% of samples", "tags": ["int8"]}
    )
    client.patch(f"/api/v1/jobs/{c}", json={"name": "fp16 check", "tags": ["int8x"]})

    def ids(**query: Any) -> set[str]:
        page = client.get("/api/v1/jobs", params={"project_id": pid, "limit": 500} | query)
        assert page.status_code == 200, page.text
        assert page.json()["total"] == len(page.json()["items"])
        return {j["id"] for j in page.json()["items"]}

    assert ids(tag="int8") == {a, b}  # "int8x" is another tag
    assert ids(tag="release-1") == {a}
    assert ids(q="int8") == {a, b}  # name or notes, any case
    assert ids(q="BASELINE") == {a}
    assert ids(q="100%") == {b} and ids(q="1_0") == set()  # LIKE wildcards are plain text
    assert ids(q="int8", tag="release-1") == {a}
    assert ids(kind="fidelity", status="queued", tag="int8") == {a, b}
    assert ids(kind="inspect") and ids(kind="inspect").isdisjoint({a, b, c})
    assert client.get("/api/v1/jobs", params={"tag": "a b"}).status_code == 422


def test_relaunch_with_the_same_parameters(
    client: TestClient, project: dict[str, Any], inputs: dict[str, str], settings: Settings
) -> None:
    source = _launch(client, project["id"], inputs | {"top_k": 3})
    client.patch(f"/api/v1/jobs/{source['id']}", json={"name": "nightly", "tags": ["nightly"], "notes": "x"})
    with session_factory(settings.resolved_database_url)() as s:  # it failed (no worker here to fail it)
        s.execute(update(Job).where(Job.id == source["id"]).values(status="failed", error="worker died"))
        s.commit()

    response = client.post(f"/api/v1/jobs/{source['id']}/relaunch")
    assert response.status_code == 201, response.text
    again = response.json()
    assert again["id"] != source["id"] and again["status"] == "queued" and again["kind"] == "fidelity"
    assert again["params"] == source["params"] and again["params"]["top_k"] == 3
    assert (again["name"], again["tags"], again["notes"]) == ("nightly", ["nightly"], "")
    assert again["created_by_name"] == "tester"
    launched = _audit(settings, "job.launched")
    assert launched[-1].resource_id == again["id"] and launched[-1].detail["relaunched_from"] == source["id"]
    assert client.get(f"/api/v1/jobs/{source['id']}").json()["status"] == "failed"  # the source stays

    inspect = client.get("/api/v1/jobs", params={"project_id": project["id"], "kind": "inspect"}).json()
    refused = client.post(f"/api/v1/jobs/{inspect['items'][0]['id']}/relaunch")
    assert refused.status_code == 422 and "upload the file again" in refused.json()["detail"]

    assert client.delete(f"/api/v1/models/{inputs['compressed_model_id']}").status_code == 204
    gone = client.post(f"/api/v1/jobs/{source['id']}/relaunch")
    assert gone.status_code == 404 and inputs["compressed_model_id"] in gone.json()["detail"]


def test_project_list_counts_and_last_activity(
    client: TestClient, project: dict[str, Any], inputs: dict[str, str], settings: Settings
) -> None:
    empty = client.post("/api/v1/projects", json={"name": "empty one"}).json()
    listed = {p["id"]: p for p in client.get("/api/v1/projects").json()}
    assert (listed[empty["id"]]["models_count"], listed[empty["id"]]["jobs_count"]) == (0, 0)
    assert listed[empty["id"]]["last_activity_at"] == listed[empty["id"]]["created_at"]

    pid = project["id"]
    counted = listed[pid]
    models = client.get(f"/api/v1/projects/{pid}/models").json()
    datasets = client.get(f"/api/v1/projects/{pid}/datasets").json()
    jobs = client.get("/api/v1/jobs", params={"project_id": pid}).json()
    assert counted["models_count"] == len(models) == 2  # independent counts: the lists themselves
    assert counted["datasets_count"] == len(datasets) == 1
    assert counted["jobs_count"] == jobs["total"] == 2  # the two inspections
    newest_upload = max(datetime.fromisoformat(r["created_at"]) for r in [*models, *datasets])
    assert datetime.fromisoformat(counted["last_activity_at"]) >= newest_upload

    job = _launch(client, pid, inputs)
    after = client.get(f"/api/v1/projects/{pid}").json()
    assert after["jobs_count"] == 3
    assert datetime.fromisoformat(after["last_activity_at"]) >= datetime.fromisoformat(job["created_at"])
    finished = datetime.fromisoformat(job["created_at"]).replace(year=2100)
    with session_factory(settings.resolved_database_url)() as s:
        s.execute(update(Job).where(Job.id == job["id"]).values(status="succeeded", finished_at=finished))
        s.commit()
    assert (
        datetime.fromisoformat(client.get(f"/api/v1/projects/{pid}").json()["last_activity_at"]) == finished
    )
