"""GET /api/v1/health: the API and its database answer, which workers are alive (their last heartbeat), and
whether this API process's reaper rounds succeed; `problems` says in words what the dashboard's banner
shows. Public (no sign-in), so it names no error text: the API log has the reaper's."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import BaseModel, Field
from sqlalchemy import text

from backend.api.deps import SessionDep
from backend.api.schemas import UTCDateTime
from backend.db.models import utcnow
from backend.liveness import REAPER_FAILING_ROUNDS, REAPER_ROUNDS, WORKER_SILENT_S, workers_seen

router = APIRouter(tags=["health"])

NO_WORKER = "no worker is running: jobs will wait"


class WorkerSeenOut(BaseModel):
    name: str = Field(description="The Celery worker's node name, e.g. kneeboard@host.")
    last_seen_at: UTCDateTime
    seen_s_ago: float = Field(description="Seconds since its last heartbeat.")
    alive: bool = Field(description=f"Seen in the last {WORKER_SILENT_S:.0f} s.")


class ReaperOut(BaseModel):
    running: bool = Field(description="This API process runs a reaper (it re-sends and retries lost jobs).")
    last_round_at: UTCDateTime | None
    last_success_at: UTCDateTime | None
    failures_in_a_row: int = Field(description="Rounds failed since the last that succeeded (0: fine).")


class HealthOut(BaseModel):
    status: str = Field(description="'ok': the API and its database answer.")
    database: str
    workers: list[WorkerSeenOut] = Field(description="Workers seen in the last day, most recent first.")
    reaper: ReaperOut
    problems: list[str] = Field(
        description="What keeps jobs from running, in words; empty when nothing does."
    )


def _seen(name: str, seen_at: datetime, now: datetime) -> WorkerSeenOut:
    ago = max(0.0, (now - seen_at).total_seconds())
    return WorkerSeenOut(
        name=name, last_seen_at=seen_at, seen_s_ago=round(ago, 1), alive=ago <= WORKER_SILENT_S
    )


@router.get("/health", operation_id="health")
def health(session: SessionDep) -> HealthOut:
    session.execute(text("SELECT 1"))
    now = utcnow()
    workers = [_seen(w.name, w.seen_at, now) for w in workers_seen(session)]
    session.rollback()
    rounds = REAPER_ROUNDS
    problems = [] if any(w.alive for w in workers) else [NO_WORKER]
    if rounds.running and rounds.failures_in_a_row >= REAPER_FAILING_ROUNDS:
        problems.append(
            f"the reaper's last {rounds.failures_in_a_row} rounds failed: lost jobs are not retried "
            "(see the API log)"
        )
    return HealthOut(
        status="ok",
        database="ok",
        workers=workers,
        reaper=ReaperOut(
            running=rounds.running,
            last_round_at=rounds.last_round_at,
            last_success_at=rounds.last_success_at,
            failures_in_a_row=rounds.failures_in_a_row,
        ),
        problems=problems,
    )
