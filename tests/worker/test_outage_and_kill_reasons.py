"""A database or broker outage never fails a job (the message goes back to the queue), and a pool process
killed by SIGKILL is blamed on the out-of-memory killer only when the kernel or the cgroup says so."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from celery.exceptions import Reject
from kombu.exceptions import OperationalError as KombuOperationalError
from sqlalchemy import exc as sa_exc

from worker import oom_evidence
from worker.runtime import ServiceUnavailable, crash_reason, run_guarded
from worker.tasks import requeue_on_outage


def _db_down() -> None:
    raise sa_exc.OperationalError("UPDATE jobs", {}, Exception("server closed the connection unexpectedly"))


def _broker_down() -> None:
    raise KombuOperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


@pytest.mark.parametrize("outage", [_db_down, _broker_down], ids=["database", "broker"])
def test_an_outage_is_not_the_jobs_failure_and_requeues_the_message(outage: object) -> None:
    failures: list[str] = []

    def body() -> str:
        outage()  # type: ignore[operator]
        return "succeeded"

    with pytest.raises(ServiceUnavailable):
        run_guarded(uuid.uuid4(), body, failures.append)
    assert failures == [], "the job must not be failed for an outage"

    @requeue_on_outage
    def task(job_id: str) -> str:
        return run_guarded(uuid.UUID(job_id), body, failures.append)

    with pytest.raises(Reject) as rejected:
        task(str(uuid.uuid4()))
    assert rejected.value.requeue is True


def test_a_bug_still_fails_the_job_and_is_not_requeued() -> None:
    failures: list[str] = []

    def body() -> str:
        raise KeyError("oops")

    @requeue_on_outage
    def task() -> str:
        return run_guarded(uuid.uuid4(), body, failures.append)

    assert task() == "failed"
    assert len(failures) == 1 and "internal error" in failures[0]


def test_a_sigkill_without_evidence_names_the_signal_only() -> None:
    reason = crash_reason("signal 9 (SIGKILL)", 3072)
    assert "killed by signal 9 (SIGKILL)" in reason
    assert "out-of-memory killer (" not in reason and "most likely" not in reason


def test_a_sigkill_with_evidence_names_the_oom_killer_and_the_evidence() -> None:
    reason = crash_reason(
        "signal 9 (SIGKILL)", 3072, "kernel log: 'Out of memory: Killed process 42 (python)'"
    )
    assert "killed by signal 9 (SIGKILL), by the kernel's out-of-memory killer" in reason
    assert "Killed process 42" in reason and "3072 MiB" in reason


def _dmesg(monkeypatch: pytest.MonkeyPatch, returncode: int, stdout: str) -> None:
    def run(*_args: object, **_kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["dmesg"], returncode, stdout, "")

    monkeypatch.setattr(oom_evidence.subprocess, "run", run)


def test_the_kernel_log_names_the_killed_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    log = (
        "[ 10.0] Out of memory: Killed process 4242 (celery) total-vm:9000kB\n"
        "[ 11.0] Memory cgroup out of memory: Killed process 77 (python) total-vm:1kB\n"
    )
    _dmesg(monkeypatch, 0, log)
    assert "Killed process 4242" in (oom_evidence.kernel_log_oom_line(4242) or "")
    assert "Killed process 77" in (oom_evidence.kernel_log_oom_line(77) or "")
    assert oom_evidence.kernel_log_oom_line(424) is None, "another pid's kill is no evidence"
    _dmesg(monkeypatch, 1, "dmesg: read kernel buffer failed: Operation not permitted")
    assert oom_evidence.kernel_log_oom_line(4242) is None, "an unreadable log proves nothing"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_cgroup_counter_must_move_to_count_as_evidence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, version: str
) -> None:
    _dmesg(monkeypatch, 1, "")
    if version == "v2":
        counter = tmp_path / "kube" / "pod1" / "memory.events"
        proc_cgroup, template = "0::/kube/pod1\n", "low 0\nhigh 0\nmax 3\noom 1\noom_kill {}\n"
    else:
        counter = tmp_path / "memory" / "docker" / "abc" / "memory.oom_control"
        proc_cgroup = "5:cpu:/\n4:memory:/docker/abc\n0::/\n"
        template = "oom_kill_disable 0\nunder_oom 0\noom_kill {}\n"
    counter.parent.mkdir(parents=True)
    counter.write_text(template.format(2))
    monkeypatch.setattr(oom_evidence, "CGROUP_ROOT", tmp_path)
    real_read_text = Path.read_text
    monkeypatch.setattr(
        Path,
        "read_text",
        lambda self, *a, **k: (
            proc_cgroup if str(self) == "/proc/self/cgroup" else real_read_text(self, *a, **k)
        ),
    )
    assert oom_evidence.cgroup_oom_kills() == 2
    witness = oom_evidence.OomWitness()
    assert witness.evidence(1234) is None, "the counter has not moved"
    counter.write_text(template.format(3))
    assert "oom_kill 3" in (witness.evidence(1234) or "")
    assert witness.evidence(1234) is None, "that kill is accounted for"
