"""Fixtures of the backend tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from backend.db.session import session_factory
from tests.conftest import truncate_all


@pytest.fixture
def session(pg_url: str) -> Iterator[Session]:
    """A session on the test Postgres database, every table emptied before and after the test (a module may
    define its own `session`, e.g. over SQLite)."""
    truncate_all(pg_url)
    with session_factory(pg_url)() as s:
        yield s
    truncate_all(pg_url)
