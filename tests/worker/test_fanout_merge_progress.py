"""A fan-out job's bar counts its chunks: the merge's own progress reports (which start again from 0) change
the message only, so a scan whose chunks are all done never shows 0 % (issue 16)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from backend import chunk_lifecycle as cl
from backend import job_lifecycle as jl
from backend.db.models import Job
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.jobs import queued_job
from worker import fanout
from worker.runtime import JobContext, ResultWriter


class _Handler:
    """Merges nothing; reports progress from 0 as the sensitivity merge does, and reads the job row back."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []

    def run_chunk(self, ctx: JobContext, spec: dict[str, Any]) -> dict[str, Any]:
        return {}

    def merge(self, ctx: JobContext, chunks: Any) -> ResultWriter:
        ctx.progress(0.0, "mixed precision at 4 bits on average")
        with ctx.sessions() as session:
            job = session.get_one(Job, ctx.job_id)
            self.seen.append((job.progress, job.progress_message))
        return lambda session: None

    def plan(self, ctx: JobContext) -> list[dict[str, Any]]:
        return [{}]

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        pass


def test_the_merge_keeps_the_bar_at_the_chunks_share(pg_url: str, settings: Settings) -> None:
    truncate_all(pg_url)
    with session_factory(pg_url)() as session:
        job = queued_job(session, "sensitivity")
        claim = jl.claim(session, job.id, "planner")
        assert claim is not None and cl.fan_out(session, claim, [{"layers": ["l0"]}])
        chunk = cl.claim_chunk(session, job.id, 0, "w1")
        assert chunk is not None and cl.finish_chunk(session, chunk, {})
        job_id = job.id
    handler = _Handler()
    assert fanout.execute_merge(str(job_id), handler, settings) == "succeeded"
    assert handler.seen == [(1.0, "merging chunks: mixed precision at 4 bits on average")]
    truncate_all(pg_url)
