"""Database and broker blips stall nothing: Postgres stopped for 5 s, or Redis stopped for 5 s (losing every
queued message: it keeps nothing on disk here), while jobs are queued and running; every job then succeeds
within 2 minutes of the restart, with the results of an undisturbed run.

These tests stop the shared Postgres and Redis servers (and always start them again exactly as they were,
even when a test fails). pytest runs tests one at a time here (no xdist), so no other test sees the outage.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import httpx
import psycopg
import pytest
import redis

from tests.e2e.conftest import SlowJobFiles, Stack
from tests.support.services import PG_ADMIN_URL, REDIS_URL

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OUTAGE_S = 5.0
RECOVERY_S = 120.0
PG_VERSION = sorted(os.listdir("/etc/postgresql"))[0] if os.path.isdir("/etc/postgresql") else ""
REDIS_START = [
    "redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379", "--save", "",
    "--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log",
]  # fmt: skip
SENSITIVITY_CONFIGS = [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}]


needs_local_services = pytest.mark.skipif(
    not (PG_VERSION and shutil.which("pg_ctlcluster") and shutil.which("redis-server") and os.geteuid() == 0),
    reason="stops and restarts the local Postgres cluster and Redis server (needs them installed, and root)",
)


def _postgres_answers() -> bool:
    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def _redis_answers() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping())
    except redis.RedisError:
        return False


def _wait_until(check: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} did not come back within {timeout} s"
        time.sleep(0.2)


def _pg_ctl(action: str) -> None:
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, "main", action],
        check=True,
        capture_output=True,
        timeout=60,
    )


@contextmanager
def postgres_stopped() -> Iterator[None]:
    """Postgres down (fast shutdown: open connections are cut) for the body of the block; always restarted."""
    _pg_ctl("stop")
    try:
        yield
    finally:
        if not _postgres_answers():
            _pg_ctl("start")
        _wait_until(_postgres_answers, "Postgres")


@contextmanager
def redis_stopped() -> Iterator[None]:
    """Redis down for the body of the block, without saving: it comes back empty, as a Redis without
    persistence does; always restarted exactly as scripts/services.sh starts it."""
    with suppress(redis.RedisError):
        redis.Redis.from_url(REDIS_URL).shutdown(nosave=True)
    _wait_until(lambda: not _redis_answers(), "Redis going down", timeout=20)
    try:
        yield
    finally:
        if not _redis_answers():
            subprocess.run(REDIS_START, check=True, capture_output=True, timeout=30)
        _wait_until(_redis_answers, "Redis")


def _upload(stack: Stack, demo_files: Any, slow: SlowJobFiles) -> dict[str, str]:
    c = stack.client
    project = c.create_project("blips")
    ids = {
        "project": project["id"],
        "golden": c.upload_model(project["id"], demo_files.golden_onnx, name="golden")["id"],
        "int8": c.upload_model(project["id"], demo_files.int8_onnx, name="int8")["id"],
        "wide": c.upload_model(project["id"], slow.model, name="wide")["id"],
        "digits": c.upload_dataset(project["id"], demo_files.test_npz)["id"],
        "many": c.upload_dataset(project["id"], slow.dataset)["id"],
    }
    for key in ("golden", "int8", "wide"):
        assert c.wait_model(ids[key], timeout=180)["status"] == "ready"
    return ids


def _fidelity(stack: Stack, ids: dict[str, str]) -> str:
    params = {
        "golden_model_id": ids["golden"],
        "compressed_model_id": ids["int8"],
        "dataset_id": ids["digits"],
    }
    return str(stack.client.create_job(ids["project"], "fidelity", params)["id"])


def _slow(stack: Stack, ids: dict[str, str]) -> str:
    params = {"golden_model_id": ids["wide"], "compressed_model_id": ids["wide"], "dataset_id": ids["many"],
              "batch_size": 50, "threads": 1, "layer_profile": False}  # fmt: skip
    return str(stack.client.create_job(ids["project"], "fidelity", params)["id"])


def _wide_scan(stack: Stack, ids: dict[str, str]) -> str:
    """A sensitivity scan of the wide MLP in 3 chunks of about a second or more each."""
    params = {"model_id": ids["wide"], "dataset_id": ids["many"], "configs": SENSITIVITY_CONFIGS,
              "max_samples": 3000, "batch_size": 500, "whole_model": False, "mixed_precision_bits": [],
              "importance_methods": [], "threads": 1, "chunks": 3}  # fmt: skip
    return str(stack.client.create_job(ids["project"], "sensitivity", params)["id"])


def _job(stack: Stack, job_id: str) -> dict[str, Any] | None:
    """The job, or None while the API cannot answer (its database is down)."""
    try:
        response = stack.client.http.get(f"/jobs/{job_id}", timeout=10)
    except httpx.HTTPError:
        return None
    return response.json() if response.status_code == 200 else None


def _wait_running(stack: Stack, job_id: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ((job := _job(stack, job_id)) and job["status"] == "running" and job["progress"] > 0.02):
        assert job is None or job["status"] in ("queued", "running"), job
        assert time.monotonic() < deadline, f"job never got going: {job}"
        time.sleep(0.1)


def _wait_all_succeeded(stack: Stack, job_ids: list[str], since: float) -> None:
    """Every job succeeds within RECOVERY_S of `since` (the restart)."""
    pending = list(job_ids)
    while True:
        if not pending:
            print(f"every job succeeded {time.monotonic() - since:.1f} s after the restart")
            return
        job = _job(stack, pending[0])
        if job is not None and job["status"] not in ("queued", "running"):
            assert job["status"] == "succeeded", job
            pending.pop(0)
            continue
        waited = time.monotonic() - since
        assert waited < RECOVERY_S, f"still {job} {waited:.0f} s after the restart; pending {pending}"
        time.sleep(0.3)


def _fidelity_result(stack: Stack, job_id: str) -> tuple[Any, Any]:
    c = stack.client
    samples = c.http.get(
        f"/jobs/{job_id}/fidelity/samples", params={"sort": "kl", "order": "desc", "limit": 50}
    )
    assert samples.status_code == 200, samples.text
    summary = c.fidelity(job_id)["summary"]
    summary.pop("resources")  # what this run cost (seconds, peak memory), not what it found
    return summary, samples.json()


def _sensitivity_result(stack: Stack, job_id: str) -> Any:
    report = stack.client.http.get(f"/jobs/{job_id}/sensitivity").json()
    return report["matrix"], report["ranking"]


def _blip_settings() -> dict[str, object]:
    # The heartbeat timeout outlasts the outage (the reaper must not take running work back for a blip);
    # re-sends and the reaper are fast so that the test runs in seconds, not the deployment's minutes.
    return {"heartbeat_timeout_s": 20.0, "queued_resend_s": 10.0, "queued_resend_max_s": 30.0,
            "max_attempts": 3, "db_retry_s": 60.0}  # fmt: skip


@needs_local_services
def test_postgres_stopped_for_five_seconds_stalls_nothing(
    make_stack: Any, demo_files: Any, slow_job_files: SlowJobFiles
) -> None:
    stack: Stack = make_stack(**_blip_settings())
    stack.add_worker("w1")
    stack.add_worker("w2")
    ids = _upload(stack, demo_files, slow_job_files)
    reference = _fidelity(stack, ids)
    stack.client.wait_job(reference, timeout=180)
    expected = _fidelity_result(stack, reference)

    slow = _slow(stack, ids)
    _wait_running(stack, slow)
    holder = int(stack.client.job(slow)["worker_id"].rsplit(":", 1)[1])  # the pool process running it
    (idle,) = [w for w in stack.workers if os.getpgid(holder) != w.popen.pid]
    # The idle worker is paused, so that it takes the next message in the middle of the outage: its claim
    # meets a database that is down (the messages taken then used to be acknowledged and lost).
    os.killpg(idle.popen.pid, signal.SIGSTOP)
    try:
        queued = [_fidelity(stack, ids), _fidelity(stack, ids)]
        assert stack.client.job(slow)["status"] == "running", "the slow job must span the outage"
        with postgres_stopped():
            os.killpg(idle.popen.pid, signal.SIGCONT)
            time.sleep(OUTAGE_S)
    finally:
        os.killpg(idle.popen.pid, signal.SIGCONT)
    restarted = time.monotonic()

    _wait_all_succeeded(stack, [slow, *queued], restarted)
    for job_id in queued:
        assert _fidelity_result(stack, job_id) == expected
    done = stack.client.job(slow)
    assert done["attempts"] == 1, "a blip is not a lost worker: the running job was never taken back"
    assert stack.client.fidelity(slow)["summary"]["n_samples"] == 20_000
    assert "claim: database unavailable" in idle.log(), "the paused worker's claim met the outage"
    assert "heartbeat: database unavailable" in "".join(w.log() for w in stack.workers)


@needs_local_services
def test_redis_stopped_for_five_seconds_loses_no_job(
    make_stack: Any, demo_files: Any, slow_job_files: SlowJobFiles
) -> None:
    stack: Stack = make_stack(**_blip_settings())
    stack.add_worker("w1")
    ids = _upload(stack, demo_files, slow_job_files)
    reference_fidelity, reference_scan = _fidelity(stack, ids), _wide_scan(stack, ids)
    for job_id in (reference_fidelity, reference_scan):
        assert stack.client.wait_job(job_id, timeout=180)["status"] == "succeeded"
    expected_fidelity = _fidelity_result(stack, reference_fidelity)
    expected_scan = _sensitivity_result(stack, reference_scan)

    # One worker: it plans the scan, sends its 3 chunk messages and runs the first one sent (the largest
    # expected cost, whichever index that is); the other two chunks and a fidelity job wait in Redis,
    # which forgets them.
    scan = _wide_scan(stack, ids)
    deadline = time.monotonic() + 120
    while sorted(ch["status"] for ch in stack.client.http.get(f"/jobs/{scan}/chunks").json()) != [
        "queued", "queued", "running"
    ]:  # fmt: skip
        assert time.monotonic() < deadline, stack.client.http.get(f"/jobs/{scan}/chunks").json()
        time.sleep(0.05)
    fidelity = _fidelity(stack, ids)
    with redis_stopped():
        time.sleep(OUTAGE_S)
    restarted = time.monotonic()

    _wait_all_succeeded(stack, [scan, fidelity], restarted)
    assert _fidelity_result(stack, fidelity) == expected_fidelity
    assert _sensitivity_result(stack, scan) == expected_scan
    chunks = stack.client.http.get(f"/jobs/{scan}/chunks").json()
    assert [ch["status"] for ch in chunks] == ["succeeded"] * 3
    assert "lost its data" in stack.api.log(), "the reaper must have noticed the empty broker"


def test_restart_helpers_leave_services_answering() -> None:
    """The services this module stops are up when it starts and ends (a guard for the rest of the suite)."""
    assert _postgres_answers() and _redis_answers()
