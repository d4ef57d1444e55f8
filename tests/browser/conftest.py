"""The browser tests' fixtures: node and Chromium (skipped, or failed under KNEEBOARD_REQUIRE_BROWSER=1, when
missing), and a started stack per test module."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator

import pytest

from backend.client import KneeboardClient
from tests.browser.support import (
    ADMIN_PASSWORD,
    FRONTEND,
    DemoStack,
    chromium_path,
    unavailable,
    wait_for_demo,
)
from tests.support.accounts import cli_token
from tests.support.services import Process, free_port


@pytest.fixture(scope="module")
def tools() -> tuple[str, str]:
    """node and chromium, once the built dashboard and playwright-core are there."""
    if not (FRONTEND / "dist" / "index.html").is_file():
        unavailable("frontend/dist/index.html is missing: run `npm ci && npm run build` in frontend/")
    node = shutil.which("node")
    if node is None:
        unavailable("no node on PATH")
    if not (FRONTEND / "node_modules" / "playwright-core" / "package.json").is_file():
        unavailable("playwright-core is not installed: run `npm ci` in frontend/")
    return str(node), chromium_path()


@pytest.fixture(scope="module")
def stack(
    tools: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Process, str]]:
    """`kneeboard up` (SQLite, filesystem broker, a worker, the demo seeder) on a free port, and an API token of
    its first admin."""
    tmp = tmp_path_factory.mktemp("browser-stack")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    env |= {"KNEEBOARD_DATA_DIR": str(tmp / "data"), "KNEEBOARD_PORT": str(port), "PYTHONUNBUFFERED": "1"}
    env["KNEEBOARD_FIRST_ADMIN_PASSWORD"] = ADMIN_PASSWORD  # the first start creates "admin" with it
    proc = Process([sys.executable, "-m", "backend.cli", "up"], env, tmp / "up.log")
    base = f"http://127.0.0.1:{port}"
    try:
        KneeboardClient(base).wait_healthy(timeout=120)
        yield base, proc, cli_token(tmp / "data", "browser test")
    finally:
        proc.stop()


@pytest.fixture
def demo(tools: tuple[str, str], stack: tuple[str, Process, str]) -> DemoStack:
    """node, Chromium and the module's stack, once the demo project is seeded (its fidelity job succeeded)."""
    base, proc, token = stack
    wait_for_demo(base, proc, token)
    return DemoStack(*tools, base, proc, token)
