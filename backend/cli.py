"""`kneeboard` command line: up (the whole embedded stack), api, worker, migrate."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from backend.contracts import DEVICE_NAME_PATTERN, device_queue
from backend.db.migrations import upgrade_to_head
from backend.settings import Settings, get_settings

log = logging.getLogger("kneeboard")


def worker_command(
    settings: Settings,
    concurrency: int | None = None,
    hostname: str = "kneeboard@%h",
    device: str | None = None,
) -> list[str]:
    """The Celery worker command line for these settings; with `device`, a worker that consumes only that
    device's queue (chunks routed to it, e.g. a sweep's points to be timed on target hardware)."""
    queue = settings.queue_name if device is None else device_queue(settings.queue_name, device)
    cmd = [
        sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
        "--loglevel=INFO",
        f"--concurrency={concurrency or settings.worker_concurrency}",
        f"--queues={queue}",
        f"--hostname={hostname}",
        "--without-mingle", "--without-gossip",
    ]  # fmt: skip
    if settings.uses_filesystem_broker:
        cmd.append("--without-heartbeat")
    return cmd


def _serve(settings: Settings) -> None:
    import uvicorn

    from backend.api.app import create_app

    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info")


def cmd_migrate(settings: Settings) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade_to_head(settings.resolved_database_url)
    print(f"database at head: {settings.resolved_database_url}")


def cmd_up(settings: Settings) -> None:
    """Migrate, start one worker process and the demo seeder, then serve the API and dashboard."""
    cmd_migrate(settings)
    # Each child in its own process group, so that stopping `up` can stop a child and everything it started
    # (Celery's pool processes) even when the child itself is gone.
    children: list[subprocess.Popen[bytes]] = [
        subprocess.Popen(worker_command(settings), start_new_session=True)
    ]
    if settings.seed_demo:
        api_url = f"http://{settings.host}:{settings.port}"
        seeder = [sys.executable, "-m", "worker.demo_seed", "--api", api_url]
        children.append(subprocess.Popen(seeder, start_new_session=True))
    print(f"Kneeboard: dashboard at http://{settings.host}:{settings.port}  (API docs at /docs)", flush=True)
    # uvicorn shuts down on SIGTERM, then raises the signal again for the previous handler: make that
    # handler an exit, so that the children are stopped below instead of the process dying outright.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        _serve(settings)
    finally:
        _stop_groups(children)


def _stop_groups(children: Sequence[subprocess.Popen[bytes]], grace_s: float = 10.0) -> None:
    """SIGTERM each child's process group (a Celery worker finishes its task, within grace_s), then
    SIGKILL whatever is left of the groups: no worker outlives `up`."""
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _device_name(value: str) -> str:
    if not re.fullmatch(DEVICE_NAME_PATTERN, value):
        raise argparse.ArgumentTypeError(f"{value!r}: lower-case letters, digits, - and _ (e.g. rpi5)")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="kneeboard", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="migrate, start a worker and the API + dashboard, seed the demo project")
    sub.add_parser("api", help="serve the API and dashboard only (run `migrate` first)")
    worker = sub.add_parser("worker", help="run a Celery worker for these settings")
    worker.add_argument(
        "--device",
        type=_device_name,
        help='serve only this device\'s queue (e.g. rpi5): sweeps with "device": "rpi5" run their points here',
    )
    sub.add_parser("migrate", help="upgrade the database to the latest Alembic revision")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = get_settings()
    if args.command == "up":
        cmd_up(settings)
    elif args.command == "api":
        _serve(settings)
    elif args.command == "worker":
        hostname = "kneeboard@%h" if args.device is None else f"kneeboard-{args.device}@%h"
        os.execv(sys.executable, worker_command(settings, hostname=hostname, device=args.device))
    elif args.command == "migrate":
        cmd_migrate(settings)


if __name__ == "__main__":
    main()
