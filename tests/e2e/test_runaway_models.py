"""Models that hang or exhaust their runtime, through the real API, queue and Celery worker: each is contained
to its own task (a time limit per task, an address-space limit per pool process), its job fails once with
a reason that says which limit and how to raise it, the API answers all along, and the same worker then runs
a normal job (the models: tests/support/runaway_models.py)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.e2e.conftest import Stack
from tests.support.runaway_models import (
    MEMORY_LIMIT_MB,
    TIME_LIMIT_S,
    abs_model,
    endless_loop_model,
    memory_hog_model,
)

pytestmark = pytest.mark.e2e


# ------------------------------------------------------------------- the real stack: API, queue, worker


@pytest.fixture(scope="module")
def stack(make_stack_module: Any) -> Stack:
    # A generous heartbeat timeout: on a loaded machine a starved heartbeat would let the reaper requeue a
    # job before its limit strikes, and these tests are about the limits (test_worker_loss is about the reaper).
    stack: Stack = make_stack_module(
        task_time_limit_s=TIME_LIMIT_S,
        worker_memory_limit_mb=MEMORY_LIMIT_MB,
        max_attempts=2,
        heartbeat_timeout_s=60.0,
    )
    stack.add_worker("w1")
    return stack


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runaway") / "data.npz"
    np.savez(path, input=np.random.default_rng(0).random((8, 4), dtype=np.float32))
    return path


def _upload(stack: Stack, project: dict[str, Any], path: Path) -> dict[str, Any]:
    return stack.client.wait_model(stack.client.upload_model(project["id"], path)["id"], timeout=120)


def _fidelity(stack: Stack, project: dict[str, Any], model: dict[str, Any], dataset: dict[str, Any]) -> str:
    params = {"golden_model_id": model["id"], "compressed_model_id": model["id"], "dataset_id": dataset["id"],
              "batch_size": 1, "threads": 1}  # fmt: skip
    return str(stack.client.create_job(project["id"], "fidelity", params)["id"])


def _wait_answering_health(stack: Stack, job_id: str, bound_s: float) -> dict[str, Any]:
    """Wait for the job to end, checking that the API answers health quickly all the while."""
    deadline = time.monotonic() + bound_s
    while True:
        asked = time.monotonic()
        assert stack.client.health()["status"] == "ok"
        assert time.monotonic() - asked < 5, "the API stopped answering while a model misbehaved"
        job = stack.client.job(job_id)
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, f"job not contained within {bound_s} s: {job}"
        time.sleep(0.5)


def _pool_processes(stack: Stack) -> list[int]:
    main = stack.workers[0].popen.pid
    children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
    return [int(pid) for pid in children]


def _assert_worker_serves_a_normal_job(stack: Stack, project: dict[str, Any], tmp: Path) -> None:
    assert stack.workers[0].popen.poll() is None, "the worker's main process must survive"
    normal = _upload(stack, project, abs_model(tmp / "abs.onnx"))
    assert normal["status"] == "ready", normal
    dataset = stack.client.upload_dataset(project["id"], tmp / "data.npz")
    done = stack.client.wait_job(_fidelity(stack, project, normal, dataset), timeout=120)
    assert done["status"] == "succeeded", done
    assert stack.client.fidelity(done["id"])["summary"]["n_samples"] == 8


def _failed_with(
    stack: Stack, project: dict[str, Any], model_path: Path, data: Path, bound_s: float
) -> tuple[dict[str, Any], str]:
    """Upload the model and run a fidelity job on it; whichever step the limit catches (the inspection
    or the job) fails, once, with the reason. Returns that job and its error."""
    model = _upload(stack, project, model_path)
    if model["status"] == "invalid":  # caught while inspecting: the inspection job failed with the reason
        listed = stack.client.http.get("/jobs", params={"project_id": project["id"], "kind": "inspect"})
        inspect = next(j for j in listed.json()["items"] if j["params"]["model_id"] == model["id"])
        assert inspect["status"] == "failed" and inspect["error"] == model["error"], (inspect, model)
        return inspect, str(model["error"])
    assert model["status"] == "ready", model
    dataset = stack.client.upload_dataset(project["id"], data)
    job = _wait_answering_health(stack, _fidelity(stack, project, model, dataset), bound_s)
    assert job["status"] == "failed", job
    return job, str(job["error"])


def test_a_model_that_loops_forever_fails_at_the_time_limit(stack: Stack, data: Path, tmp_path: Path) -> None:
    project = stack.client.create_project("endless")
    started = time.monotonic()
    job, error = _failed_with(stack, project, endless_loop_model(tmp_path / "loop.onnx"), data, 120)
    assert f"exceeded the time limit of {TIME_LIMIT_S} s per task" in error, error
    assert "KNEEBOARD_TASK_TIME_LIMIT_S" in error
    assert time.monotonic() - started < TIME_LIMIT_S + 90  # a bound, not a measurement
    assert "Hard time limit" in stack.workers[0].log()
    assert job["attempts"] == 1  # failed once, not retried: a second attempt would only hang again

    (tmp_path / "data.npz").write_bytes(data.read_bytes())
    _assert_worker_serves_a_normal_job(stack, project, tmp_path)
    assert stack.client.job(job["id"]) == job, (
        "a failed job stays as it was (the redelivered message is skipped)"
    )


def test_a_model_that_allocates_too_much_fails_with_the_memory_limit(
    stack: Stack, data: Path, tmp_path: Path
) -> None:
    limits = [Path(f"/proc/{pid}/limits").read_text() for pid in _pool_processes(stack)]
    assert limits and all(f"Max address space         {MEMORY_LIMIT_MB << 20}" in text for text in limits), (
        limits
    )

    project = stack.client.create_project("hog")
    job, error = _failed_with(stack, project, memory_hog_model(tmp_path / "hog.onnx"), data, 120)
    assert "memory" in error and "KNEEBOARD_WORKER_MEMORY_LIMIT_MB" in error, error
    assert f"{MEMORY_LIMIT_MB} MiB" in error, error
    assert job["attempts"] == 1

    (tmp_path / "data.npz").write_bytes(data.read_bytes())
    _assert_worker_serves_a_normal_job(stack, project, tmp_path)
    assert stack.client.job(job["id"]) == job


@pytest.mark.parametrize(
    ("sig", "expected"),
    [(signal.SIGSEGV, "signal 11 (SIGSEGV)"), (signal.SIGKILL, "killed by signal 9 (SIGKILL)")],
    ids=["crash", "sigkill"],
)
def test_a_pool_process_that_dies_under_a_job_fails_only_that_job(
    stack: Stack, data: Path, tmp_path: Path, sig: signal.Signals, expected: str
) -> None:
    """A runtime that crashes (SIGSEGV) or a process the kernel kills for memory (SIGKILL) takes down the
    pool process running the model: the worker's main process fails that job at once with the reason,
    without a second attempt, and the worker goes on."""
    project = stack.client.create_project(f"dies-{sig.name}")
    model = _upload(stack, project, endless_loop_model(tmp_path / "loop.onnx"))
    assert model["status"] == "ready", model
    dataset = stack.client.upload_dataset(project["id"], data)
    job_id = _fidelity(stack, project, model, dataset)
    deadline = time.monotonic() + 60
    while stack.client.job(job_id)["status"] != "running":
        assert time.monotonic() < deadline, stack.client.job(job_id)
        time.sleep(0.2)
    (pool,) = _pool_processes(stack)
    os.kill(pool, sig)

    job = _wait_answering_health(stack, job_id, TIME_LIMIT_S - 5)  # well before the time limit strikes
    assert job["status"] == "failed" and job["attempts"] == 1, job
    assert "the worker process running the model died" in job["error"] and expected in job["error"], job
    # Killed by hand, not by the kernel: the reason must not blame the out-of-memory killer.
    assert "by the kernel's out-of-memory killer" not in job["error"], job

    (tmp_path / "data.npz").write_bytes(data.read_bytes())
    _assert_worker_serves_a_normal_job(stack, project, tmp_path)
    assert stack.client.job(job_id) == job, (
        "a failed job stays as it was (the redelivered message is skipped)"
    )
