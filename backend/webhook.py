"""Alert webhooks: each new alert is POSTed as JSON to KNEEBOARD_ALERT_WEBHOOK_URL, signed with HMAC-SHA256,
retried with a doubling backoff up to KNEEBOARD_ALERT_WEBHOOK_MAX_ATTEMPTS, its delivery state stored on the
alert. Runs in the API's background loop (backend/alerts_loop.py), never in a request or a job.

The receiver checks the signature over the raw body it received, before parsing it:

    expected = "sha256=" + hmac.new(secret, raw_body, hashlib.sha256).hexdigest()
    hmac.compare_digest(expected, request.headers["X-Kneeboard-Signature"])

Delivery is at least once: a process that dies between a 2xx answer and storing "delivered" sends the alert
again later; `X-Kneeboard-Alert-Id` (also `alert_id` in the body) lets the receiver drop the duplicate.
Each attempt is claimed by a compare-and-set on `delivery_attempts`, so concurrent API processes never send
the same attempt twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from backend.budgets import DeliveryState
from backend.db.models import Alert, Job, Model, Project, utcnow
from backend.job_lifecycle import changed
from backend.settings import Settings

SIGNATURE_HEADER = "X-Kneeboard-Signature"
ALERT_ID_HEADER = "X-Kneeboard-Alert-Id"

Post = Callable[[str, bytes, dict[str, str], float], int]
"""(url, body, headers, timeout_s) -> HTTP status; raises on a network error."""


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def http_post(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
    with httpx.Client(timeout=timeout_s, follow_redirects=False) as client:
        return client.post(url, content=body, headers=headers).status_code


def alert_body(session: Session, alert: Alert) -> bytes:
    """The JSON document sent for an alert (keys sorted, so the bytes signed are the bytes sent)."""
    project = session.get(Project, alert.project_id)
    job = session.get(Job, alert.job_id)
    model_id = job.params.get("compressed_model_id") if job else None
    model = session.get(Model, uuid.UUID(model_id)) if isinstance(model_id, str) else None
    document: dict[str, Any] = {
        "alert_id": str(alert.id),
        "event": "fidelity_budget_breached",
        "project_id": str(alert.project_id),
        "project": project.name if project else None,
        "budget_id": str(alert.budget_id) if alert.budget_id else None,
        "budget": alert.budget_name,
        "job_id": str(alert.job_id),
        "compressed_model_id": model_id,
        "compressed_model": model.name if model else None,
        "breaches": alert.breaches,
        "created_at": alert.created_at.isoformat(),
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def retry_wait_s(settings: Settings, attempts: int) -> float:
    """Wait after the `attempts`-th failed try: backoff, 2 × backoff, 4 × backoff..."""
    return settings.alert_webhook_backoff_s * 2 ** max(0, attempts - 1)


@dataclass(frozen=True)
class Delivery:
    alert_id: uuid.UUID
    attempt: int
    state: str
    error: str | None


def _claim(session: Session, alert: Alert, settings: Settings, now: datetime) -> int | None:
    """Take the alert's next attempt: its attempts counter moves (compare-and-set) and next_attempt_at is
    pushed past the request's timeout, so another process does not try it meanwhile."""
    attempt = alert.delivery_attempts + 1
    lease = now + timedelta(seconds=settings.alert_webhook_timeout_s + retry_wait_s(settings, attempt))
    result = session.execute(
        update(Alert)
        .where(
            Alert.id == alert.id,
            Alert.delivery_state == DeliveryState.pending.value,
            Alert.delivery_attempts == alert.delivery_attempts,
        )
        .values(delivery_attempts=attempt, next_attempt_at=lease)
    )
    session.commit()
    return attempt if changed(result) == 1 else None


def deliver_due(
    session: Session, settings: Settings, post: Post = http_post, now: datetime | None = None, batch: int = 50
) -> list[Delivery]:
    """Send every pending alert whose next attempt is due; store what happened."""
    if not settings.alert_webhook_url:
        return []
    now = now or utcnow()
    due = (
        session.execute(
            select(Alert)
            .where(Alert.delivery_state == DeliveryState.pending.value, Alert.next_attempt_at <= now)
            .order_by(Alert.id)
            .limit(batch)
        )
        .scalars()
        .all()
    )
    done = []
    for alert in due:
        attempt = _claim(session, alert, settings, now)
        if attempt is None:
            continue
        body = alert_body(session, alert)
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(settings.alert_webhook_secret, body),
            ALERT_ID_HEADER: str(alert.id),
        }
        error: str | None = None
        try:
            status = post(settings.alert_webhook_url, body, headers, settings.alert_webhook_timeout_s)
            if not 200 <= status < 300:
                error = f"the receiver answered HTTP {status}"
        except Exception as exc:  # any failure (network, a malformed URL setting) is this attempt's error
            error = f"{type(exc).__name__}: {exc}"[:500]
        finished = utcnow()
        if error is None:
            values: dict[str, object] = {
                "delivery_state": DeliveryState.delivered.value,
                "delivered_at": finished,
                "last_error": None,
                "next_attempt_at": None,
            }
        elif attempt >= settings.alert_webhook_max_attempts:
            values = {
                "delivery_state": DeliveryState.failed.value,
                "last_error": error,
                "next_attempt_at": None,
            }
        else:
            wait = timedelta(seconds=retry_wait_s(settings, attempt))
            values = {"last_error": error, "next_attempt_at": finished + wait}
        session.execute(
            update(Alert).where(Alert.id == alert.id, Alert.delivery_attempts == attempt).values(**values)
        )
        session.commit()
        state = str(values.get("delivery_state", DeliveryState.pending.value))
        done.append(Delivery(alert.id, attempt, state, error))
    return done
