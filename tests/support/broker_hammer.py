"""A hammer for the embedded broker (issue 32): producer processes send tasks as fast as they can while a
real Celery worker drains the queue; every task appends its (producer, index) to a file.

Run as a module it is the Celery app (``celery -A tests.support.broker_hammer worker``), configured from
the environment: HAMMER_DATA (the data dir of the embedded settings), HAMMER_BROKER (``safefs://``, the
embedded broker, or ``filesystem://``, kombu's own transport) and HAMMER_OUT (the record file).
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from celery import Celery

from backend.celery_config import celery_config
from backend.settings import Settings

QUEUE = "hammer"
REPO_ROOT = Path(__file__).resolve().parents[2]


def hammer_app(data_dir: Path, broker: str) -> Celery:
    settings = Settings(data_dir=data_dir, seed_demo=False, queue_name=QUEUE)
    app = Celery("hammer")
    config = celery_config(settings) | {"broker_url": broker}
    if broker.startswith(
        "sqla+"
    ):  # for the comparison only: it hands every transport option to create_engine
        config["broker_transport_options"] = {}
    app.conf.update(config)
    return app


app = hammer_app(
    Path(os.environ.get("HAMMER_DATA", "/nonexistent")), os.environ.get("HAMMER_BROKER", "safefs://")
)


@app.task(name="hammer.record")
def record(producer: int, index: int) -> None:
    # One short O_APPEND write per task: whole lines, even from several processes.
    with open(os.environ["HAMMER_OUT"], "a") as f:
        f.write(f"{producer} {index}\n")


def _produce(data_dir: str, broker: str, producer: int, count: int) -> None:
    sender = hammer_app(Path(data_dir), broker)
    for index in range(count):
        sender.send_task("hammer.record", args=[producer, index], queue=QUEUE)


@dataclass
class HammerResult:
    sent: int
    received: Counter[tuple[int, int]]
    seconds: float
    worker_exit: int | None
    worker_log: str

    @property
    def lost(self) -> int:
        return self.sent - len(self.received)

    @property
    def duplicated(self) -> int:
        return sum(n - 1 for n in self.received.values())

    @property
    def crashed(self) -> bool:
        return self.worker_exit is not None or "Unrecoverable error" in self.worker_log


def hammer(
    tmp: Path, broker: str, producers: int = 8, per_producer: int = 250, drain_s: float = 60
) -> HammerResult:
    """Start a worker, let `producers` processes send `per_producer` tasks each, wait until all arrived
    (or the worker died, or drain_s passed since the producers finished), stop the worker."""
    out = tmp / "received.txt"
    out.touch()
    log = tmp / "worker.log"
    env = os.environ | {"HAMMER_DATA": str(tmp / "data"), "HAMMER_BROKER": broker, "HAMMER_OUT": str(out)}
    env["PYTHONPATH"] = str(REPO_ROOT)
    command = [
        sys.executable, "-m", "celery", "-A", "tests.support.broker_hammer", "worker", "--pool=solo",
        "--loglevel=INFO", f"--queues={QUEUE}", "--without-mingle", "--without-gossip", "--without-heartbeat",
    ]  # fmt: skip
    with log.open("wb") as log_file:
        worker = subprocess.Popen(command, env=env, cwd=REPO_ROOT, stdout=log_file, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while "ready." not in log.read_text(errors="replace"):
                assert worker.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.1)
            sent = producers * per_producer
            started = time.monotonic()
            ctx = multiprocessing.get_context("spawn")
            procs = [
                ctx.Process(target=_produce, args=(str(tmp / "data"), broker, p, per_producer))
                for p in range(producers)
            ]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join()
            assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
            give_up = time.monotonic() + drain_s
            while worker.poll() is None and time.monotonic() < give_up:
                if len(out.read_text().splitlines()) >= sent:
                    break
                time.sleep(0.05)
            seconds = time.monotonic() - started
            time.sleep(0.3)  # a duplicate would arrive now
        finally:
            exit_code = worker.poll()
            if exit_code is None:
                worker.terminate()
                worker.wait(timeout=30)
    received: Counter[tuple[int, int]] = Counter()
    for line in out.read_text().splitlines():
        producer, index = line.split()
        received[(int(producer), int(index))] += 1
    return HammerResult(sent, received, seconds, exit_code, log.read_text(errors="replace"))


def main(argv: list[str]) -> None:
    """python -m tests.support.broker_hammer bench <broker> [runs]: the numbers for the design notes."""
    import tempfile

    broker, runs = argv[0], int(argv[1]) if len(argv) > 1 else 1
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            r = hammer(Path(tmp), broker)
            print(
                f"{broker} run {run}: sent {r.sent}, received {sum(r.received.values())} "
                f"(distinct {len(r.received)}), lost {r.lost}, duplicated {r.duplicated}, "
                f"worker crashed {r.crashed}, {r.seconds:.1f} s, {r.sent / r.seconds:.0f} msg/s",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
