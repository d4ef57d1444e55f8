"""GET /api/v1/health says whether anything runs the jobs (issue 32): each worker's last heartbeat (written by
its main process, backend/liveness.py), whether this API process's reaper rounds succeed, and in words what
keeps jobs from running: no worker seen for 60 s, or the reaper failing round after round."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from backend.api.health import NO_WORKER
from backend.db.models import WorkerHeartbeat, utcnow
from backend.db.session import session_factory
from backend.liveness import REAPER_FAILING_ROUNDS, REAPER_ROUNDS, WorkerBeat, beat
from backend.settings import Settings


@pytest.fixture
def reaper_record() -> Iterator[None]:
    saved = (REAPER_ROUNDS.running, REAPER_ROUNDS.failures_in_a_row)
    yield
    REAPER_ROUNDS.running, REAPER_ROUNDS.failures_in_a_row = saved


def _health(client: TestClient) -> dict[str, Any]:
    response = TestClient(client.app).get("/api/v1/health")  # public: no credential
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["database"]) == ("ok", "ok")
    return body


def test_no_worker_seen_is_a_problem(client: TestClient) -> None:
    body = _health(client)
    assert body["workers"] == [] and body["problems"] == [NO_WORKER]


def test_a_worker_seen_now_is_alive_and_one_silent_for_a_minute_is_not(
    client: TestClient, settings: Settings
) -> None:
    with session_factory(settings.resolved_database_url)() as s:
        beat(s, "kneeboard@a", 11, utcnow())
    body = _health(client)
    (seen,) = body["workers"]
    assert seen["name"] == "kneeboard@a" and seen["alive"] and seen["seen_s_ago"] < 30
    assert body["problems"] == []
    with session_factory(settings.resolved_database_url)() as s:
        s.execute(update(WorkerHeartbeat).values(seen_at=utcnow() - timedelta(seconds=61)))
        s.commit()
    body = _health(client)
    assert [(w["name"], w["alive"]) for w in body["workers"]] == [("kneeboard@a", False)]
    assert body["workers"][0]["seen_s_ago"] >= 61 and body["problems"] == [NO_WORKER]


def test_the_worker_main_process_thread_writes_its_heartbeat(client: TestClient, settings: Settings) -> None:
    thread = WorkerBeat(settings.resolved_database_url, "kneeboard@b", 22, interval_s=0.1)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not (workers := _health(client)["workers"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        first = workers[0]["last_seen_at"]
        time.sleep(0.5)
        (again,) = _health(client)["workers"]
    finally:
        thread.stop()
        thread.join(timeout=10)
    assert again["name"] == "kneeboard@b" and again["alive"] and again["last_seen_at"] > first


def test_a_reaper_failing_round_after_round_is_a_problem(
    client: TestClient, settings: Settings, reaper_record: None
) -> None:
    with session_factory(settings.resolved_database_url)() as s:
        beat(s, "kneeboard@c", 33, utcnow())
    REAPER_ROUNDS.running = True
    REAPER_ROUNDS.succeeded()
    body = _health(client)
    assert body["reaper"]["running"] and body["reaper"]["failures_in_a_row"] == 0 and body["problems"] == []
    for _ in range(REAPER_FAILING_ROUNDS - 1):
        REAPER_ROUNDS.failed()
    assert _health(client)["problems"] == []  # a blip or two is not reported
    REAPER_ROUNDS.failed()
    body = _health(client)
    assert body["reaper"]["failures_in_a_row"] == REAPER_FAILING_ROUNDS
    assert body["reaper"]["last_success_at"] < body["reaper"]["last_round_at"]
    assert body["problems"] == [
        f"the reaper's last {REAPER_FAILING_ROUNDS} rounds failed: lost jobs are not retried (see the API log)"
    ]
    REAPER_ROUNDS.succeeded()
    assert _health(client)["problems"] == []
