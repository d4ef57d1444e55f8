"""dataset_readers is importable by both sides (issue 34): by the API, which never loads a model runtime,
and by the worker's engine side, which never loads the service. So importing every one of its modules loads
no torch, onnxruntime, onnx, scipy or sklearn, and nothing of backend, worker, SQL, HTTP or Celery; and no
module of it names backend or worker even inside a function (where importing it would not show)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import dataset_readers
from tests.support.import_graph import module_imports, modules_under
from tests.support.services import REPO_ROOT

FORBIDDEN = (
    *("torch", "onnxruntime", "onnx", "onnxscript", "scipy", "sklearn", "tokenizers"),
    *("backend", "worker", "sqlalchemy", "fastapi", "starlette", "celery", "kombu", "psycopg", "redis"),
)


def _forbidden_modules_loaded_by(modules: list[str]) -> list[str]:
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print('LOADED=' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("LOADED="))
    return [name for name in line.removeprefix("LOADED=").split(",") if name]


def reader_modules() -> list[str]:
    return sorted(
        ["dataset_readers"]
        + [info.name for info in pkgutil.walk_packages(dataset_readers.__path__, prefix="dataset_readers.")]
    )


def test_every_reader_module_imports_without_runtimes_or_the_service() -> None:
    modules = reader_modules()
    assert {
        "dataset_readers.registry",
        "dataset_readers.npz.mapped",
        "dataset_readers.image_zip.decode",
    } <= set(modules)  # the walk found the package, not an empty folder
    assert _forbidden_modules_loaded_by(modules) == []


def test_the_check_would_notice_a_forbidden_import() -> None:
    """Guard against a vacuous test: the service's glue around the readers does load the service."""
    assert "backend" in _forbidden_modules_loaded_by(["backend.archive_limits"])


def _project_imports_of_readers(root: Path) -> dict[str, set[str]]:
    """For each dataset_readers module, the backend or worker modules it imports, inside functions too."""
    modules = modules_under(root, ["dataset_readers", "backend", "worker"])
    known = set(modules)
    return {
        name: outside
        for name, path in modules.items()
        if name.startswith("dataset_readers")
        and (
            outside := {
                m for m in module_imports(name, path, known, lazy=True) if not m.startswith("dataset_readers")
            }
        )
    }


def test_no_reader_module_imports_backend_or_worker_even_lazily() -> None:
    assert _project_imports_of_readers(REPO_ROOT) == {}


def test_the_static_rule_would_notice_a_lazy_import(tmp_path: Path) -> None:
    for package in ("dataset_readers", "backend"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "worker").mkdir()
    (tmp_path / "backend" / "errors.py").write_text("class InvalidUpload(Exception): ...\n")
    (tmp_path / "dataset_readers" / "npz.py").write_text(
        "def f():\n    from backend.errors import InvalidUpload\n    raise InvalidUpload('x')\n"
    )
    assert _project_imports_of_readers(tmp_path) == {"dataset_readers.npz": {"backend.errors"}}
