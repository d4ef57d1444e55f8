"""The SQL of the task proxy routes (backend/services/task_proxy.py) on SQLite, the embedded database (the
Postgres path runs in tests/backend/test_task_jobs.py): a large job's scatter is thinned to every k-th sample
by index, an exact sample (SQNR +∞, stored as NULL) is told from an undefined one, and the per-sample rows
come worst-first by a task metric in either direction, samples without a value last."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy import create_engine, insert
from sqlalchemy.orm import Session

from backend.db.models import Job, SampleDivergence
from backend.services.task_proxy import scatter_points, task_sample_page

JOB = uuid.uuid4()


def _row(i: int) -> dict[str, Any]:
    sqnr: float | None = 10.0 + (i % 7)
    mse = 0.1
    if i == 3:
        sqnr, mse = None, 0.0  # identical outputs: +∞ dB
    if i == 6:
        sqnr, mse = None, float("nan")  # undefined
    return {
        "job_id": JOB,
        "output_name": "logits",
        "sample_index": i,
        "sqnr_db": sqnr,
        "mse": None if mse != mse else mse,
        "finite": i != 6,
        "flagged": False,
        "task_values": {"iou": None if i == 5 else (i % 11) / 10, "wer": None if i == 5 else (i % 11) / 10},
    }


@pytest.fixture
def session() -> Iterator[Session]:
    engine = create_engine("sqlite://")
    SampleDivergence.metadata.tables["sample_divergences"].create(engine)
    with Session(engine) as s:
        s.execute(insert(SampleDivergence), [_row(i) for i in range(250)])
        yield s
    engine.dispose()


DOC = {"n_samples": 250, "proxy": "sqnr_db", "proxy_output": "logits"}


def test_a_large_job_is_drawn_every_kth_sample(session: Session) -> None:
    stride, points = scatter_points(session, JOB, DOC, 100)
    assert stride == math.ceil(250 / 100) == 3
    assert [p["sample_index"] for p in points] == list(range(0, 250, 3))
    by_index = {p["sample_index"]: p for p in points}
    assert by_index[3]["proxy"] is None and by_index[3]["proxy_infinite"] is True
    assert by_index[6]["proxy"] is None and by_index[6]["proxy_infinite"] is False
    assert by_index[9] == {
        "sample_index": 9,
        "proxy": 12.0,
        "proxy_infinite": False,
        "values": _row(9)["task_values"],
    }
    assert scatter_points(session, JOB, DOC, 250)[0] == 1


def test_rows_come_worst_first_in_the_metric_direction(session: Session) -> None:
    job = cast(Job, type("J", (), {"id": JOB, "finished_at": datetime.now(UTC)})())

    def order(metric: str, higher: bool, which: str) -> list[float | None]:
        total, rows = task_sample_page(session, job, "logits", metric, higher, which, 0, 1000)
        assert total == 250
        return [r.task_values[metric] if r.task_values else None for r in rows]

    iou = order("iou", True, "worst")
    assert iou[:3] == [0.0, 0.0, 0.0] and iou[-1] is None and iou[:-1] == sorted(iou[:-1])
    wer = order("wer", False, "worst")
    assert wer[:3] == [1.0, 1.0, 1.0] and wer[-1] is None and wer[:-1] == sorted(wer[:-1], reverse=True)
    assert order("wer", False, "best")[:-1] == iou[:-1]


def test_the_per_sample_table_sorts_by_a_task_value(session: Session) -> None:
    """GET …/fidelity/samples?task_metric=: the report's table led by the task's own values, on SQLite."""
    from backend.services.fidelity import sample_divergences

    job = cast(Job, type("J", (), {"id": JOB, "finished_at": datetime.now(UTC)})())

    def values(order: str, flagged: bool | None = None) -> list[float | None]:
        total, rows = sample_divergences(
            session,
            job,
            "logits",
            "kl",
            order,
            flagged,
            None,
            0,
            1000,
            task_metric="wer",  # type: ignore[arg-type]
        )
        assert total == (250 if flagged is None else 0)
        return [r.task_values["wer"] if r.task_values else None for r in rows]

    desc, asc = values("desc"), values("asc")
    present = [v for v in desc if v is not None]
    assert present == sorted(present, reverse=True) and desc[len(present) :] == [None] * (250 - len(present))
    assert [v for v in asc if v is not None] == sorted(present) and asc[-1] is None
    assert len(present) == 249  # only sample 5 has none
    assert values("desc", flagged=True) == []
