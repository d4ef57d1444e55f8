"""How many API processes the deployment runs and how many database connections each may hold."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy.exc

from backend.db.session import make_engine
from backend.settings import Settings


def test_sqlite_serves_from_one_process_and_postgres_from_the_setting(tmp_path: Path) -> None:
    sqlite = Settings(data_dir=tmp_path, api_processes=3)
    assert sqlite.resolved_api_processes == 1
    postgres = Settings(data_dir=tmp_path, database_url="postgresql+psycopg://u@h/db", api_processes=3)
    assert postgres.resolved_api_processes == 3
    default = Settings(data_dir=tmp_path, database_url="postgresql+psycopg://u@h/db")
    assert 1 <= default.resolved_api_processes <= 4


def test_the_pool_is_fixed_at_its_size(pg_url: str) -> None:
    engine = make_engine(pg_url, pool_size=3)
    try:
        held = [engine.connect() for _ in range(3)]
        assert engine.pool.checkedout() == 3  # type: ignore[attr-defined]
        engine.pool._timeout = 0.2  # type: ignore[attr-defined]  # not the 30 s a request would wait
        with pytest.raises(sqlalchemy.exc.TimeoutError):  # no overflow connection beyond the pool
            engine.connect()
        for conn in held:
            conn.close()
    finally:
        engine.dispose()
