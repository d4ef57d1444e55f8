"""Real services for tests: a private Postgres database, a Redis queue name, worker and API processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from backend.cli import worker_command
from backend.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = os.environ.get("KNEEBOARD_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("KNEEBOARD_TEST_REDIS", "redis://127.0.0.1:6379/0")


@contextmanager
def private_postgres_database() -> Iterator[str]:
    """A fresh, empty database on the real Postgres server, dropped afterwards. Yields its SQLAlchemy URL."""
    name = f"kneeboard_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        from backend.db.session import engine_for

        engine_for.cache_clear()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def stack_settings(pg_url: str, folder: Path, name: str) -> Settings:
    """Settings of a test module's own stack: the session's Postgres database, Redis, artifacts under
    `folder`, and a private queue (`kneeboard-{name}-<random>`) so no other module's worker takes its tasks."""
    return Settings(
        data_dir=folder / "data",
        database_url=pg_url,
        broker_url=REDIS_URL,
        artifact_uri=(folder / "artifacts").as_uri(),
        queue_name=f"kneeboard-{name}-{uuid.uuid4().hex[:8]}",
        seed_demo=False,
    )


def settings_env(settings: Settings) -> dict[str, str]:
    """Environment variables that reproduce these settings in a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    for field, value in settings.model_dump().items():
        if value is not None:
            env[f"KNEEBOARD_{field.upper()}"] = str(value)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    """A child process in its own process group, with its output in a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path, cwd: Path = REPO_ROOT) -> None:
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.popen = subprocess.Popen(
            args, env=env, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.log():
            if self.popen.poll() is not None:
                raise RuntimeError(f"process exited ({self.popen.returncode}):\n{self.log()[-4000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{needle!r} not seen in {timeout} s:\n{self.log()[-4000:]}")
            time.sleep(0.2)

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)
        self.popen.wait(timeout=30)

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout=20)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                self.kill_group()
        self._log.close()


def start_worker(settings: Settings, log_path: Path, name: str = "w1", device: str | None = None) -> Process:
    command = worker_command(settings, hostname=f"{name}@%h", device=device)
    proc = Process(command, settings_env(settings), log_path)
    proc.wait_for_log("ready.", timeout=120)
    return proc


def start_api(settings: Settings, log_path: Path) -> tuple[Process, str]:
    """Serve the API with uvicorn in a child process; returns it and its base URL."""
    port = free_port()
    env = settings_env(settings) | {"KNEEBOARD_PORT": str(port)}
    proc = Process([sys.executable, "-m", "backend.cli", "api"], env, log_path)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.popen.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"API did not start:\n{proc.log()[-4000:]}")
        time.sleep(0.3)


def processes_with_env(name: str, value: str) -> list[int]:
    """Pids of the live processes whose environment has name=value (read from /proc; Linux only)."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split(")", 1)[1].split()[0]
        except OSError:  # gone, or not ours to read
            continue
        if needle in environ and state != "Z":
            found.append(int(entry.name))
    return found
