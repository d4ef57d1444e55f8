"""Every operation needs credentials: the route table has an access case for every operation, every
operation but the public health and sign-in answers 401 without credentials or with a bogus token, and a
dashboard session cannot be used by a cross-site request.

Runs the real app in-process over the real Postgres database (and Redis for the queued jobs); the
operations and their cases come from tests/support/access_cases.py, team A's rows from conftest.py."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from backend.accounts import Role
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.access_cases import CASES, OPERATIONS, Case, Operation, World, call_operation
from tests.support.accounts import add_account


def test_every_operation_has_an_access_case() -> None:
    missing = [str(op) for op in OPERATIONS if op.operation_id not in CASES]
    assert not missing, "add a case to CASES for: " + ", ".join(missing)
    stale = set(CASES) - {op.operation_id for op in OPERATIONS}
    assert not stale, f"CASES names operations that do not exist: {stale}"


@pytest.mark.parametrize(
    "op", [op for op in OPERATIONS if CASES.get(op.operation_id, Case("public")).scope != "public"], ids=str
)
def test_without_credentials_every_operation_is_401(http: TestClient, world: World, op: Operation) -> None:
    response = call_operation(http, op, world, headers={})
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer" and response.json()["error"] == "unauthenticated"
    bogus = call_operation(http, op, world, headers={"Authorization": "Bearer kb_not-a-token"})
    assert bogus.status_code == 401, bogus.text


def test_a_cross_site_request_cannot_use_a_dashboard_session(
    http: TestClient, world: World, app_settings: Settings
) -> None:
    with session_factory(app_settings.resolved_database_url)() as s:
        user = add_account(s, None, world.admin.team_name, Role.member, password="a long password")
    with TestClient(http.app) as browser:
        signed_in = browser.post(
            "/api/v1/auth/login", json={"username": user.username, "password": "a long password"}
        )
        assert signed_in.status_code == 200 and browser.cookies.get("kneeboard_session")
        body = {"name": f"csrf-{uuid.uuid4().hex[:4]}", "team_id": world.ids["team_id"]}
        evil = browser.post("/api/v1/projects", json=body, headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403
        fine = browser.post("/api/v1/projects", json=body, headers={"Origin": "http://testserver"})
        assert fine.status_code == 201, fine.text
