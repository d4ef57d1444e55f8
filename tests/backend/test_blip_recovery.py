"""Riding out database and broker blips, on the real Postgres and Redis: a worker's transition survives its
connection being killed, retries are bounded and only for lost connections, and the reaper notices that the
broker lost its messages and re-sends queued work at once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from sqlalchemy import exc as sa_exc
from sqlalchemy import text, update
from sqlalchemy.orm import Session

from backend import job_lifecycle as jl
from backend import reaper as reaper_module
from backend.db.models import Job, JobStatus, utcnow
from backend.db.session import session_factory
from backend.db_retry import in_transaction, transient_db_error
from backend.queue import BrokerWatch
from backend.settings import Settings
from tests.support.jobs import queued_job
from tests.support.services import PG_ADMIN_URL, REDIS_URL


def _kill_connection_of(session: Session) -> None:
    """Terminate the server process behind the session's connection, as a Postgres restart does."""
    pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    session.commit()  # the connection goes back to the pool, still pointing at the doomed backend
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    deadline = time.monotonic() + 10
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_a_heartbeat_whose_connection_died_mid_transaction_is_retried_on_a_new_one(session: Session) -> None:
    job = queued_job(session)
    claim = jl.claim(session, job.id, "w1")
    assert claim is not None
    # Hold the connection inside a transaction (pre-ping cannot help then), and kill it.
    pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(0.2)
    assert jl.heartbeat(session, claim, progress=0.5), "retried on a fresh connection"
    session.expire_all()
    assert session.get_one(Job, job.id).progress == 0.5


def test_a_pooled_connection_killed_while_idle_is_replaced_by_pre_ping(session: Session) -> None:
    job = queued_job(session)
    _kill_connection_of(session)
    assert jl.claim(session, job.id, "w1") is not None


def test_retries_are_bounded_and_only_for_lost_connections(pg_url: str) -> None:
    calls = 0

    def unreachable(_session: Session) -> None:
        nonlocal calls
        calls += 1
        raise sa_exc.OperationalError("SELECT 1", {}, Exception("connection refused"))

    started = time.monotonic()
    with pytest.raises(sa_exc.OperationalError):
        in_transaction(session_factory(pg_url), unreachable, "test", budget_s=1.0)
    assert time.monotonic() - started < 3 and 2 <= calls <= 6, calls  # backoff 0.2, 0.4 s … within 1 s

    calls = 0

    def bad_data(_session: Session) -> None:
        nonlocal calls
        calls += 1
        raise sa_exc.IntegrityError("INSERT", {}, Exception("duplicate key"))

    with pytest.raises(sa_exc.IntegrityError):
        in_transaction(session_factory(pg_url), bad_data, "test", budget_s=10.0)
    assert calls == 1, "an error in the data is not retried"
    assert not transient_db_error(ValueError("x"))


@pytest.fixture
def broker_settings(settings: Settings) -> Iterator[Settings]:
    yield settings
    redis.Redis.from_url(REDIS_URL).delete(f"kneeboard:broker-epoch:{settings.queue_name}")


def test_the_broker_watch_notices_lost_data_once(broker_settings: Settings) -> None:
    watch, other_api_process = BrokerWatch(broker_settings), BrokerWatch(broker_settings)
    assert watch.lost() is None and other_api_process.lost() is None and watch.lost() is None
    redis.Redis.from_url(REDIS_URL).delete(watch.key)  # what a restart without persistence does
    before = utcnow()
    fresh_since = watch.lost()
    assert fresh_since is not None and before <= fresh_since <= utcnow()
    assert other_api_process.lost() == fresh_since, "every API process re-sends up to the same moment"
    assert watch.lost() is None
    filesystem = broker_settings.model_copy(update={"broker_url": ""})
    assert BrokerWatch(filesystem).lost() is None, "the filesystem broker keeps its messages"


def test_after_the_broker_lost_its_data_the_reaper_resends_queued_jobs_at_once(
    broker_settings: Settings, session: Session, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sent: list[uuid.UUID] = []
    monkeypatch.setattr(reaper_module, "enqueue_job", lambda _settings, _kind, job_id: sent.append(job_id))
    job = queued_job(session)
    jl.mark_enqueued(session, job.id)
    reaper = reaper_module.Reaper(broker_settings)
    reaper.round()
    assert sent == [], "just sent: nothing to re-send"
    other_api_process = reaper_module.Reaper(broker_settings)
    other_api_process.round()
    redis.Redis.from_url(REDIS_URL).delete(reaper.broker.key)
    reaper.round()
    assert sent == [job.id]
    other_api_process.round()
    reaper.round()
    assert sent == [job.id], "sent once, by one of the API processes"
    session.execute(update(Job).values(status=JobStatus.running.value))
    session.commit()


def test_the_reaper_loop_outlives_rounds_that_fail(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A database that cannot be reached fails each round; the loop logs it and keeps going."""
    import asyncio

    unreachable = Settings(
        data_dir=tmp_path,
        database_url="postgresql+psycopg://postgres@127.0.0.1:1/none",  # nothing listens on port 1
        reaper_interval_s=0.05,
        seed_demo=False,
    )

    async def run_briefly() -> bool:
        task = asyncio.create_task(reaper_module.reaper_loop(unreachable))
        await asyncio.sleep(1.0)
        alive = not task.done()
        task.cancel()
        return alive

    assert asyncio.run(run_briefly()), "the loop must still be running"
    failures = [r for r in caplog.records if "reaper round failed" in r.getMessage()]
    assert len(failures) >= 2, [r.getMessage() for r in caplog.records]
