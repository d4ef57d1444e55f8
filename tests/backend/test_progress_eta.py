"""The job view's time-left estimate (backend.progress_eta), with fixed datetimes."""

from datetime import UTC, datetime, timedelta

import pytest

from backend.progress_eta import eta_seconds

START = datetime(2026, 12, 7, 20, 0, 0, tzinfo=UTC)


def test_straight_line_from_elapsed_and_fraction() -> None:
    # 60 s for a quarter: three more quarters take 180 s
    assert eta_seconds(0.25, START, START + timedelta(seconds=60)) == pytest.approx(180.0)
    # 30 s for 90 %: 10 % more takes 30 × 0.1 / 0.9 s
    assert eta_seconds(0.9, START, START + timedelta(seconds=30)) == pytest.approx(30 * 0.1 / 0.9)


def test_none_before_it_means_anything() -> None:
    later = START + timedelta(seconds=100)
    assert eta_seconds(0.04, START, later) is None  # under 5 % done
    assert eta_seconds(0.5, START, START + timedelta(seconds=4)) is None  # under 5 s run
    assert eta_seconds(0.5, None, later) is None  # not started
    assert eta_seconds(1.0, START, later) is None  # done
    assert eta_seconds(0.05, START, START + timedelta(seconds=5)) == pytest.approx(95.0)  # both at the edge


def test_naive_datetimes_give_no_estimate() -> None:
    naive = datetime(2026, 12, 7, 20, 0, 0)
    assert eta_seconds(0.5, naive, START) is None


def test_job_view_gives_the_estimate_of_a_running_job_only() -> None:
    import uuid

    from backend.api.job_view import job_out
    from backend.db.models import Job, JobStatus

    started = datetime.now(UTC) - timedelta(seconds=100)

    def view(status: JobStatus, progress: float) -> float | None:
        job = Job(
            id=uuid.uuid4(), project_id=uuid.uuid4(), kind="fidelity", name="", params={}, status=status.value,
            progress=progress, progress_message="", attempts=1, created_at=started, started_at=started, notes="",
            tags=[],
        )  # fmt: skip
        return job_out(job, {}).eta_s

    eta = view(JobStatus.running, 0.5)
    assert eta is not None and 100.0 <= eta < 110.0  # elapsed ≈ 100 s for a half: ≈ 100 s left
    assert view(JobStatus.running, 0.01) is None
    assert view(JobStatus.queued, 0.5) is None
