"""Fidelity budgets of a project (CRUD) and the alerts their breaches raised (list, acknowledge).

Checking happens in the background (backend/alerts_loop.py), never in these requests."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from backend.accounts import Caller, Role
from backend.api.auth import CallerDep
from backend.api.budget_schemas import AlertOut, AlertPage, BudgetIn, BudgetOut
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import Offset
from backend.audit import AuditAction, record
from backend.db.models import Alert, Budget, Job, Model, Project, utcnow
from backend.errors import Conflict, Forbidden, InvalidRequest, NotFound

router = APIRouter(prefix="/projects/{project_id}", tags=["budgets"])

READ_ERRORS = error_responses(NotFound, InvalidRequest)
WRITE_ERRORS = error_responses(NotFound, Forbidden, Conflict, InvalidRequest)


def _budget(session: Session, project_id: uuid.UUID, budget_id: uuid.UUID) -> Budget:
    budget = session.get(Budget, budget_id)
    if budget is None or budget.project_id != project_id:
        raise NotFound(f"no budget with id {budget_id} in project {project_id}")
    return budget


def _commit_named(session: Session, name: str) -> None:
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise Conflict(f"a budget named {name!r} already exists in this project; pick another name") from exc


def _record(
    session: Session, caller: Caller, project: Project, action: AuditAction, budget: Budget, **extra: Any
) -> None:
    """The budget's change in the team's audit trail, committed with it (its name and scope as they are
    after the change; `before`: the name it had, when renamed)."""
    record(
        session, caller, project.team_id, action, "budget", budget.id, project.id,
        name=budget.name, scope=budget.scope, scope_value=budget.scope_value, **extra,
    )  # fmt: skip


def _fill(budget: Budget, body: BudgetIn) -> None:
    budget.name = body.name
    budget.scope = body.scope.value
    budget.scope_value = body.scope_value
    budget.rules = [rule.model_dump() for rule in body.rules]


@router.get("/budgets", operation_id="listBudgets", responses=READ_ERRORS)
def list_budgets(project_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> list[BudgetOut]:
    """The project's fidelity budgets, by name."""
    get_or_404(session, Project, project_id, caller)
    rows = session.execute(select(Budget).where(Budget.project_id == project_id).order_by(Budget.name))
    return [BudgetOut.model_validate(b) for b in rows.scalars()]


@router.post(
    "/budgets", status_code=status.HTTP_201_CREATED, operation_id="createBudget", responses=WRITE_ERRORS
)
def create_budget(project_id: uuid.UUID, body: BudgetIn, session: SessionDep, caller: CallerDep) -> BudgetOut:
    """A new budget: every fidelity job of the project that succeeds from now on, on a compressed model in
    the budget's scope, is checked against its rules; a breach raises an alert."""
    project = get_or_404(session, Project, project_id, caller, Role.member, "creating a budget")
    budget = Budget(id=uuid.uuid4(), project_id=project_id, created_by=caller.user_id, created_at=utcnow())
    _fill(budget, body)
    session.add(budget)
    _record(session, caller, project, AuditAction.budget_created, budget)
    _commit_named(session, body.name)
    return BudgetOut.model_validate(budget)


@router.put("/budgets/{budget_id}", operation_id="updateBudget", responses=WRITE_ERRORS)
def update_budget(
    project_id: uuid.UUID, budget_id: uuid.UUID, body: BudgetIn, session: SessionDep, caller: CallerDep
) -> BudgetOut:
    """Replace a budget's name, scope and rules (jobs checked before keep their alerts)."""
    project = get_or_404(session, Project, project_id, caller, Role.member, "changing a budget")
    budget = _budget(session, project_id, budget_id)
    before = budget.name
    _fill(budget, body)
    _record(
        session,
        caller,
        project,
        AuditAction.budget_updated,
        budget,
        **({"before": before} if before != body.name else {}),
    )
    _commit_named(session, body.name)
    return BudgetOut.model_validate(budget)


@router.delete(
    "/budgets/{budget_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="deleteBudget",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def delete_budget(
    project_id: uuid.UUID, budget_id: uuid.UUID, session: SessionDep, caller: CallerDep
) -> None:
    """Delete a budget; its alerts stay (with the budget's name)."""
    project = get_or_404(session, Project, project_id, caller, Role.member, "deleting a budget")
    budget = _budget(session, project_id, budget_id)
    _record(session, caller, project, AuditAction.budget_deleted, budget)
    session.delete(budget)
    session.commit()


def _alerts_out(session: Session, alerts: list[Alert]) -> list[AlertOut]:
    jobs = {
        j.id: j for j in session.execute(select(Job).where(Job.id.in_({a.job_id for a in alerts}))).scalars()
    }
    model_ids: dict[uuid.UUID, uuid.UUID | None] = {}
    for job_id, job in jobs.items():
        raw = job.params.get("compressed_model_id")
        model_ids[job_id] = uuid.UUID(str(raw)) if raw else None
    wanted = {m for m in model_ids.values() if m is not None}
    names = dict(session.execute(select(Model.id, Model.name).where(Model.id.in_(wanted))).tuples().all())
    out = []
    for alert in alerts:
        model_id = model_ids.get(alert.job_id)
        out.append(
            AlertOut.model_validate(alert).model_copy(
                update={"compressed_model_id": model_id, "compressed_model": names.get(model_id)}
                if model_id
                else {}
            )
        )
    return out


@router.get("/alerts", operation_id="listAlerts", responses=READ_ERRORS)
def list_alerts(
    project_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    unacknowledged: Annotated[bool, Query(description="Only alerts nobody has acknowledged.")] = False,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> AlertPage:
    """The project's alerts, newest first, with the count of unacknowledged ones."""
    get_or_404(session, Project, project_id, caller)
    conditions = [Alert.project_id == project_id]
    open_alerts = [*conditions, Alert.acknowledged_at.is_(None)]
    if unacknowledged:
        conditions = open_alerts
    total = session.execute(select(func.count()).select_from(Alert).where(*conditions)).scalar_one()
    pending = session.execute(select(func.count()).select_from(Alert).where(*open_alerts)).scalar_one()
    rows = session.execute(
        select(Alert)
        .where(*conditions)
        .order_by(Alert.created_at.desc(), Alert.id.desc())
        .limit(limit)
        .offset(offset)
    )
    items = _alerts_out(session, list(rows.scalars()))
    return AlertPage(items=items, total=total, limit=limit, offset=offset, unacknowledged=pending)


@router.post(
    "/alerts/{alert_id}/ack",
    operation_id="acknowledgeAlert",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def acknowledge_alert(
    project_id: uuid.UUID,
    alert_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
) -> AlertOut:
    """Mark an alert as seen (it leaves the badge's count). Acknowledging twice keeps the first time."""
    project = get_or_404(session, Project, project_id, caller, Role.member, "acknowledging an alert")
    alert = session.get(Alert, alert_id)
    if alert is None or alert.project_id != project_id:
        raise NotFound(f"no alert with id {alert_id} in project {project_id}")
    if alert.acknowledged_at is None:
        alert.acknowledged_at = utcnow()
        alert.acknowledged_by = caller.user_id
        record(
            session, caller, project.team_id, AuditAction.alert_acknowledged, "alert", alert.id, project.id,
            budget_name=alert.budget_name, job_id=str(alert.job_id),
        )  # fmt: skip
        session.commit()
    return _alerts_out(session, [alert])[0]
