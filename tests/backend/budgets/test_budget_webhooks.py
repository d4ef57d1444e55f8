"""The alert webhook against a real HTTP receiver: a signed alert is delivered, a failing receiver is
retried with backoff then marked failed, and an unreachable receiver or a malformed URL is an error of the
delivery, not a crash of the loop.

The fidelity summaries are real: the engine's compare_models on small numpy models, stored the way the
worker stores them; the budgets' limits are set from KL divergence and top-1 agreement computed here with
numpy, independently of the engine (tests/support/budget_jobs.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend import budgets as budget_checks
from backend import webhook
from backend.alerts_loop import alerts_round
from backend.db.models import Alert, utcnow
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.budget_jobs import Measured, breaching_setup


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
    [job_id] = breaching_setup(settings, project["id"], measured, jobs=1)
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
    breaching_setup(settings, project["id"], measured, jobs=1)
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
    breaching_setup(settings, project["id"], measured, jobs=1)
    with session_factory(settings.resolved_database_url)() as s:
        budget_checks.check_finished_jobs(s, webhook=True)
        [delivery] = webhook.deliver_due(s, hooked)
    assert delivery.state == "pending" and delivery.error and "Connect" in delivery.error


def test_a_malformed_webhook_url_fails_the_attempts_not_the_loop(
    settings: Settings, measured: Measured, client: TestClient, project: dict[str, str]
) -> None:
    hooked = settings.model_copy(
        update={"alert_webhook_url": "http://[::1/hook", "alert_webhook_max_attempts": 1}
    )
    breaching_setup(settings, project["id"], measured, jobs=1)
    with session_factory(settings.resolved_database_url)() as s:
        budget_checks.check_finished_jobs(s, webhook=True)
        [delivery] = webhook.deliver_due(s, hooked)
    assert delivery.state == "failed" and delivery.error and delivery.error.startswith("InvalidURL")
