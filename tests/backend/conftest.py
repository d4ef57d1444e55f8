"""Fixtures of the backend tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from backend.db.migrations import upgrade_to_head
from backend.db.session import engine_for, session_factory
from tests.conftest import truncate_all


@pytest.fixture
def session(pg_url: str) -> Iterator[Session]:
    """A session on the test Postgres database, every table emptied before and after the test (a module may
    define its own `session`, e.g. over SQLite)."""
    truncate_all(pg_url)
    with session_factory(pg_url)() as s:
        yield s
    truncate_all(pg_url)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file migrated to head once per session; tests get copies (sqlite_url)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "kneeboard.db"
    upgrade_to_head(f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite database file at head, as the embedded mode uses (WAL, through engine_for)."""
    path = tmp_path / "kneeboard.db"
    shutil.copyfile(sqlite_template, path)
    url = f"sqlite:///{path}"
    yield url
    engine_for(url).dispose()


@pytest.fixture(params=["postgres", "sqlite"])
def each_db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test Postgres database (tables emptied before and after), then a fresh SQLite file: for tests of
    code whose behaviour must not depend on the database (issue 32: SQLite's naive datetimes broke the
    reaper in the embedded mode while every test ran on Postgres)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("sqlite_url")
        return
    pg_url: str = request.getfixturevalue("pg_url")
    truncate_all(pg_url)
    yield pg_url
    truncate_all(pg_url)


@pytest.fixture
def session_on_each_database(each_db_url: str) -> Iterator[Session]:
    with session_factory(each_db_url)() as s:
        yield s
