"""Fidelity budgets: which finished jobs they apply to, what they demand, and the check that turns a breach
into an alert.

A budget's rules use the vocabulary of `kneeboard check --max/--min` (kneeboard_client.thresholds): a metric
of the fidelity summary's primary output (`kl_mean`, `top1_match`, `labels.top1_accuracy_drop_pp`...) and a
bound. The check runs in the API's background loop (backend/alerts_loop.py), never in a request or a job:

- every job that reached a final state and has `budget_checked_at` unset is claimed by a compare-and-set on
  that column, and its alerts are inserted in the same transaction, so each job is checked exactly once
  whatever the number of API processes, and a crash before the commit leaves it unchecked for the next round;
- only succeeded fidelity jobs are evaluated; every other finished job is just marked checked.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_SUMMARY, JobKind
from backend.db.models import Alert, Budget, Job, JobResult, JobStatus, Model, utcnow
from backend.job_lifecycle import changed
from kneeboard_client.errors import CheckError
from kneeboard_client.thresholds import Limit, check_limit, output_metrics

FINAL = (JobStatus.succeeded.value, JobStatus.failed.value, JobStatus.cancelled.value)


class BudgetScope(StrEnum):
    all = "all"  # every compressed model of the project
    tag = "tag"  # models that carry the tag `scope_value`
    family = "family"  # models whose name starts with `scope_value`


class DeliveryState(StrEnum):
    none = "none"  # no webhook configured when the alert was raised
    pending = "pending"
    delivered = "delivered"
    failed = "failed"


def in_scope(scope: str, scope_value: str, model: Model | None) -> bool:
    if scope == BudgetScope.all:
        return True
    if model is None:  # the model was deleted: only "all" budgets still know it applies
        return False
    if scope == BudgetScope.tag:
        return scope_value in (model.tags or [])
    return model.name.startswith(scope_value)


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def breaches(summary: dict[str, Any], rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules the summary's primary output breaks: {metric, bound, limit, value, message}. A metric the
    summary does not have (e.g. an accuracy drop on a dataset without labels) is not a breach; an undefined
    one (no finite sample) is. `value` is None when undefined or not finite (the message gives it)."""
    try:
        _, metrics = output_metrics(summary, None)
    except CheckError:
        return []
    broken = []
    for rule in rules:
        limit = Limit(str(rule["metric"]), rule["bound"], float(rule["value"]))
        try:
            outcome = check_limit(metrics, limit)
        except CheckError:
            continue
        if not outcome.passed:
            broken.append(
                {
                    "metric": limit.metric,
                    "bound": limit.bound,
                    "limit": limit.value,
                    "value": _finite_or_none(outcome.value),
                    "message": outcome.message,
                }
            )
    return broken


@dataclass(frozen=True)
class CheckRound:
    checked_jobs: int
    alert_ids: list[uuid.UUID]


def _alerts_for(
    session: Session, job: Job, summary: dict[str, Any], webhook: bool, now: datetime
) -> list[Alert]:
    budgets = session.execute(select(Budget).where(Budget.project_id == job.project_id)).scalars().all()
    if not budgets:
        return []
    model_id = job.params.get("compressed_model_id")
    model = session.get(Model, uuid.UUID(str(model_id))) if model_id else None
    alerts = []
    for budget in budgets:
        if not in_scope(budget.scope, budget.scope_value, model):
            continue
        broken = breaches(summary, list(budget.rules))
        if broken:
            alerts.append(
                Alert(
                    id=uuid.uuid4(),
                    project_id=job.project_id,
                    budget_id=budget.id,
                    budget_name=budget.name,
                    job_id=job.id,
                    breaches=broken,
                    created_at=now,
                    delivery_state=(DeliveryState.pending if webhook else DeliveryState.none).value,
                    next_attempt_at=now if webhook else None,
                )
            )
    return alerts


def check_finished_jobs(
    session: Session, webhook: bool, now: datetime | None = None, batch: int = 200
) -> CheckRound:
    """One round: mark finished jobs that nothing is to check as checked, then claim each unchecked succeeded
    fidelity job (compare-and-set on budget_checked_at) and store the alerts its breaches raise, one
    transaction per job. `webhook`: new alerts wait for delivery (else their delivery state is "none")."""
    now = now or utcnow()
    # Read first, write only when there is something to mark: an idle round takes no write lock (SQLite).
    unchecked = session.execute(
        select(Job.id, Job.kind, Job.status)
        .where(Job.budget_checked_at.is_(None), Job.status.in_(FINAL))
        .order_by(Job.finished_at)
        .limit(batch)
    ).all()
    evaluable = JobKind.fidelity.value, JobStatus.succeeded.value
    due = [job_id for job_id, kind, status in unchecked if (kind, status) == evaluable]
    nothing_to_check = [job_id for job_id, kind, status in unchecked if (kind, status) != evaluable]
    checked = 0
    if nothing_to_check:
        marked = session.execute(
            update(Job)
            .where(Job.id.in_(nothing_to_check), Job.budget_checked_at.is_(None))
            .values(budget_checked_at=now)
        )
        session.commit()
        checked = changed(marked)
    alert_ids: list[uuid.UUID] = []
    for job_id in due:
        claim = (
            update(Job).where(Job.id == job_id, Job.budget_checked_at.is_(None)).values(budget_checked_at=now)
        )
        if changed(session.execute(claim)) != 1:  # another checker took it
            session.rollback()
            continue
        job = session.get_one(Job, job_id)
        summary = session.execute(
            select(JobResult.payload).where(
                JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_SUMMARY
            )
        ).scalar_one_or_none()
        alerts = _alerts_for(session, job, summary, webhook, now) if summary else []
        session.add_all(alerts)
        session.commit()
        checked += 1
        alert_ids += [a.id for a in alerts]
    return CheckRound(checked_jobs=checked, alert_ids=alert_ids)
