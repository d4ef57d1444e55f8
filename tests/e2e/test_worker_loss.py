"""A worker killed with SIGKILL in the middle of a job never leaves the job "running": the API's reaper
sees the heartbeat stop, and the job is delivered again (and completes on another worker) or, once its
attempts are used up, fails with the reason. The first two run on Postgres + Redis and on the embedded mode
(SQLite + the embedded broker)."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from tests.e2e.conftest import SlowJobFiles, Stack

pytestmark = pytest.mark.e2e


def _start_slow_job(stack: Stack, files: SlowJobFiles) -> dict[str, Any]:
    c = stack.client
    project = c.create_project("slow")
    model = c.upload_model(project["id"], files.model)
    dataset = c.upload_dataset(project["id"], files.dataset)
    assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    return c.create_job(
        project["id"],
        "fidelity",
        {"golden_model_id": model["id"], "compressed_model_id": model["id"], "dataset_id": dataset["id"],
         "batch_size": 50, "threads": 1},
    )  # fmt: skip


def _wait_running_with_progress(stack: Stack, job_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = stack.client.job(job_id)
        if job["status"] == "running" and job["progress"] > 0.02:
            return job
        assert job["status"] in ("queued", "running"), job
        assert time.monotonic() < deadline, f"job never got going: {job}"
        time.sleep(0.1)


def test_killed_worker_job_is_redelivered_and_completes(
    make_each_stack: Any, slow_job_files: SlowJobFiles
) -> None:
    stack: Stack = make_each_stack(max_attempts=2)
    first = stack.add_worker("doomed")
    job = _start_slow_job(stack, slow_job_files)
    running = _wait_running_with_progress(stack, job["id"])
    assert running["progress"] < 0.9, "the job must be killed in the middle"

    first.kill_group(signal.SIGKILL)  # the whole worker: main process and pool child
    stack.add_worker("rescuer")
    done = stack.client.wait_job(job["id"], timeout=300)

    assert done["status"] == "succeeded", done
    assert done["attempts"] == 2
    assert done["worker_id"] != running["worker_id"]
    report = stack.client.fidelity(job["id"])["summary"]
    assert report["n_samples"] == 20_000  # complete results, not a mix of the two attempts
    rows = stack.client.http.get(f"/jobs/{job['id']}/fidelity/samples", params={"limit": 1}).json()
    assert rows["total"] == 20_000


def test_killed_worker_job_fails_with_a_reason_when_attempts_are_used_up(
    make_each_stack: Any, slow_job_files: SlowJobFiles
) -> None:
    stack: Stack = make_each_stack(max_attempts=1)
    worker = stack.add_worker("doomed")
    job = _start_slow_job(stack, slow_job_files)
    _wait_running_with_progress(stack, job["id"])
    worker.kill_group(signal.SIGKILL)
    killed_at = time.monotonic()

    done = stack.client.wait_job(job["id"], timeout=60)
    waited = time.monotonic() - killed_at
    assert done["status"] == "failed"
    assert "stopped sending heartbeats" in done["error"] and "gave up after 1 attempt" in done["error"]
    # Bounded: the heartbeat timeout plus a few reaper rounds, not forever.
    assert waited < stack.settings.heartbeat_timeout_s + 20


def test_cancelling_a_running_job_stops_its_work(make_stack: Any, slow_job_files: SlowJobFiles) -> None:
    stack: Stack = make_stack()
    worker = stack.add_worker("w1")
    job = _start_slow_job(stack, slow_job_files)
    _wait_running_with_progress(stack, job["id"])

    response = stack.client.http.post(f"/jobs/{job['id']}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    worker.wait_for_log("'cancelled'", timeout=30)  # the task returned early with status "cancelled"
    final = stack.client.job(job["id"])
    assert final["status"] == "cancelled" and final["progress"] < 1.0
    conflict = stack.client.http.get(f"/jobs/{job['id']}/fidelity")
    assert conflict.status_code == 409
