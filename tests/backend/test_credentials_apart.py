"""The two credentials are kept apart (issue 32): a personal API token works only as a bearer token, a
dashboard sign-in only as the session cookie, and signing out through the cookie never revokes an API token.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.api.auth import SESSION_COOKIE
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.accounts import TestAccount, add_account

PASSWORD = "a long enough password"


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings, run_reaper=False)


@pytest.fixture
def user(settings: Settings, account: TestAccount) -> TestAccount:
    """A user with a password (to sign in) and a personal API token."""
    with session_factory(settings.resolved_database_url)() as s:
        return add_account(s, password=PASSWORD)


@pytest.fixture
def session_secret(app: FastAPI, user: TestAccount) -> Iterator[str]:
    with TestClient(app) as browser:
        signed_in = browser.post("/api/v1/auth/login", json={"username": user.username, "password": PASSWORD})
        assert signed_in.status_code == 200, signed_in.text
        secret = browser.cookies.get(SESSION_COOKIE)
        assert secret
        yield secret


def _me(app: FastAPI, *, bearer: str | None = None, cookie: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    with TestClient(app, cookies={SESSION_COOKIE: cookie} if cookie else None) as c:
        return c.get("/api/v1/auth/me", headers=headers).status_code


def test_each_credential_works_in_its_own_place(app: FastAPI, user: TestAccount, session_secret: str) -> None:
    assert _me(app, bearer=user.token) == 200
    assert _me(app, cookie=session_secret) == 200


def test_an_api_token_is_not_accepted_as_the_session_cookie(app: FastAPI, user: TestAccount) -> None:
    with TestClient(app, cookies={SESSION_COOKIE: user.token}) as c:
        response = c.get("/api/v1/auth/me")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_a_session_cookie_is_not_accepted_as_a_bearer_token(app: FastAPI, session_secret: str) -> None:
    response = TestClient(app).get("/api/v1/auth/me", headers={"Authorization": f"Bearer {session_secret}"})
    assert response.status_code == 401
    assert "unknown, expired or revoked" in response.json()["detail"]


def test_signing_out_with_a_token_in_the_cookie_does_not_revoke_the_token(
    app: FastAPI, user: TestAccount
) -> None:
    with TestClient(app, cookies={SESSION_COOKIE: user.token}) as c:
        assert c.post("/api/v1/auth/logout").status_code == 401
    assert _me(app, bearer=user.token) == 200


def test_signing_out_ends_the_session_only(app: FastAPI, user: TestAccount, session_secret: str) -> None:
    with TestClient(app, cookies={SESSION_COOKIE: session_secret}) as browser:
        assert browser.post("/api/v1/auth/logout").status_code == 204
    assert _me(app, cookie=session_secret) == 401
    assert _me(app, bearer=user.token) == 200
