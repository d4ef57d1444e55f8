"""How many API processes the deployment runs and how many database connections each may hold."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import sqlalchemy.exc
from starlette.types import Receive, Scope, Send

from backend.api.request_slots import RequestSlots
from backend.db.session import make_engine
from backend.settings import Settings
from tests.support.services import REDIS_URL, start_api


def test_sqlite_serves_from_one_process_and_postgres_from_the_setting(tmp_path: Path) -> None:
    sqlite = Settings(data_dir=tmp_path, api_processes=3)
    assert sqlite.resolved_api_processes == 1
    postgres = Settings(data_dir=tmp_path, database_url="postgresql+psycopg://u@h/db", api_processes=3)
    assert postgres.resolved_api_processes == 3
    default = Settings(data_dir=tmp_path, database_url="postgresql+psycopg://u@h/db")
    assert 1 <= default.resolved_api_processes <= 4


def test_the_pool_is_fixed_at_its_size(pg_url: str) -> None:
    engine = make_engine(pg_url, pool_size=3)
    try:
        held = [engine.connect() for _ in range(3)]
        assert engine.pool.checkedout() == 3  # type: ignore[attr-defined]
        engine.pool._timeout = 0.2  # type: ignore[attr-defined]  # not the 30 s a request would wait
        with pytest.raises(sqlalchemy.exc.TimeoutError):  # no overflow connection beyond the pool
            engine.connect()
        for conn in held:
            conn.close()
    finally:
        engine.dispose()


def test_reads_beyond_the_slots_wait_their_turn_and_writes_do_not() -> None:
    """With 2 slots, 8 concurrent slow GETs run at most 2 at a time and all succeed; a POST is not gated."""
    inside = {"now": 0, "most": 0}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        inside["now"] += 1
        inside["most"] = max(inside["most"], inside["now"])
        await asyncio.sleep(0.05)
        inside["now"] -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def requests(method: str) -> list[int]:
        transport = httpx.ASGITransport(app=RequestSlots(app, slots=2))
        async with httpx.AsyncClient(transport=transport, base_url="http://kb") as client:
            responses = await asyncio.gather(*(client.request(method, "/api/v1/x") for _ in range(8)))
        return [r.status_code for r in responses]

    assert asyncio.run(requests("GET")) == [200] * 8
    assert inside["most"] == 2
    inside["most"] = 0
    assert asyncio.run(requests("POST")) == [200] * 8
    assert inside["most"] == 8


@pytest.mark.e2e
@pytest.mark.slow  # two uvicorn processes start in ~10-25 s on a busy 2-core machine
def test_kneeboard_api_serves_from_the_configured_processes(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=pg_url,
        broker_url=REDIS_URL,
        seed_demo=False,
        api_processes=2,
    )
    settings.data_dir.mkdir()
    api, base = start_api(settings, tmp_path / "api.log")
    try:
        assert httpx.get(f"{base}/api/v1/health", timeout=10).status_code == 200
        children = Path(f"/proc/{api.popen.pid}/task/{api.popen.pid}/children").read_text().split()
        servers = [pid for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(servers) == 2, api.log()[-2000:]
    finally:
        api.stop()
