"""The check of finished jobs against fidelity budgets: a breach raises one alert per budget in
scope; each job is checked exactly once, even with two checkers at a time, a checker blocked on a claimed
job skips it, and a round that dies loses no check; the check runs on SQLite too.

The fidelity summaries are real: the engine's compare_models on small numpy models, stored the way the
worker stores them; the budgets' limits are set from KL divergence and top-1 agreement computed here with
numpy, independently of the engine (tests/support/budget_jobs.py)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend import budgets as budget_checks
from backend.db.migrations import upgrade_to_head
from backend.db.models import Alert, Budget, Job, utcnow
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.budget_jobs import Measured, breaching_setup, create_budget, finished_job, stored_model
from tests.support.jobs import new_project


def test_a_breach_raises_one_alert_per_budget_in_scope(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured
) -> None:
    pid = uuid.UUID(project["id"])
    kl, top1 = measured.kl_mean, measured.top1_match
    create_budget(
        client, project["id"], name="strict", rules=[{"metric": "kl_mean", "bound": "max", "value": kl / 2}]
    )
    create_budget(
        client, project["id"], name="loose", rules=[{"metric": "kl_mean", "bound": "max", "value": kl * 2}]
    )
    create_budget(
        client,
        project["id"],
        name="int8 agreement",
        scope="tag",
        scope_value="int8",
        rules=[
            {"metric": "top1_match", "bound": "min", "value": (top1 + 1) / 2},
            {"metric": "cosine_mean", "bound": "min", "value": -1.0},
            {"metric": "top1_accuracy_drop_pp", "bound": "max", "value": 0.0},  # no labels: not checked
        ],
    )
    create_budget(
        client,
        project["id"],
        name="other family",
        scope="family",
        scope_value="bert-",
        rules=[{"metric": "kl_mean", "bound": "max", "value": 0.0}],
    )
    make = session_factory(settings.resolved_database_url)
    with make() as s:
        model = stored_model(s, pid, "resnet-int8", ["int8"])
        job = finished_job(s, pid, model, measured.summary)
        failed = finished_job(s, pid, model, None)
        failed.status = "failed"
        other = finished_job(s, pid, None, None, kind="sensitivity")
        s.commit()
        first = budget_checks.check_finished_jobs(s, webhook=False)
        second = budget_checks.check_finished_jobs(s, webhook=False)
        assert (first.checked_jobs, second.checked_jobs, second.alert_ids) == (3, 0, [])
        for checked in (job, failed, other):
            s.refresh(checked)
            assert checked.budget_checked_at is not None

    page = client.get(f"/api/v1/projects/{project['id']}/alerts").json()
    assert page["total"] == 2 and page["unacknowledged"] == 2
    by_budget = {a["budget_name"]: a for a in page["items"]}
    assert set(by_budget) == {"strict", "int8 agreement"}
    strict = by_budget["strict"]
    assert strict["job_id"] == str(job.id) and strict["compressed_model"] == "resnet-int8"
    assert strict["delivery_state"] == "none"
    [breach] = strict["breaches"]
    assert breach["metric"] == "kl_mean" and breach["value"] == pytest.approx(kl, rel=1e-6)
    assert breach["limit"] == pytest.approx(kl / 2) and "above the maximum" in breach["message"]
    [agreement] = by_budget["int8 agreement"]["breaches"]
    assert agreement["metric"] == "top1_match" and agreement["value"] == pytest.approx(top1)

    ack = client.post(f"/api/v1/projects/{project['id']}/alerts/{strict['id']}/ack")
    assert ack.status_code == 200 and ack.json()["acknowledged_at"] is not None
    again = client.post(f"/api/v1/projects/{project['id']}/alerts/{strict['id']}/ack")
    assert again.json()["acknowledged_at"] == ack.json()["acknowledged_at"]
    open_only = client.get(f"/api/v1/projects/{project['id']}/alerts", params={"unacknowledged": True}).json()
    assert open_only["unacknowledged"] == open_only["total"] == 1
    assert [a["budget_name"] for a in open_only["items"]] == ["int8 agreement"]
    missing = client.post(f"/api/v1/projects/{project['id']}/alerts/{uuid.uuid4()}/ack")
    assert missing.status_code == 404

    # A deleted budget's alerts stay, with its name.
    client.delete(f"/api/v1/projects/{project['id']}/budgets/{strict['budget_id']}")
    kept = client.get(f"/api/v1/projects/{project['id']}/alerts").json()["items"]
    assert {a["budget_name"]: a["budget_id"] for a in kept}["strict"] is None


def test_two_concurrent_checkers_check_each_job_once(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured
) -> None:
    job_ids = breaching_setup(settings, project["id"], measured, jobs=30)
    make = session_factory(settings.resolved_database_url)
    start = threading.Barrier(2)
    rounds: list[budget_checks.CheckRound] = []

    def checker() -> None:
        with make() as s:
            start.wait()
            rounds.append(budget_checks.check_finished_jobs(s, webhook=False, batch=100))

    threads = [threading.Thread(target=checker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(rounds) == 2
    assert sum(r.checked_jobs for r in rounds) == len(job_ids)
    ids = [i for r in rounds for i in r.alert_ids]
    assert len(ids) == len(set(ids)) == len(job_ids)
    with make() as s:
        alerted = s.execute(select(Alert.job_id)).scalars().all()
    assert sorted(alerted) == sorted(job_ids)


def test_a_checker_blocked_on_a_claimed_job_skips_it(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured
) -> None:
    """Deterministic interleaving: A has claimed the job (uncommitted) when B reaches it; B waits for A's
    row lock, then finds the job checked and raises nothing."""
    [job_id] = breaching_setup(settings, project["id"], measured, jobs=1)
    make = session_factory(settings.resolved_database_url)
    with make() as a:
        claim = Job.__table__.update().where(Job.id == job_id, Job.budget_checked_at.is_(None))
        assert a.execute(claim.values(budget_checked_at=utcnow())).rowcount == 1  # type: ignore[attr-defined]
        result: list[budget_checks.CheckRound] = []
        b = threading.Thread(
            target=lambda: result.append(budget_checks.check_finished_jobs(make(), webhook=False))
        )
        b.start()
        b.join(timeout=1.0)
        assert b.is_alive(), "B should wait on A's row lock"
        a.commit()
    b.join(timeout=30)
    assert result and result[0].alert_ids == [] and result[0].checked_jobs == 0


def test_a_round_that_dies_loses_no_check(
    client: TestClient,
    settings: Settings,
    project: dict[str, str],
    measured: Measured,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    [job_id] = breaching_setup(settings, project["id"], measured, jobs=1)
    make = session_factory(settings.resolved_database_url)
    real = budget_checks._alerts_for

    def crash(*args: Any) -> Any:
        raise ConnectionError("the database went away")

    monkeypatch.setattr(budget_checks, "_alerts_for", crash)
    with make() as s, pytest.raises(ConnectionError):
        budget_checks.check_finished_jobs(s, webhook=False)
    with make() as s:
        assert s.get_one(Job, job_id).budget_checked_at is None
    monkeypatch.setattr(budget_checks, "_alerts_for", real)
    with make() as s:
        assert len(budget_checks.check_finished_jobs(s, webhook=False).alert_ids) == 1


def test_the_check_runs_on_sqlite_too(tmp_path: Any, measured: Measured) -> None:
    """The embedded mode (SQLite): same check, same exactly-once claim."""
    url = f"sqlite:///{tmp_path / 'kb.db'}"
    upgrade_to_head(url)
    with session_factory(url)() as s:
        project = new_project(s)
        model = stored_model(s, project.id, "resnet-int8", ["int8"])
        s.add(
            Budget(
                project_id=project.id,
                name="int8",
                scope="tag",
                scope_value="int8",
                rules=[{"metric": "kl_mean_nats", "bound": "max", "value": measured.kl_mean * 0.9}],
            )
        )
        job = finished_job(s, project.id, model, measured.summary)
        first = budget_checks.check_finished_jobs(s, webhook=True)
        assert budget_checks.check_finished_jobs(s, webhook=True).checked_jobs == 0
        [alert] = s.execute(select(Alert)).scalars().all()
    assert first.alert_ids == [alert.id] and alert.job_id == job.id
    assert alert.delivery_state == "pending" and alert.breaches[0]["value"] == pytest.approx(measured.kl_mean)
