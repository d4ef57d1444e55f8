"""A fan-out job's bar counts the work inside its running chunks (backend/fanout_progress.py and
chunk_lifecycle.chunk_progress): a 1-chunk scan no longer sits at 0 % through its cells and then jumps to
100 % (issue 35)."""

from __future__ import annotations

import dataclasses

import pytest

from backend import chunk_lifecycle as cl
from backend import job_lifecycle as jl
from backend.db.models import Job
from backend.db.session import session_factory
from backend.fanout_progress import fan_out_fraction, fan_out_message
from tests.conftest import truncate_all
from tests.support.jobs import queued_job


def test_fraction_counts_whole_chunks_and_the_running_ones_shares() -> None:
    assert fan_out_fraction(4, 1, 0.5 + 0.25) == pytest.approx(1.75 / 4)
    assert fan_out_fraction(1, 0, 0.3) == pytest.approx(0.3)
    assert fan_out_fraction(2, 2, 0.0) == 1.0
    assert fan_out_fraction(0, 0, 0.0) == 0.0
    assert fan_out_fraction(2, 1, 5.0) == 1.0  # never past done


def test_message_names_the_chunks_and_the_reporting_chunks_count() -> None:
    assert fan_out_message(4, 1) == "1 of 4 chunks done"
    assert fan_out_message(4, 1, 2, "12 of 40 cells") == "1 of 4 chunks done; chunk 3: 12 of 40 cells"


def test_running_chunks_move_the_job_bar(pg_url: str) -> None:
    truncate_all(pg_url)
    with session_factory(pg_url)() as session:
        job = queued_job(session, "sensitivity")
        claim = jl.claim(session, job.id, "planner")
        assert claim is not None and cl.fan_out(session, claim, [{"layers": ["a"]}, {"layers": ["b"]}])
        first = cl.claim_chunk(session, job.id, 0, "w1")
        second = cl.claim_chunk(session, job.id, 1, "w2")
        assert first is not None and second is not None

        def bar() -> tuple[float, str]:
            session.expire_all()
            row = session.get_one(Job, job.id)
            return row.progress, row.progress_message

        assert cl.chunk_progress(session, first, 0.5, "3 of 6 cells")
        assert bar() == (pytest.approx(0.25), "0 of 2 chunks done; chunk 1: 3 of 6 cells")
        assert cl.chunk_progress(session, second, 0.25, "1 of 4 cells")
        assert bar() == (pytest.approx(0.375), "0 of 2 chunks done; chunk 2: 1 of 4 cells")
        assert cl.finish_chunk(session, first, {})
        assert bar() == (pytest.approx(0.625), "1 of 2 chunks done")  # 1 whole chunk + a quarter of one
        stale = dataclasses.replace(second, token="not-ours")
        assert not cl.chunk_progress(session, stale, 0.9, "9 of 10 cells")
        assert bar()[0] == pytest.approx(0.625)
    truncate_all(pg_url)
