"""What the browser tests share besides their fixtures (tests/browser/conftest.py): where screenshots go, the
first admin's password, waiting for the demo project, and running a signed-in driver (drive_*.mjs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import pytest

from backend.client import KneeboardClient
from tests.support.services import REPO_ROOT, Process

FRONTEND = REPO_ROOT / "frontend"
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
ADMIN_PASSWORD = "browser-test-admin-password"


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("KNEEBOARD_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (KNEEBOARD_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


def chromium_path() -> str:
    candidates = [
        os.environ.get("KNEEBOARD_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    found = next((c for c in candidates if c and Path(c).is_file()), None)
    if found is None:
        unavailable("no Chromium: install Debian's chromium or set KNEEBOARD_CHROMIUM")
    return found


def wait_for_demo(base: str, proc: Process, token: str, timeout: float = 180) -> None:
    """Until the demo's fidelity job has succeeded (its models and dataset are then ready)."""
    client = KneeboardClient(base, token=token)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        demo = [p for p in client.projects() if p["name"] == "demo"]
        if demo:
            params = {"project_id": demo[0]["id"], "kind": "fidelity"}
            jobs = client.http.get("/jobs", params=params).json()["items"]
            if jobs and jobs[0]["status"] in ("succeeded", "failed", "cancelled"):
                assert jobs[0]["status"] == "succeeded", f"{jobs[0]}\n{proc.log()[-3000:]}"
                return
        time.sleep(1)
    raise TimeoutError(f"the demo project was not seeded in {timeout} s:\n{proc.log()[-3000:]}")


def driver_config(base: str, chromium: str, artifacts: str, **extra: Any) -> dict[str, Any]:
    """The config a signed-in driver reads (browser_support.mjs: startDriver / runSignedIn): the stack, Chromium,
    its screenshot folder under ARTIFACTS, the first admin's credentials, and the test's own keys."""
    return {
        "base": base,
        "chromium": chromium,
        "artifacts": str(ARTIFACTS / artifacts),
        "username": "admin",
        "password": ADMIN_PASSWORD,
        **extra,
    }


def run_driver(
    node: str, driver: Path, config: dict[str, Any], proc: Process, timeout: float = 300
) -> dict[str, Any]:
    """Run a driver and return its observations; fails with its error, steps, stderr and the API's log when a
    step failed or it printed nothing."""
    result = subprocess.run(
        [node, str(driver), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
    )
    lines = result.stdout.strip().splitlines()
    assert lines, f"the driver printed nothing:\n{result.stderr[-4000:]}"
    seen: dict[str, Any] = json.loads(lines[-1])
    assert result.returncode == 0 and "error" not in seen, (
        f"{seen.get('error')}\nsteps: {seen['steps']}\n{result.stderr[-3000:]}\nAPI log:\n{proc.log()[-3000:]}"
    )
    return seen


class DemoStack(NamedTuple):
    """The `demo` fixture: node and Chromium, and a started stack whose demo project is seeded."""

    node: str
    chromium: str
    base: str
    proc: Process
    token: str
