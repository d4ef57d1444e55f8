"""Is anything running the jobs? Worker heartbeats (written by each worker's main process) and the outcome
of this API process's reaper rounds, as GET /api/v1/health reports them."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from backend.db.models import WorkerHeartbeat, utcnow
from backend.db.session import make_engine

log = logging.getLogger(__name__)

WORKER_SILENT_S = 60.0
"""A worker not seen for this long is not running (its heartbeat comes every heartbeat_interval_s)."""
FORGET_AFTER = timedelta(days=1)
"""Rows of workers gone this long are deleted (a worker's row is its own: names do not pile up)."""
REAPER_FAILING_ROUNDS = 3
"""This many failed reaper rounds in a row is reported as a problem (one can be a database blip)."""


def beat(session: Session, name: str, pid: int, started_at: datetime) -> None:
    """Records that worker `name` is alive now. Committed."""
    now = utcnow()
    row = session.get(WorkerHeartbeat, name)
    if row is None:
        session.add(WorkerHeartbeat(name=name, pid=pid, started_at=started_at, seen_at=now))
    else:
        row.pid, row.started_at, row.seen_at = pid, started_at, now
    session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.seen_at < now - FORGET_AFTER))
    session.commit()


def workers_seen(session: Session) -> list[WorkerHeartbeat]:
    """Every worker seen in the last day, the most recently seen first."""
    since = utcnow() - FORGET_AFTER
    rows = session.scalars(
        select(WorkerHeartbeat)
        .where(WorkerHeartbeat.seen_at >= since)
        .order_by(WorkerHeartbeat.seen_at.desc())
    ).all()
    return list(rows)


class WorkerBeat(threading.Thread):
    """The worker main process's heartbeat: its row every `interval_s` until `stop`. A failed write (the
    database restarting) is logged and tried again next time. Its own engine, whose connection is closed after
    each beat: the main process forks pool processes, which must not inherit an open connection."""

    def __init__(self, database_url: str, name: str, pid: int, interval_s: float) -> None:
        super().__init__(name="worker-liveness", daemon=True)
        self.engine = make_engine(database_url, pool_size=1)
        self.worker, self.pid, self.interval_s = name, pid, interval_s
        self.started_at = utcnow()
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                with Session(self.engine) as session:
                    beat(session, self.worker, self.pid, self.started_at)
            except Exception as exc:
                log.warning("worker heartbeat not written: %s: %s", type(exc).__name__, exc)
            finally:
                self.engine.dispose()
            self.stopped.wait(self.interval_s)

    def stop(self) -> None:
        self.stopped.set()


@dataclass
class ReaperRounds:
    """The outcome of this API process's reaper rounds (each API process runs its own reaper)."""

    running: bool = False
    last_round_at: datetime | None = None
    last_success_at: datetime | None = None
    failures_in_a_row: int = 0

    def succeeded(self) -> None:
        self.last_round_at = self.last_success_at = utcnow()
        self.failures_in_a_row = 0

    def failed(self) -> None:
        self.last_round_at = utcnow()
        self.failures_in_a_row += 1


REAPER_ROUNDS = ReaperRounds()
"""This process's reaper's record (backend/reaper.py writes it, the health route reads it)."""
