"""The declarative base every table derives from: the naming convention of constraints (so that Alembic's
autogenerate names them the same on Postgres and SQLite), JSON for dict/list columns, timezone-aware times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, DateTime, Dialect, MetaData
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class TZDateTime(TypeDecorator[datetime]):
    """A point in time, stored as UTC and always read back as an aware UTC datetime, on every database.

    Postgres keeps the offset (``timestamptz``) and hands back aware values; SQLite has no time type:
    SQLAlchemy stores the wall-clock digits without the offset and hands back *naive* datetimes. Compared
    with the aware ``utcnow()``, those raised ``TypeError: can't subtract offset-naive and offset-aware
    datetimes`` in the reaper, every round, so that the embedded mode never re-sent a queued job
    (issue 32). Here every value is converted to UTC before it is stored (an aware time in another zone
    would otherwise be stored as its local digits on SQLite), and a naive value read back is UTC.

    A naive datetime *given* to the database is refused (ValueError), not taken as UTC: every time the
    product writes comes from ``utcnow()``, so a naive one is a bug (``datetime.now()``, a timestamp
    parsed without its offset) that would be silently off by the machine's UTC offset on one database
    and right on the other. ``impl`` is ``DateTime(timezone=True)``, the type the migrations create, so
    Alembic's type comparison sees no difference (tests/backend/test_migrations.py).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):  # e.g. a date or a string: let the driver refuse it as before
            return value
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"naive datetime {value.isoformat()} given for a timezone-aware column: "
                "use an aware time (backend.db.models.utcnow(), or datetime(..., tzinfo=UTC))"
            )
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:  # SQLite: the stored digits are UTC
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
