"""Fidelity budgets and alerts on Postgres: the API, the check of finished jobs (exactly once, even with two
checkers at a time, and not lost when a round dies), and the signed webhook against a real HTTP receiver.

The fidelity summaries are real: the engine's compare_models on small numpy models, stored the way the
worker stores them; the budgets' limits are set from KL divergence and top-1 agreement computed here with
numpy, independently of the engine.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend import budgets as budget_checks
from backend import webhook
from backend.alerts_loop import alerts_round
from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.migrations import upgrade_to_head
from backend.db.models import Alert, Artifact, Budget, Job, JobResult, Model, utcnow
from backend.db.session import session_factory
from backend.settings import Settings
from tests.backend.test_diagnostics_api import C, D, TwoHeads
from tests.support.jobs import new_project
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.runtime import json_safe

N = 200


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class Measured:
    """A real fidelity summary of a noisy copy of a model, and its KL / top-1 agreement computed here."""

    def __init__(self, noise: float, seed: int = 3) -> None:
        rng = np.random.default_rng(seed)
        w, v = rng.normal(size=(D, C)), rng.normal(size=(D, 15))
        x = rng.normal(size=(N, D))
        golden = TwoHeads(w, v)
        compressed = TwoHeads(w + rng.normal(scale=noise, size=w.shape), v)
        report = compare_models(golden, compressed, {"x": x}, None, FidelityParams(batch_size=64))
        self.summary: dict[str, Any] = json_safe(report.summary_dict())
        p, q = _softmax(3 * x @ golden.w), _softmax(3 * x @ compressed.w)
        self.kl_mean = float(np.mean(np.sum(p * (np.log(p) - np.log(q)), axis=1)))
        self.top1_match = float(np.mean(p.argmax(axis=1) == q.argmax(axis=1)))


@pytest.fixture(scope="module")
def measured() -> Measured:
    m = Measured(noise=0.4)
    assert m.summary["primary_output"] == "logits"
    assert m.summary["outputs"]["logits"]["kl_mean_nats"] == pytest.approx(m.kl_mean, rel=1e-6)
    assert 0.5 < m.top1_match < 1.0, "the test needs a compressed model that flips some samples"
    return m


def _model(s: Session, project_id: uuid.UUID, name: str, tags: list[str]) -> Model:
    sha = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    s.add(Artifact(sha256=sha, size_bytes=1))
    model = Model(
        project_id=project_id,
        name=name,
        filename=f"{name}.onnx",
        format="onnx",
        artifact_sha256=sha,
        size_bytes=1,
        status="ready",
        tags=tags,
    )
    s.add(model)
    s.flush()
    return model


def _finished_job(
    s: Session,
    project_id: uuid.UUID,
    model: Model | None,
    summary: dict[str, Any] | None,
    kind: str = "fidelity",
) -> Job:
    """A job as the worker leaves it: succeeded, its summary stored in the same transaction."""
    params = {"compressed_model_id": str(model.id)} if model else {}
    job = Job(
        project_id=project_id, kind=kind, params=params, status="succeeded", attempts=1, finished_at=utcnow()
    )
    s.add(job)
    s.flush()
    if summary is not None:
        s.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=summary))
    s.commit()
    return job


def _budget(client: TestClient, project_id: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/v1/projects/{project_id}/budgets", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _renamed(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "moved", "rules": rules}


def test_budgets_crud_and_refused_input(client: TestClient, project: dict[str, str]) -> None:
    url = f"/api/v1/projects/{project['id']}/budgets"
    rules = [{"metric": "kl_mean", "bound": "max", "value": 0.01}]
    made = _budget(client, project["id"], name="release", rules=rules)
    assert made["scope"] == "all" and made["rules"] == rules
    duplicate = client.post(url, json={"name": "release", "rules": rules})
    assert duplicate.status_code == 409 and "already exists" in duplicate.json()["detail"]
    for bad, says in (
        ({"name": "x", "rules": []}, "rules"),
        ({"name": "x", "rules": [{"metric": "kl mean", "bound": "max", "value": 1}]}, "metric"),
        ({"name": "x", "rules": [{"metric": "kl_mean", "bound": "below", "value": 1}]}, "bound"),
        ({"name": "x", "rules": [{"metric": "kl_mean", "bound": "max", "value": "NaN"}]}, "finite"),
        ({"name": "x", "scope": "tag", "rules": rules}, "needs a tag"),
        ({"name": "x", "scope": "all", "scope_value": "int8", "rules": rules}, "must be empty"),
    ):
        response = client.post(url, json=bad)
        assert response.status_code == 422, (bad, response.text)
        assert says in response.json()["detail"], response.json()["detail"]
    changed = client.put(
        f"{url}/{made['id']}",
        json={"name": "int8 family", "scope": "family", "scope_value": "resnet-", "rules": rules},
    )
    assert changed.status_code == 200 and changed.json()["scope_value"] == "resnet-", changed.text
    assert [b["name"] for b in client.get(url).json()] == ["int8 family"]
    other = _budget(client, project["id"], name="other", rules=rules)
    clash = client.put(f"{url}/{other['id']}", json={"name": "int8 family", "rules": rules})
    assert clash.status_code == 409 and client.get(f"{url}").json()[1]["name"] == "other"
    assert client.delete(f"{url}/{other['id']}").status_code == 204
    elsewhere = client.post("/api/v1/projects", json={"name": f"p-{uuid.uuid4().hex[:6]}"}).json()
    wrong_project = client.put(
        f"/api/v1/projects/{elsewhere['id']}/budgets/{made['id']}", json=_renamed(rules)
    )
    assert wrong_project.status_code == 404 and "no budget" in wrong_project.json()["detail"]
    assert client.delete(f"{url}/{made['id']}").status_code == 204
    assert client.delete(f"{url}/{made['id']}").status_code == 404
    assert client.get(url).json() == []


def test_a_breach_raises_one_alert_per_budget_in_scope(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured
) -> None:
    pid = uuid.UUID(project["id"])
    kl, top1 = measured.kl_mean, measured.top1_match
    _budget(
        client, project["id"], name="strict", rules=[{"metric": "kl_mean", "bound": "max", "value": kl / 2}]
    )
    _budget(
        client, project["id"], name="loose", rules=[{"metric": "kl_mean", "bound": "max", "value": kl * 2}]
    )
    _budget(
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
    _budget(
        client,
        project["id"],
        name="other family",
        scope="family",
        scope_value="bert-",
        rules=[{"metric": "kl_mean", "bound": "max", "value": 0.0}],
    )
    make = session_factory(settings.resolved_database_url)
    with make() as s:
        model = _model(s, pid, "resnet-int8", ["int8"])
        job = _finished_job(s, pid, model, measured.summary)
        failed = _finished_job(s, pid, model, None)
        failed.status = "failed"
        other = _finished_job(s, pid, None, None, kind="sensitivity")
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


def _breaching_setup(settings: Settings, project_id: str, measured: Measured, jobs: int) -> list[uuid.UUID]:
    pid = uuid.UUID(project_id)
    with session_factory(settings.resolved_database_url)() as s:
        s.add(
            Budget(
                project_id=pid,
                name="strict",
                scope="all",
                rules=[{"metric": "kl_mean", "bound": "max", "value": measured.kl_mean / 2}],
            )
        )
        model = _model(s, pid, "m", [])
        return [_finished_job(s, pid, model, measured.summary).id for _ in range(jobs)]


def test_two_concurrent_checkers_check_each_job_once(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured
) -> None:
    job_ids = _breaching_setup(settings, project["id"], measured, jobs=30)
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
    [job_id] = _breaching_setup(settings, project["id"], measured, jobs=1)
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
    [job_id] = _breaching_setup(settings, project["id"], measured, jobs=1)
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


class Receiver:
    """A real HTTP server in a thread that records each request and answers `status`."""

    def __init__(self, status: int) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    r = Receiver(getattr(request, "param", 200))
    yield r
    r.close()


SECRET = "s3cret-for-tests"


def test_the_webhook_delivers_a_signed_alert(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured, receiver: Receiver
) -> None:
    hooked = settings.model_copy(update={"alert_webhook_url": receiver.url, "alert_webhook_secret": SECRET})
    [job_id] = _breaching_setup(settings, project["id"], measured, jobs=1)
    checked = alerts_round(hooked)  # checks the job, then sends its alert
    assert len(checked.alert_ids) == 1 and len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["x-kneeboard-signature"], expected)
    wrong = "sha256=" + hmac.new(b"another secret", body, hashlib.sha256).hexdigest()
    assert not hmac.compare_digest(headers["x-kneeboard-signature"], wrong)
    document = json.loads(body)
    assert document["alert_id"] == headers["x-kneeboard-alert-id"] == str(checked.alert_ids[0])
    assert document["job_id"] == str(job_id) and document["budget"] == "strict"
    assert document["breaches"][0]["value"] == pytest.approx(measured.kl_mean, rel=1e-6)
    [alert] = client.get(f"/api/v1/projects/{project['id']}/alerts").json()["items"]
    assert (alert["delivery_state"], alert["delivery_attempts"], alert["last_error"]) == (
        "delivered",
        1,
        None,
    )
    alerts_round(hooked)
    assert len(receiver.requests) == 1, "a delivered alert is not sent again"


@pytest.mark.parametrize("receiver", [500], indirect=True)
def test_a_failing_receiver_is_retried_with_backoff_then_marked_failed(
    client: TestClient, settings: Settings, project: dict[str, str], measured: Measured, receiver: Receiver
) -> None:
    hooked = settings.model_copy(
        update={
            "alert_webhook_url": receiver.url,
            "alert_webhook_secret": SECRET,
            "alert_webhook_max_attempts": 3,
            "alert_webhook_backoff_s": 60.0,
        }
    )
    _breaching_setup(settings, project["id"], measured, jobs=1)
    make = session_factory(settings.resolved_database_url)
    with make() as s:
        budget_checks.check_finished_jobs(s, webhook=True)
        now = utcnow()
        first = webhook.deliver_due(s, hooked, now=now)
        assert [(d.attempt, d.state) for d in first] == [(1, "pending")]
        assert webhook.deliver_due(s, hooked, now=now + timedelta(seconds=30)) == [], "backoff: not due yet"
        second = webhook.deliver_due(s, hooked, now=now + timedelta(seconds=61))
        assert [(d.attempt, d.state) for d in second] == [(2, "pending")]
        [alert] = s.execute(select(Alert)).scalars().all()
        s.refresh(alert)
        assert alert.next_attempt_at is not None
        waited = (alert.next_attempt_at - utcnow()).total_seconds()
        assert 110 < waited <= 120, "the second wait doubles"
        third = webhook.deliver_due(s, hooked, now=now + timedelta(hours=1))
        assert [(d.attempt, d.state) for d in third] == [(3, "failed")]
        assert webhook.deliver_due(s, hooked, now=now + timedelta(days=1)) == []
    assert len(receiver.requests) == 3
    [shown] = client.get(f"/api/v1/projects/{project['id']}/alerts").json()["items"]
    assert shown["delivery_state"] == "failed" and shown["delivery_attempts"] == 3
    assert "HTTP 500" in shown["last_error"]


def test_an_unreachable_receiver_is_an_error_not_a_crash(
    settings: Settings, account: Any, measured: Measured, client: TestClient, project: dict[str, str]
) -> None:
    closed = Receiver(200)
    closed.close()  # nothing listens on its port any more
    hooked = settings.model_copy(update={"alert_webhook_url": closed.url, "alert_webhook_secret": SECRET})
    _breaching_setup(settings, project["id"], measured, jobs=1)
    with session_factory(settings.resolved_database_url)() as s:
        budget_checks.check_finished_jobs(s, webhook=True)
        [delivery] = webhook.deliver_due(s, hooked)
    assert delivery.state == "pending" and delivery.error and "Connect" in delivery.error


def test_the_check_runs_on_sqlite_too(tmp_path: Any, measured: Measured) -> None:
    """The embedded mode (SQLite): same check, same exactly-once claim."""
    url = f"sqlite:///{tmp_path / 'kb.db'}"
    upgrade_to_head(url)
    with session_factory(url)() as s:
        project = new_project(s)
        model = _model(s, project.id, "resnet-int8", ["int8"])
        s.add(
            Budget(
                project_id=project.id,
                name="int8",
                scope="tag",
                scope_value="int8",
                rules=[{"metric": "kl_mean_nats", "bound": "max", "value": measured.kl_mean * 0.9}],
            )
        )
        job = _finished_job(s, project.id, model, measured.summary)
        first = budget_checks.check_finished_jobs(s, webhook=True)
        assert budget_checks.check_finished_jobs(s, webhook=True).checked_jobs == 0
        [alert] = s.execute(select(Alert)).scalars().all()
    assert first.alert_ids == [alert.id] and alert.job_id == job.id
    assert alert.delivery_state == "pending" and alert.breaches[0]["value"] == pytest.approx(measured.kl_mean)


def test_a_malformed_webhook_url_fails_the_attempts_not_the_loop(
    settings: Settings, measured: Measured, client: TestClient, project: dict[str, str]
) -> None:
    hooked = settings.model_copy(
        update={"alert_webhook_url": "http://[::1/hook", "alert_webhook_max_attempts": 1}
    )
    _breaching_setup(settings, project["id"], measured, jobs=1)
    with session_factory(settings.resolved_database_url)() as s:
        budget_checks.check_finished_jobs(s, webhook=True)
        [delivery] = webhook.deliver_due(s, hooked)
    assert delivery.state == "failed" and delivery.error and delivery.error.startswith("InvalidURL")
