"""Models that hang or exhaust their runtime, through the real API, queue and Celery worker: each is contained
to its own task (a time limit per task, an address-space limit per pool process), its job fails once with
a reason that says which limit and how to raise it, the API answers all along, and the same worker then runs
a normal job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from backend import chunk_lifecycle, job_lifecycle
from backend.db.models import Artifact, Job, JobChunk, Model, Project, Team
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.e2e.conftest import Stack
from tests.support.services import REPO_ROOT

pytestmark = pytest.mark.e2e

TIME_LIMIT_S = 20
MEMORY_LIMIT_MB = 3072
HOG_SIDE = 1 << 15
"""The memory hog expands every sample to HOG_SIDE² float32: 4 GiB per sample, above MEMORY_LIMIT_MB."""


def _check(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model, full_check=True)  # a well-formed model: only running it misbehaves
    onnx.save(model, path)
    return path


def endless_loop_model(path: Path) -> Path:
    """y = sin(sin(…sin(x))) for 2**62 iterations: an ONNX Loop that onnxruntime spins on (as good as forever)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Sin", ["v_in"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip_count", "keep_going", "input"], ["output"], body=body)],
        "endless_loop",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4])],
        initializer=[
            helper.make_tensor("trip_count", TensorProto.INT64, [], [2**62]),
            helper.make_tensor("keep_going", TensorProto.BOOL, [], [True]),
        ],
    )
    return _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def memory_hog_model(path: Path, side: int = HOG_SIDE) -> Path:
    """y = max over a (batch, side, side) broadcast of each sample's sum: a tensor of batch * side² floats,
    sized by the input at run time (so nothing is allocated while the model is loaded or inspected)."""
    nodes = [
        helper.make_node("Shape", ["input"], ["batch"], start=0, end=1),
        helper.make_node("Concat", ["batch", "square"], ["huge_shape"], axis=0),
        helper.make_node("ReduceSum", ["input", "axis_1"], ["sums"], keepdims=1),  # (batch, 1)
        helper.make_node("Unsqueeze", ["sums", "axis_2"], ["sums3"]),  # (batch, 1, 1)
        helper.make_node("Expand", ["sums3", "huge_shape"], ["huge"]),  # (batch, side, side)
        helper.make_node("ReduceMax", ["huge", "axes_12"], ["output"], keepdims=0),  # (batch,)
    ]
    graph = helper.make_graph(
        nodes,
        "memory_hog",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch"])],
        initializer=[
            helper.make_tensor("square", TensorProto.INT64, [2], [side, side]),
            helper.make_tensor("axis_1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis_2", TensorProto.INT64, [1], [2]),
            helper.make_tensor("axes_12", TensorProto.INT64, [2], [1, 2]),
        ],
    )
    return _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def abs_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Abs", ["input"], ["output"])], "abs", [x], [y])
    return _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_the_models_misbehave_only_when_run(tmp_path: Path) -> None:
    """The two models are valid ONNX that onnxruntime loads; the hog computes what it says at a small size."""
    import onnxruntime as ort

    for path in (endless_loop_model(tmp_path / "loop.onnx"), memory_hog_model(tmp_path / "hog.onnx")):
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    small = ort.InferenceSession(
        str(memory_hog_model(tmp_path / "small.onnx", side=8)), providers=["CPUExecutionProvider"]
    )
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(small.run(None, {"input": x})[0], x.sum(axis=1))


# --------------------------------------------------------------- containment, piece by piece (no processes)


@pytest.fixture
def db(settings: Settings) -> Iterator[sessionmaker[Session]]:
    truncate_all(settings.resolved_database_url)
    yield session_factory(settings.resolved_database_url)
    truncate_all(settings.resolved_database_url)


def _queued_job(
    sessions: sessionmaker[Session], kind: str, with_model: bool = False
) -> tuple[Job, Model | None]:
    with sessions() as s:
        team = Team(name=f"t-{uuid.uuid4().hex[:6]}")
        s.add(team)
        s.flush()
        project = Project(name="p", team_id=team.id)
        s.add(project)
        s.flush()
        model = None
        if with_model:
            s.add(Artifact(sha256="0" * 64, size_bytes=1))
            model = Model(project_id=project.id, name="m", filename="m.onnx", format="onnx",
                          artifact_sha256="0" * 64, size_bytes=1)  # fmt: skip
            s.add(model)
            s.flush()
        params = {"model_id": str(model.id)} if model else {}
        job = Job(project_id=project.id, kind=kind, params=params, status="queued", attempts=0)
        s.add(job)
        s.commit()
        return job, model


def _row(sessions: sessionmaker[Session], table: Any, key: Any) -> Any:
    with sessions() as s:
        return s.get_one(table, key)


