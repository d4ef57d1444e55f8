"""API tokens: someone else's token cannot be revoked, a revoked or expired token stops working at once,
and tokens are stored only as hashes.

Runs the real app in-process over the real Postgres database (and Redis for the queued jobs); the
operations and their cases come from tests/support/access_cases.py, team A's rows from conftest.py."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select, update

from backend.db.models import ApiToken
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.access_cases import World


def test_someone_elses_token_cannot_be_revoked(http: TestClient, world: World) -> None:
    response = http.delete(f"/api/v1/auth/tokens/{world.ids['token_id']}", headers=world.outsider.headers)
    assert response.status_code == 404
    assert http.get("/api/v1/auth/tokens", headers=world.admin.headers).json()[0]["revoked_at"] is None


def test_a_revoked_token_stops_working_at_once(http: TestClient, world: World) -> None:
    created = http.post(
        "/api/v1/auth/tokens", json={"name": "ci", "expires_in_days": 30}, headers=world.member.headers
    )
    assert created.status_code == 201
    token = created.json()
    assert token["token"].startswith("kb_") and token["prefix"] == token["token"][:9]
    headers = {"Authorization": f"Bearer {token['token']}"}
    me = http.get("/api/v1/auth/me", headers=headers).json()
    assert me["username"] == world.member.username and me["auth"] == "token"
    listed = http.get("/api/v1/auth/tokens", headers=headers).json()
    mine = next(t for t in listed if t["id"] == token["id"])
    assert "token" not in mine and mine["last_used_at"] is not None  # the secret is never shown again
    assert http.delete(f"/api/v1/auth/tokens/{token['id']}", headers=headers).status_code == 204
    refused = http.get("/api/v1/auth/me", headers=headers)
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]


def test_an_expired_token_stops_working(http: TestClient, world: World, app_settings: Settings) -> None:
    token = http.post("/api/v1/auth/tokens", json={"name": "short"}, headers=world.viewer.headers).json()
    headers = {"Authorization": f"Bearer {token['token']}"}
    assert http.get("/api/v1/auth/me", headers=headers).status_code == 200
    with session_factory(app_settings.resolved_database_url)() as s:
        s.execute(
            update(ApiToken)
            .where(ApiToken.id == uuid.UUID(token["id"]))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        s.commit()
    assert http.get("/api/v1/auth/me", headers=headers).status_code == 401


def test_tokens_are_stored_only_as_hashes(world: World, app_settings: Settings) -> None:
    with session_factory(app_settings.resolved_database_url)() as s:
        stored = [json.dumps([str(c) for c in row]) for row in s.execute(select(ApiToken.__table__))]
    assert stored and not any(world.admin.token in row for row in stored)
