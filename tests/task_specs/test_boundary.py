"""task_specs is imported by the API (never a model runtime) and by the engine's adapters (never the service):
importing it loads nothing of either side, not even numpy."""

from __future__ import annotations

import pkgutil

import task_specs
from tests.dataset_readers.test_boundary import FORBIDDEN, _forbidden_modules_loaded_by


def test_task_specs_load_no_runtime_no_service_and_no_numpy() -> None:
    modules = ["task_specs"] + [
        i.name for i in pkgutil.walk_packages(task_specs.__path__, prefix="task_specs.")
    ]
    assert "task_specs.launch" in modules
    assert _forbidden_modules_loaded_by(modules) == []
    assert "numpy" not in FORBIDDEN  # checked apart: the launch checks are plain Python
    import subprocess
    import sys

    from tests.support.services import REPO_ROOT

    code = "import sys, task_specs.launch; print('numpy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "False", out.stderr
