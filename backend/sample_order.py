"""Per-sample pages of a fidelity job from a cached order: deep pages cost as little as the first one.

Sorted by KL (descending, nulls last) with an OFFSET, a page of 100,000 per-sample rows cost Postgres a sort
of every row up to the offset: 99 ms for a page in the middle, plus 12 ms for its count(*), on every
request (the index on (job_id, output_name, kl) cannot give "DESC NULLS LAST, sample_index"). A succeeded
job's samples never change (written with its final status, deleted only with the job), so the sample
indexes in each requested order (output, sort, direction, filters) are read once per process and kept as
an int32 array: the total is its length, and a page is a slice of it fetched by primary key.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from backend.db.models import SampleDivergence
from backend.lru_cache import LRUCache

# At most 8 million sample indexes per API process in all (32 MB): 80 orders of a 100,000-sample job.
_ORDERS: LRUCache[tuple[Any, ...], np.ndarray] = LRUCache(max_weight=8_000_000, weight=len)


def sample_page(
    session: Session,
    job_id: uuid.UUID,
    finished_at: datetime | None,
    output: str | None,
    conditions: Sequence[ColumnElement[bool]],
    ordering: Sequence[Any],
    order_key: tuple[Any, ...],
    offset: int,
    limit: int,
) -> tuple[int, list[SampleDivergence]]:
    """(total, rows offset..offset+limit-1) of the samples matching `conditions` in `ordering`.

    `order_key` names the order and filters (the cache key, with the job and its finish time)."""

    def read_order() -> np.ndarray:
        indexes = session.scalars(
            select(SampleDivergence.sample_index).where(*conditions).order_by(*ordering)
        )
        return np.fromiter(indexes, dtype=np.int32)

    order = _ORDERS.get_or_compute((job_id, finished_at, output, *order_key), read_order)
    wanted = order[offset : offset + limit].tolist()
    if not wanted:
        return len(order), []
    rows = session.scalars(
        select(SampleDivergence).where(
            SampleDivergence.job_id == job_id,
            SampleDivergence.output_name == output,
            SampleDivergence.sample_index.in_(wanted),
        )
    )
    by_index = {row.sample_index: row for row in rows}
    # A row can be gone only when its job is being deleted: the page then leaves it out instead of failing.
    return len(order), [by_index[i] for i in wanted if i in by_index]
