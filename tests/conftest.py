"""Shared fixtures. Database, queue and worker tests use the real services (Postgres, Redis, Celery)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from backend.api.app import create_app
from backend.db.migrations import upgrade_to_head
from backend.db.models import Base
from backend.db.session import engine_for
from backend.settings import Settings
from tests.support.accounts import TestAccount, account_in
from tests.support.services import REDIS_URL, private_postgres_database


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """One private Postgres database for the test session, migrated to head by Alembic."""
    with private_postgres_database() as url:
        upgrade_to_head(url)
        yield url


@pytest.fixture
def settings(pg_url: str, tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=pg_url,
        broker_url=REDIS_URL,
        artifact_uri=(tmp_path / "artifacts").as_uri(),
        queue_name=f"kneeboard-test-{uuid.uuid4().hex[:8]}",
        max_upload_bytes=5 * 1024 * 1024,
        seed_demo=False,
    )


def truncate_all(url: str) -> None:
    tables = ", ".join(f'"{t.name}"' for t in reversed(Base.metadata.sorted_tables))
    with engine_for(url).begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} CASCADE"))


@pytest.fixture
def account(settings: Settings) -> Iterator[TestAccount]:
    """A user who is admin of their team, with an API token; every test starts from empty tables."""
    truncate_all(settings.resolved_database_url)
    yield account_in(settings.resolved_database_url, username="tester", team="testers")
    truncate_all(settings.resolved_database_url)


@pytest.fixture
def client(settings: Settings, account: TestAccount) -> Iterator[TestClient]:
    """The API in-process over the real Postgres database, signed in as `account`."""
    with TestClient(create_app(settings, run_reaper=False), headers=account.headers) as c:
        yield c


@pytest.fixture
def project(client: TestClient) -> dict[str, str]:
    response = client.post("/api/v1/projects", json={"name": f"p-{uuid.uuid4().hex[:6]}"})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]
