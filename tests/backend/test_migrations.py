"""Alembic is the only way tables are made: the migrated schema must equal the ORM models."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from backend.db.migrations import upgrade_to_head
from backend.db.models import Base
from tests.support.services import private_postgres_database

HOW_TO_FIX = (
    "The ORM models and the Alembic migrations differ. Create a migration with\n"
    "  KNEEBOARD_DATABASE_URL=sqlite:////tmp/kb.db .venv/bin/alembic upgrade head &&\n"
    "  KNEEBOARD_DATABASE_URL=sqlite:////tmp/kb.db .venv/bin/alembic revision --autogenerate -m '...'\n"
    "and review it. Differences:\n"
)


def _diff(url: str) -> list[object]:
    upgrade_to_head(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, Base.metadata)
    engine.dispose()
    return list(diff)


def test_migrations_match_models_on_postgres() -> None:
    with private_postgres_database() as url:
        diff = _diff(url)
    assert diff == [], HOW_TO_FIX + "\n".join(map(str, diff))


def test_migrations_match_models_on_sqlite(tmp_path: Path) -> None:
    diff = _diff(f"sqlite:///{tmp_path / 'kb.db'}")
    assert diff == [], HOW_TO_FIX + "\n".join(map(str, diff))


def test_drift_is_detected(tmp_path: Path) -> None:
    """The comparison is not vacuous: a column the migrations lack shows up."""
    from sqlalchemy import Column, Integer, MetaData, Table

    url = f"sqlite:///{tmp_path / 'kb.db'}"
    upgrade_to_head(url)
    meta = MetaData()
    for table in Base.metadata.tables.values():
        table.to_metadata(meta)
    Table("projects", meta, Column("surprise", Integer), extend_existing=True)
    with create_engine(url).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), meta)
    assert any("surprise" in str(d) for d in diff)


def test_downgrade_to_base_and_back(tmp_path: Path) -> None:
    from alembic import command
    from backend.db.migrations import alembic_config

    url = f"sqlite:///{tmp_path / 'kb.db'}"
    upgrade_to_head(url)
    command.downgrade(alembic_config(url), "base")
    upgrade_to_head(url)
    assert _diff(url) == []
