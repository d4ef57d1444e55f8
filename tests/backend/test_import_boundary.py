"""The API process never imports a model runtime (nor a tokenizer: text datasets are tokenized at job time):
model code runs in workers."""

from __future__ import annotations

import subprocess
import sys

from tests.support.services import REPO_ROOT

HEAVY = ("torch", "onnxruntime", "onnx", "onnxscript", "sklearn", "scipy", "tokenizers", "worker")


def test_api_app_does_not_import_model_runtimes(tmp_path: object) -> None:
    code = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from backend.api.app import create_app\n"
        "import backend.cli\n"
        "with TestClient(create_app(run_reaper=False)) as c:\n"
        "    assert c.get('/openapi.json').status_code == 200\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}]\n"
        "print('HEAVY=' + ','.join(sorted(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin", "KNEEBOARD_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("HEAVY="))
    assert line == "HEAVY=", f"the API imported model code: {line}"


def test_the_check_would_notice_a_heavy_import() -> None:
    """Guard against a vacuous test: importing the worker side does pull in torch."""
    code = "import sys, worker.engine.loaders, torch; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "True", out.stderr