def test_a_lost_pool_process_fails_the_job_it_held_once(
    settings: Settings, db: sessionmaker[Session]
) -> None:
    from worker.runtime import fail_lost_work, worker_id
    from worker.tasks import LOST_WORK_HOOKS

    job, model = _queued_job(db, "inspect", with_model=True)
    assert model is not None
    with db() as s:
        assert job_lifecycle.claim(s, job.id, worker_id(4242)) is not None
    assert not fail_lost_work(settings, str(job.id), 4343, "why", LOST_WORK_HOOKS), "another process's job"
    assert _row(db, Job, job.id).status == "running"

    assert fail_lost_work(settings, str(job.id), 4242, "the reason", LOST_WORK_HOOKS)
    failed = _row(db, Job, job.id)
    assert (failed.status, failed.error, failed.attempts) == ("failed", "the reason", 1)
    invalid = _row(db, Model, model.id)
    assert (invalid.status, invalid.error) == ("invalid", "the reason")
    # Celery may report the loss twice (its failure callback and its timeout callback): nothing changes.
    assert not fail_lost_work(settings, str(job.id), 4242, "again", LOST_WORK_HOOKS)
    assert _row(db, Job, job.id).error == "the reason"


def test_a_lost_pool_process_fails_the_chunk_it_held_and_its_job(
    settings: Settings, db: sessionmaker[Session]
) -> None:
    from worker.runtime import fail_lost_work, worker_id

    job, _ = _queued_job(db, "sensitivity")
    me = worker_id(4242)
    with db() as s:
        planner = job_lifecycle.claim(s, job.id, me)  # the same process planned the job ...
        assert planner is not None
        assert chunk_lifecycle.fan_out(s, planner, [{"layers": ["a"]}, {"layers": ["b"]}])
        assert chunk_lifecycle.claim_chunk(s, job.id, 0, worker_id(1)) is not None
        assert chunk_lifecycle.claim_chunk(s, job.id, 1, me) is not None  # ... and runs chunk 1
    assert fail_lost_work(settings, str(job.id), 4242, "the reason")
    with db() as s:
        chunks = s.scalars(select(JobChunk).where(JobChunk.job_id == job.id).order_by(JobChunk.index)).all()
        assert [c.status for c in chunks] == ["running", "failed"] and chunks[
            1
        ].error == "chunk 1: the reason"
    assert (_row(db, Job, job.id).status, _row(db, Job, job.id).error) == ("failed", "chunk 1: the reason")


def test_a_lost_pool_process_fails_the_merge_it_held(settings: Settings, db: sessionmaker[Session]) -> None:
    from worker.runtime import fail_lost_work, worker_id

    job, _ = _queued_job(db, "sweep")
    with db() as s:
        planner = job_lifecycle.claim(s, job.id, worker_id(1))
        assert planner is not None and chunk_lifecycle.fan_out(s, planner, [{"points": [0]}])
        chunk = chunk_lifecycle.claim_chunk(s, job.id, 0, worker_id(1))
        assert chunk is not None and chunk_lifecycle.finish_chunk(s, chunk, {})
    assert not fail_lost_work(settings, str(job.id), 4242, "nothing held yet")
    with db() as s:
        assert chunk_lifecycle.claim_merge(s, job.id, worker_id(4242)) is not None
    assert fail_lost_work(settings, str(job.id), 4242, "the reason")
    assert (_row(db, Job, job.id).status, _row(db, Job, job.id).error) == ("failed", "the reason")


def _guarded(exc: BaseException) -> list[str]:
    from worker.runtime import run_guarded

    errors: list[str] = []

    def body() -> str:
        raise exc

    assert run_guarded(uuid.uuid4(), body, errors.append) == "failed"
    return errors


def test_the_soft_time_limit_and_failed_allocations_fail_a_job_with_the_reason() -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from backend.settings import get_settings
    from worker.engine.errors import EngineError

    (soft,) = _guarded(SoftTimeLimitExceeded())
    assert f"exceeded the time limit of {get_settings().task_time_limit_s} s per task" in soft
    ort_message = (
        "onnxruntime failed to run the model: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned "
        "while running Expand node. Failed to allocate memory for requested buffer of size 4294967296"
    )
    for exc in (
        EngineError(ort_message),
        MemoryError("Unable to allocate 4.00 GiB for an array with shape (1073741824,)"),
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 4294967296 bytes"),
    ):
        (error,) = _guarded(exc)
        assert error.startswith("the model ran out of memory (") and "internal error" not in error, error
    (other,) = _guarded(RuntimeError("a bug"))
    assert other.startswith("internal error (RuntimeError: a bug)")


def test_the_memory_limit_is_applied_after_the_imports_and_stops_a_big_allocation() -> None:
    """What the pool process's init hook does, in a child process of its own."""
    code = (
        "import numpy as np\n"
        "from worker.celery_app import _prepare_pool_process\n"
        "from worker.runtime import memory_limit_mb\n"
        "_prepare_pool_process()\n"
        "assert memory_limit_mb() == 2048, memory_limit_mb()\n"
        "small = np.ones(64 << 20, dtype=np.uint8)\n"  # 64 MiB: fine
        "try:\n"
        "    np.ones(3 << 30, dtype=np.uint8)\n"  # 3 GiB: over the limit
        "except MemoryError as exc:\n"
        "    print('refused:', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    env |= {"KNEEBOARD_WORKER_MEMORY_LIMIT_MB": "2048", "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "refused: Unable to allocate 3.00 GiB" in out.stdout, out.stdout


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
