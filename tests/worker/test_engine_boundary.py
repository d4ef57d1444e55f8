"""The engine knows nothing of the service: importing every worker.engine module loads no backend, SQL,
HTTP or Celery module (README, "Architecture": the engine is plain functions over arrays and models, no HTTP or SQL)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import worker.engine
from tests.support.services import REPO_ROOT

SERVICE = ("backend", "sqlalchemy", "fastapi", "starlette", "celery", "kombu", "httpx", "psycopg", "redis")


def _service_modules_loaded_by(modules: list[str]) -> list[str]:
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print('SERVICE=' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in {SERVICE!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("SERVICE="))
    return [name for name in line.removeprefix("SERVICE=").split(",") if name]


def engine_modules() -> list[str]:
    return sorted(
        info.name for info in pkgutil.walk_packages(worker.engine.__path__, prefix="worker.engine.")
    )


def test_every_engine_module_imports_without_the_service() -> None:
    modules = engine_modules()
    assert len(modules) > 20  # the walk found the engine, not an empty folder
    assert _service_modules_loaded_by(modules) == []


def test_the_check_would_notice_a_service_import() -> None:
    """Guard against a vacuous test: the worker's own glue around the engine does load the service."""
    assert "backend" in _service_modules_loaded_by(["worker.model_files"])
