"""Engine and session factory. SQLite (embedded mode) is put in WAL mode with a busy timeout, because the API
and the worker processes write to the same file. Postgres gets a fixed pool of KNEEBOARD_DATABASE_POOL_SIZE
connections per process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from backend.settings import get_settings


def make_engine(url: str, pool_size: int | None = None) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    # A fixed pool, no overflow: a process never holds more than pool_size connections, so API processes ×
    # pool_size (+ the workers') is a hard bound to keep under Postgres's max_connections. A request that
    # finds every connection busy waits for one (pool_timeout, 30 s) instead of opening another.
    return create_engine(url, pool_pre_ping=True, pool_size=pool_size or 10, max_overflow=0)


@lru_cache(maxsize=8)
def engine_for(url: str) -> Engine:
    return make_engine(url, get_settings().database_pool_size)


def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(bind=engine_for(url), expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    session = session_factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
