"""What every area's bodies share: UTC timestamps, reading ORM rows, paged lists and their offset."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict


def _as_utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; every timestamp we store is UTC.
    return value if value.tzinfo else value.replace(tzinfo=UTC)


UTCDateTime = Annotated[datetime, AfterValidator(_as_utc)]


class ORMModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


T = TypeVar("T")

# Every paged list bounds its offset: Postgres's OFFSET is a bigint, so an unbounded one (2**63) was a 500.
# 2**31 - 1 (as the dataset preview) is far past any page a list holds and fits every database's integer.
MAX_OFFSET = 2**31 - 1
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip (at most 2**31 - 1).")]


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int
