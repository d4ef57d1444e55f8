"""Every time the database hands back is timezone-aware UTC, on SQLite too (issue 32: SQLite's naive
datetimes made the reaper fail every round in the embedded mode)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Column, DateTime, Table, create_engine, insert, select, update

from backend.db.models import Base, Job, TZDateTime
from tests.support.jobs import queued_job

DATETIME_COLUMNS = [
    column
    for table in Base.metadata.sorted_tables
    for column in table.columns
    if isinstance(column.type, DateTime | TZDateTime)
]


def _filler(column: Column[Any]) -> Any:
    """A value of the column's Python type, for the NOT NULL columns of a row inserted with no checks."""
    if isinstance(column.type, TZDateTime):
        return datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)
    python_type = column.type.python_type
    samples: dict[type, Any] = {
        uuid.UUID: uuid.uuid4(),
        str: "x",
        int: 1,
        float: 1.0,
        bool: False,
        dict: {},
        list: [],
        bytes: b"x",
        object: {},  # JSON,
    }
    return samples[python_type]


def test_there_are_datetime_columns_and_each_is_tzdatetime() -> None:
    assert len(DATETIME_COLUMNS) > 10
    plain = [f"{c.table.name}.{c.name}" for c in DATETIME_COLUMNS if not isinstance(c.type, TZDateTime)]
    assert plain == [], "a plain DateTime column reads back naive on SQLite: use TZDateTime"


@pytest.mark.parametrize("table", sorted({c.table.name for c in DATETIME_COLUMNS}))
def test_every_datetime_column_reads_back_aware_utc_on_sqlite(sqlite_url: str, table: str) -> None:
    """A row in each table with every datetime column set (foreign keys off: only the types matter here)."""
    engine = create_engine(sqlite_url)  # no pragmas: SQLite leaves foreign keys off
    t: Table = Base.metadata.tables[table]
    eastern = timezone(timedelta(hours=-5))
    moment = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=eastern)
    values = {c.name: _filler(c) for c in t.columns if not c.nullable and c.server_default is None}
    values |= {c.name: moment for c in t.columns if isinstance(c.type, TZDateTime)}
    try:
        with engine.begin() as conn:
            conn.execute(insert(t).values(**values))
            row = conn.execute(select(t)).mappings().one()
    finally:
        engine.dispose()
    for column in (c for c in t.columns if isinstance(c.type, TZDateTime)):
        got = row[column.name]
        assert got.tzinfo is not None and got.utcoffset() == timedelta(0), f"{table}.{column.name}: {got!r}"
        assert got == moment, f"{table}.{column.name}: {got!r} is not the instant stored ({moment!r})"


def test_a_naive_datetime_is_refused_with_the_reason(sqlite_url: str) -> None:
    from backend.db.session import session_factory

    with session_factory(sqlite_url)() as session:
        job = queued_job(session)
        with pytest.raises(Exception, match=r"naive datetime .* timezone-aware column"):
            session.execute(update(Job).where(Job.id == job.id).values(enqueued_at=datetime(2026, 1, 1)))


def test_orm_times_are_aware_on_sqlite(sqlite_url: str) -> None:
    from backend.db.session import session_factory

    with session_factory(sqlite_url)() as session:
        job = queued_job(session)
        session.expire_all()
        row = session.get_one(Job, job.id)
        assert row.created_at.tzinfo is not None and row.created_at.utcoffset() == timedelta(0)
