"""Issue 32's acceptance on the embedded default (`kneeboard up`: SQLite, the embedded broker, a supervised
worker): 12 clients uploading models and launching fidelity jobs at once all finish; a SIGKILL of the worker
in the middle of 4 more jobs still lets all 4 succeed with no manual restart; and no reaper round fails.

Before issue 32 the same traffic killed the worker (kombu's filesystem transport read a half-written message)
and `up` left it dead, and the reaper failed every round on SQLite's naive datetimes. The heartbeat timeout
is shortened here (10 s instead of 60 s) so the killed job is taken back within the test's minute; every
other setting is the default."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from backend.client import KneeboardClient
from tests.e2e.conftest import SlowJobFiles
from tests.support.accounts import cli_token
from tests.support.embedded import embedded_instance, worker_pid
from tests.support.services import Process
from worker.demo.models import DemoBundle, write_demo_bundle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLIENTS = 12
FAST = {
    "KNEEBOARD_HEARTBEAT_INTERVAL_S": "2",
    "KNEEBOARD_HEARTBEAT_TIMEOUT_S": "10",
    "KNEEBOARD_REAPER_INTERVAL_S": "2",
}


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Process]]:
    with embedded_instance(tmp_path_factory.mktemp("embedded-load"), FAST) as started:
        yield started


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoBundle:
    return write_demo_bundle(tmp_path_factory.mktemp("demo-files"))


def _one_client(base: str, token: str, demo: DemoBundle, i: int) -> str:
    with KneeboardClient(base, token=token) as c:
        project = c.create_project(f"load-{i}")["id"]
        golden = c.upload_model(project, demo.golden_onnx, name=f"golden-{i}")["id"]
        int8 = c.upload_model(project, demo.int8_onnx, name=f"int8-{i}")["id"]
        data = c.upload_dataset(project, demo.test_npz)["id"]
        for model in (golden, int8):
            assert c.wait_model(model, timeout=600)["status"] == "ready"
        job = c.create_job(
            project, "fidelity", {"golden_model_id": golden, "compressed_model_id": int8, "dataset_id": data}
        )
        return str(c.wait_job(job["id"], timeout=900)["status"])


def test_twelve_clients_at_once_then_a_killed_worker_loses_nothing(
    instance: tuple[str, Path, Process], demo: DemoBundle, slow_job_files: SlowJobFiles
) -> None:
    base, data_dir, up = instance
    token = cli_token(data_dir, "load")
    with ThreadPoolExecutor(CLIENTS) as pool:
        statuses = list(pool.map(lambda i: _one_client(base, token, demo, i), range(CLIENTS)))
    assert statuses == ["succeeded"] * CLIENTS, up.log()[-4000:]

    c = KneeboardClient(base, token=token)
    project = c.create_project("killed")["id"]
    model = c.upload_model(project, slow_job_files.model)["id"]
    data = c.upload_dataset(project, slow_job_files.dataset)["id"]
    assert c.wait_model(model, timeout=600)["status"] == "ready"
    params = {"golden_model_id": model, "compressed_model_id": model, "dataset_id": data, "threads": 1}
    jobs = [c.create_job(project, "fidelity", params)["id"] for _ in range(4)]
    deadline = time.monotonic() + 300
    while not any(c.job(j)["status"] == "running" for j in jobs):
        assert time.monotonic() < deadline, "no job started"
        time.sleep(0.2)
    first = worker_pid(up)
    assert first is not None
    os.killpg(first, 9)  # the worker and its pool, mid-job
    finals = [c.wait_job(j, timeout=900) for j in jobs]
    assert [f["status"] for f in finals] == ["succeeded"] * 4, [f.get("error") for f in finals]
    assert max(f["attempts"] for f in finals) >= 2, "the job that was running when the worker died ran again"
    log = up.log()
    assert "died: killed by signal SIGKILL; restarting it" in log
    assert "reaper round failed" not in log
    assert "Unrecoverable error" not in log
