"""End-to-end fixtures: the API (uvicorn) and Celery workers as real processes, on real Postgres and Redis,
or (make_each_stack) also on the embedded mode's SQLite file and filesystem broker."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from backend.client import KneeboardClient
from backend.db.migrations import upgrade_to_head
from backend.settings import Settings
from tests.support.accounts import TestAccount, account_in
from tests.support.services import REDIS_URL, Process, private_postgres_database, start_api, start_worker

pytestmark = pytest.mark.e2e


@dataclass
class Stack:
    settings: Settings
    base_url: str
    logs: Path
    api: Process
    account: TestAccount
    workers: list[Process] = field(default_factory=list)

    @property
    def client(self) -> KneeboardClient:
        """Signed in as the stack's account (admin of its team)."""
        return KneeboardClient(self.base_url, token=self.account.token)

    def add_worker(self, name: str, device: str | None = None) -> Process:
        proc = start_worker(self.settings, self.logs / f"worker-{name}.log", name=name, device=device)
        self.workers.append(proc)
        return proc

    def stop(self) -> None:
        for proc in [*self.workers, self.api]:
            proc.stop()


def fast_reaping_settings(tmp: Path, url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": tmp / "data",
        "database_url": url,
        "broker_url": REDIS_URL,
        "artifact_uri": (tmp / "artifacts").as_uri(),
        "queue_name": f"kneeboard-e2e-{uuid.uuid4().hex[:8]}",
        "max_upload_bytes": 256 * 1024 * 1024,
        "heartbeat_interval_s": 0.5,
        "heartbeat_timeout_s": 4.0,
        "reaper_interval_s": 0.5,
        "seed_demo": False,
    }
    return Settings(**(values | overrides))  # type: ignore[arg-type]


def _stack_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Stack]]:
    """Start an API process (with its reaper) over a private Postgres database; workers are added by tests."""
    stacks: list[Stack] = []
    dbs = []

    def make(embedded: bool = False, **overrides: object) -> Stack:
        """embedded: the embedded mode's SQLite file and broker (backend/embedded_broker.py) in the stack's
        data dir, instead of Postgres and Redis."""
        tmp = tmp_path_factory.mktemp("stack")
        if embedded:
            (tmp / "data").mkdir()
            url = f"sqlite:///{tmp / 'data' / 'kneeboard.db'}"
            overrides = {"broker_url": ""} | overrides
        else:
            db = private_postgres_database()
            url = db.__enter__()
            dbs.append(db)
        upgrade_to_head(url)
        account = account_in(url, username="e2e", team="e2e")
        settings = fast_reaping_settings(tmp, url, **overrides)
        api, base = start_api(settings, tmp / "api.log")
        stack = Stack(settings=settings, base_url=base, logs=tmp, api=api, account=account)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.stop()
    for db in dbs:
        db.__exit__(None, None, None)


@pytest.fixture
def make_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Stack]]:
    yield from _stack_factory(tmp_path_factory)


EACH_STACK = ["postgres+redis", "sqlite+embedded-broker"]


@pytest.fixture(params=EACH_STACK)
def make_each_stack(request: pytest.FixtureRequest, make_stack: Callable[..., Stack]) -> Callable[..., Stack]:
    """make_stack on Postgres + Redis, then on the embedded mode (SQLite + the embedded broker): for fault
    tests that must hold on both (issue 32: the embedded mode failed in ways CI never ran)."""
    return functools.partial(make_stack, embedded=request.param == EACH_STACK[1])


@pytest.fixture(scope="module")
def make_stack_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Stack]]:
    """Like make_stack, for a module whose tests share one stack."""
    yield from _stack_factory(tmp_path_factory)


@pytest.fixture(scope="session")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The digits CNN (fp32 ONNX), its int8 QDQ version and the labelled test set, trained here."""
    from worker.demo.models import write_demo_bundle

    return write_demo_bundle(tmp_path_factory.mktemp("demo"))


@dataclass(frozen=True)
class SlowJobFiles:
    model: Path
    dataset: Path


@pytest.fixture(scope="session")
def slow_job_files(tmp_path_factory: pytest.TempPathFactory) -> SlowJobFiles:
    """A wide MLP and a large input set, so that a fidelity job runs for several seconds on one thread."""
    import torch

    from worker.demo.models import export_onnx

    tmp = tmp_path_factory.mktemp("slow")
    torch.manual_seed(0)
    width = 1024
    layers: list[torch.nn.Module] = [torch.nn.Flatten(), torch.nn.Linear(64, width), torch.nn.ReLU()]
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, 10))
    model = torch.nn.Sequential(*layers).eval()
    sample = np.zeros((2, 1, 8, 8), dtype=np.float32)
    export_onnx(model, sample, tmp / "wide_mlp.onnx")
    rng = np.random.default_rng(0)
    np.savez(tmp / "many.npz", input=rng.random((20_000, 1, 8, 8), dtype=np.float32))
    return SlowJobFiles(model=tmp / "wide_mlp.onnx", dataset=tmp / "many.npz")
