"""backend/supervisor.py with real child processes: restarts with the reason, gives up on a child that keeps
dying, reaps a finished one at once (no zombie) and stops whole process groups."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from backend.supervisor import ChildSpec, Supervisor, exit_reason

FAST = {"restart_delay_s": 0.2, "poll_s": 0.05}


@pytest.fixture
def supervise() -> Iterator[Callable[..., Supervisor]]:
    started: list[Supervisor] = []

    def make(*specs: ChildSpec, **options: float) -> Supervisor:
        supervisor = Supervisor(specs, **(FAST | options))  # type: ignore[arg-type]
        supervisor.start()
        started.append(supervisor)
        return supervisor

    yield make
    for supervisor in started:
        supervisor.stop(grace_s=2)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _until(check: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.02)


def _state(pid: int) -> str | None:
    """The process's state letter (Z: zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_exit_reasons_name_the_code_or_the_signal() -> None:
    assert exit_reason(3) == "exit code 3"
    assert exit_reason(-signal.SIGKILL) == "killed by signal SIGKILL"


def test_a_killed_child_is_restarted_with_the_reason_logged(
    supervise: Callable[..., Supervisor], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kneeboard.supervisor")
    supervisor = supervise(ChildSpec("worker", _python("import time; time.sleep(60)")))
    first = supervisor.pid("worker")
    assert first is not None
    os.kill(first, signal.SIGKILL)
    killed = time.monotonic()
    _until(lambda: supervisor.pid("worker") not in (None, first), timeout=10)
    print(f"restarted in {time.monotonic() - killed:.2f} s")
    assert f"worker (pid {first}) died: killed by signal SIGKILL; restarting it" in caplog.text
    assert _state(first) is None, "the dead child was reaped"


def test_a_child_that_keeps_dying_is_given_up_on_after_five_deaths(
    supervise: Callable[..., Supervisor], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO, logger="kneeboard.supervisor")
    starts = tmp_path / "starts"
    code = f"open({str(starts)!r}, 'a').write('x'); import sys; sys.exit(3)"
    supervisor = supervise(ChildSpec("worker", _python(code)))
    _until(lambda: "Not restarting it" in caplog.text, timeout=30)
    time.sleep(1.0)  # it would have been started again by now
    assert starts.read_text() == "x" * 5, "started once and restarted 4 times, then left down"
    assert caplog.text.count("died: exit code 3; restarting it") == 4
    assert "died 5 times within 60 s" in caplog.text and "jobs wait until a worker runs" in caplog.text
    assert supervisor.pid("worker") is None


def test_deaths_outside_the_window_do_not_count(
    supervise: Callable[..., Supervisor], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO, logger="kneeboard.supervisor")
    starts = tmp_path / "starts"
    code = f"open({str(starts)!r}, 'a').write('x'); import sys; sys.exit(1)"
    supervise(ChildSpec("flaky", _python(code)), window_s=0.1, restart_delay_s=0.15)
    _until(lambda: len(starts.read_text() if starts.exists() else "") >= 8, timeout=30)
    assert "Not restarting it" not in caplog.text


def test_a_finished_seeder_is_reaped_at_once_and_not_restarted(
    supervise: Callable[..., Supervisor], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO, logger="kneeboard.supervisor")
    starts = tmp_path / "starts"
    # The child writes its own pid: it can finish (and be reaped, popen cleared) before the
    # test could read the supervisor's handle, as a CI run on a busy machine once showed.
    code = f"import os; open({str(starts)!r}, 'a').write(str(os.getpid()) + ' ')"
    supervise(ChildSpec("seeder", _python(code), restart_on_success=False))
    _until(lambda: starts.exists() and starts.read_text().endswith(" "), timeout=10)
    pid = int(starts.read_text().split()[0])
    _until(lambda: _state(pid) is None, timeout=10)  # gone from /proc: reaped, not a zombie
    time.sleep(0.5)
    assert starts.read_text().split() == [str(pid)], "started once, not restarted"
    assert f"seeder (pid {pid}) finished" in caplog.text and "restarting" not in caplog.text


def test_a_seeder_that_failed_is_restarted(supervise: Callable[..., Supervisor], tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    code = (
        f"open({str(starts)!r}, 'a').write('x'); import sys; sys.exit(len(open({str(starts)!r}).read()) < 2)"
    )
    supervise(ChildSpec("seeder", _python(code), restart_on_success=False))
    _until(lambda: starts.exists() and starts.read_text() == "xx", timeout=10)


def test_stop_ends_each_child_and_what_it_started(
    supervise: Callable[..., Supervisor], tmp_path: Path
) -> None:
    grandchild = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(grandchild)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    supervisor = supervise(ChildSpec("worker", _python(code)))
    _until(lambda: grandchild.exists() and grandchild.read_text(), timeout=10)
    child, grand = supervisor.pid("worker"), int(grandchild.read_text())
    assert child is not None
    supervisor.stop(grace_s=2)
    assert _state(child) is None
    _until(lambda: _state(grand) in (None, "Z"), timeout=5)  # killed (reaped by init)
