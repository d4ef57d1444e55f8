"""What each role may do in its own team: a viewer reads exactly what an admin reads and every write
of theirs is refused with 403 and changes nothing; a member cannot delete or cancel what someone else made;
only site admins manage accounts; admins manage members, and every change is audited.

Runs the real app in-process over the real Postgres database (and Redis for the queued jobs); the
operations and their cases come from tests/support/access_cases.py, team A's rows from conftest.py."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.db.models import AuditEvent
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files
from tests.support.access_cases import (
    CASES,
    OPS_BY_SCOPE,
    WRITES,
    Operation,
    World,
    call_operation,
    row_counts,
)
from tests.support.accounts import add_account


@pytest.mark.parametrize("op", [op for op in OPS_BY_SCOPE["team"] if op.method == "GET"], ids=str)
def test_a_viewer_reads_what_an_admin_reads(http: TestClient, world: World, op: Operation) -> None:
    as_viewer = call_operation(http, op, world, world.viewer.headers)
    if CASES[op.operation_id].admin_only:
        assert as_viewer.status_code == 403 and as_viewer.json()["error"] == "forbidden", as_viewer.text
        return
    as_admin = call_operation(http, op, world, world.admin.headers)
    assert as_admin.status_code not in (401, 403), as_admin.text
    if CASES[op.operation_id].says_your_role:
        assert (as_viewer.json().pop("role"), as_admin.json().pop("role")) == ("viewer", "admin")
        viewer_saw = {k: v for k, v in as_viewer.json().items() if k != "role"}
        assert viewer_saw == {k: v for k, v in as_admin.json().items() if k != "role"}
        return
    assert (as_viewer.status_code, as_viewer.content) == (as_admin.status_code, as_admin.content), op


@pytest.mark.parametrize("op", [op for op in OPS_BY_SCOPE["team"] if op.method in WRITES], ids=str)
def test_a_viewer_cannot_write(http: TestClient, world: World, app_settings: Settings, op: Operation) -> None:
    before = row_counts(app_settings)
    response = call_operation(http, op, world, world.viewer.headers)
    assert response.status_code == 403, f"{op}: {response.status_code} {response.text}"
    assert response.json()["error"] == "forbidden" and "role" in response.json()["detail"]
    after = row_counts(app_settings)
    assert after == before, f"{op} was refused but changed rows"


@pytest.mark.parametrize(
    "op", [op for op in OPS_BY_SCOPE["team"] if CASES[op.operation_id].owner_or_admin], ids=str
)
def test_a_member_cannot_delete_or_cancel_what_someone_else_made(
    http: TestClient, world: World, op: Operation
) -> None:
    response = call_operation(http, op, world, world.member.headers)
    assert response.status_code == 403, f"{op}: {response.status_code} {response.text}"
    assert "someone else's" in response.json()["detail"]


@pytest.mark.parametrize("op", OPS_BY_SCOPE["site"], ids=str)
def test_only_site_admins_manage_accounts(http: TestClient, world: World, op: Operation) -> None:
    response = call_operation(http, op, world, world.admin.headers)  # a team admin, not a site admin
    assert response.status_code == 403, response.text


def test_admins_manage_members_and_every_change_is_audited(
    http: TestClient, world: World, app_settings: Settings
) -> None:
    team = world.ids["team_id"]
    h = world.admin.headers
    with session_factory(app_settings.resolved_database_url)() as s:
        newcomer = add_account(s, None, f"elsewhere-{uuid.uuid4().hex[:4]}")
    added = http.post(
        f"/api/v1/teams/{team}/members", json={"username": newcomer.username, "role": "viewer"}, headers=h
    )
    assert added.status_code == 201, added.text
    # The newcomer now sees the project, as a viewer: reading yes, uploading no.
    assert world.ids["project_id"] in http.get("/api/v1/projects", headers=newcomer.headers).text
    upload = http.post(
        f"/api/v1/projects/{world.ids['project_id']}/models",
        headers=newcomer.headers,
        files={"file": ("m.onnx", files.minimal_onnx_bytes())},
    )
    assert upload.status_code == 403
    promoted = http.patch(
        f"/api/v1/teams/{team}/members/{newcomer.user_id}", json={"role": "member"}, headers=h
    )
    assert promoted.json()["role"] == "member"
    upload = http.post(
        f"/api/v1/projects/{world.ids['project_id']}/models",
        headers=newcomer.headers,
        files={"file": ("m.onnx", files.minimal_onnx_bytes(doc_string="the newcomer's own model"))},
    )
    assert upload.status_code == 201, upload.text
    # Their own upload they may delete; after they leave, the project is another team's to them: 404.
    assert http.delete(f"/api/v1/models/{upload.json()['id']}", headers=newcomer.headers).status_code == 204
    assert http.delete(f"/api/v1/teams/{team}/members/{newcomer.user_id}", headers=h).status_code == 204
    assert (
        http.get(f"/api/v1/projects/{world.ids['project_id']}", headers=newcomer.headers).status_code == 404
    )
    # The last admin cannot step down or leave.
    me = world.admin.user_id
    assert (
        http.patch(f"/api/v1/teams/{team}/members/{me}", json={"role": "member"}, headers=h).status_code
        == 409
    )
    assert http.delete(f"/api/v1/teams/{team}/members/{me}", headers=h).status_code == 409
    events = http.get(f"/api/v1/teams/{team}/audit", params={"limit": 500}, headers=h).json()
    actions = [(e["actor_name"], e["action"]) for e in reversed(events["items"])]
    for expected in [
        (world.admin.username, "project.created"),
        (world.admin.username, "model.uploaded"),
        (world.admin.username, "dataset.uploaded"),
        (world.admin.username, "job.launched"),
        (world.admin.username, "member.added"),
        (world.admin.username, "member.role_changed"),
        (newcomer.username, "model.uploaded"),
        (newcomer.username, "model.deleted"),
        (world.admin.username, "member.removed"),
    ]:
        assert expected in actions, f"{expected} not in {actions}"
    # Only this team's events, and none of the refused attempts.
    with session_factory(app_settings.resolved_database_url)() as s:
        teams = set(
            s.scalars(select(AuditEvent.team_id).where(AuditEvent.id.in_([e["id"] for e in events["items"]])))
        )
    assert teams == {uuid.UUID(team)}
    filtered = http.get(f"/api/v1/teams/{team}/audit", params={"action": "model.deleted"}, headers=h).json()
    assert filtered["total"] == 1 and filtered["items"][0]["detail"]["name"] == "m.onnx"
