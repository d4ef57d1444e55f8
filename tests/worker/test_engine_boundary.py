"""The engine knows nothing of the service: importing every worker.engine module loads no backend, SQL,
HTTP or Celery module (README, "Architecture": the engine is plain functions over arrays and models, no HTTP or SQL)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import worker.engine
from tests.support.import_graph import module_imports, modules_under
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
    assert "backend" in _service_modules_loaded_by(["worker.jobs.model_files"])


def _worker_imports_of_engine(root: Path) -> dict[str, set[str]]:
    """For each module under worker/engine/, the worker modules outside the engine that it imports, inside
    functions too (the import test above only sees what importing a module loads)."""
    modules = modules_under(root, ["worker"])
    known = set(modules)
    return {
        name: outside
        for name, path in modules.items()
        if name.startswith("worker.engine")
        and (
            outside := {
                m for m in module_imports(name, path, known, lazy=True) if not m.startswith("worker.engine")
            }
        )
    }


def test_the_engine_never_imports_the_jobs_or_the_worker_runtime() -> None:
    """worker/engine/ is below worker/jobs/ and the Celery runtime: arrows run from jobs to the engine only."""
    assert _worker_imports_of_engine(REPO_ROOT) == {}


def test_the_jobs_rule_would_notice_a_lazy_import(tmp_path: Path) -> None:
    engine = tmp_path / "worker" / "engine"
    jobs = tmp_path / "worker" / "jobs"
    for folder in (engine, jobs):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    (tmp_path / "worker" / "__init__.py").write_text("")
    (jobs / "fidelity.py").write_text("X = 1\n")
    (engine / "scan.py").write_text("def f():\n    from worker.jobs.fidelity import X\n    return X\n")
    assert _worker_imports_of_engine(tmp_path) == {"worker.engine.scan": {"worker.jobs.fidelity"}}
