"""Responses that carry a secret are never cached, and a token asked to expire in 0 days is refused rather
than made to last forever (issue 32)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.accounts import TestAccount, add_account

REPO_ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a long enough password"


def test_signing_in_is_not_cached(settings: Settings, account: TestAccount) -> None:
    with session_factory(settings.resolved_database_url)() as s:
        user = add_account(s, password=PASSWORD)
    with TestClient(create_app(settings, run_reaper=False)) as browser:
        signed_in = browser.post("/api/v1/auth/login", json={"username": user.username, "password": PASSWORD})
        assert signed_in.status_code == 200, signed_in.text
        assert "set-cookie" in signed_in.headers
        assert signed_in.headers["cache-control"] == "no-store"


def test_a_new_token_is_not_cached(client: TestClient) -> None:
    created = client.post("/api/v1/auth/tokens", json={"name": "ci", "expires_in_days": 1})
    assert created.status_code == 201, created.text
    assert created.json()["token"].startswith("kb_")
    assert created.headers["cache-control"] == "no-store"
    assert "cache-control" not in client.get("/api/v1/auth/tokens").headers  # only where a secret is


@pytest.mark.parametrize("days", [0, -1])
def test_the_api_refuses_a_token_that_expires_in_less_than_a_day(client: TestClient, days: int) -> None:
    refused = client.post("/api/v1/auth/tokens", json={"name": "ci", "expires_in_days": days})
    assert refused.status_code == 422
    assert "expires_in_days" in refused.json()["detail"]
    assert [t["name"] for t in client.get("/api/v1/auth/tokens").json()] == ["tests"]  # the fixture's own


@pytest.mark.parametrize("days", ["0", "-3"])
def test_the_cli_refuses_a_token_that_expires_in_less_than_a_day(tmp_path: Path, days: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "backend.cli",
            "token",
            "create",
            "--user",
            "admin",
            "--expires-in-days",
            days,
        ],
        env=env | {"KNEEBOARD_DATA_DIR": str(tmp_path / "data")},
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    assert result.returncode != 0 and result.stdout == ""
    assert f"--expires-in-days must be from 1 to 3650 (got {days})" in result.stderr
    assert "until it is revoked" in result.stderr
