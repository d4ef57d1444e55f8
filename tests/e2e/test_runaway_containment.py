"""How a runaway model is contained, piece by piece and without the real stack: the models misbehave
only when run; a lost pool process fails the job, the chunk (and its job) or the merge it held, once; the
soft time limit and failed allocations fail a job with a reason that says which limit; the memory limit is
applied after the imports and stops a big allocation."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from backend import chunk_lifecycle, job_lifecycle
from backend.db.models import Artifact, Job, JobChunk, Model, Project, Team
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.runaway_models import endless_loop_model, memory_hog_model
from tests.support.services import REPO_ROOT

pytestmark = pytest.mark.e2e


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
