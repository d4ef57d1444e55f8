"""A team's audit trail (team admins): who uploaded, launched, changed and deleted what, in which project,
filtered by action, person, project and time, as pages of JSON or one CSV file."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response
from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session

from backend.accounts import Caller, Role
from backend.api.account_schemas import AuditEventOut
from backend.api.audit_names import target_names
from backend.api.auth import CallerDep
from backend.api.csv_text import csv_text
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import require_role
from backend.api.schemas import Offset, Page
from backend.db.models import AuditEvent, Project, Team
from backend.errors import Forbidden, InvalidRequest, NotFound

router = APIRouter(tags=["teams"])

CSV_COLUMNS = (
    "created_at",
    "actor_name",
    "action",
    "resource_type",
    "resource_id",
    "project_id",
    "project_name",
    "target_name",
    "detail",
)


def _utc(value: datetime | None) -> datetime | None:
    return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class AuditFilters:
    action: str | None
    actor: str | None
    project_id: uuid.UUID | None
    since: datetime | None
    until: datetime | None

    def conditions(self, team_id: uuid.UUID) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = [AuditEvent.team_id == team_id]
        if self.action is not None:
            found.append(AuditEvent.action == self.action)
        if self.actor is not None:
            found.append(func.lower(AuditEvent.actor_name) == self.actor.strip().lower())
        if self.project_id is not None:
            found.append(AuditEvent.project_id == self.project_id)
        if self.since is not None:
            found.append(AuditEvent.created_at >= self.since)
        if self.until is not None:
            found.append(AuditEvent.created_at < self.until)
        return found


def audit_filters(
    action: Annotated[
        str | None, Query(max_length=64, description="Only this action, e.g. job.launched.")
    ] = None,
    actor: Annotated[
        str | None, Query(max_length=64, description="Only what this user did (username, any case).")
    ] = None,
    project_id: Annotated[uuid.UUID | None, Query(description="Only events of this project.")] = None,
    since: Annotated[
        datetime | None,
        Query(description="Only events at or after this time (ISO 8601; without a time zone: UTC)."),
    ] = None,
    until: Annotated[
        datetime | None,
        Query(description="Only events before this time (ISO 8601; without a time zone: UTC)."),
    ] = None,
) -> AuditFilters:
    since, until = _utc(since), _utc(until)
    if since is not None and until is not None and until <= since:
        raise InvalidRequest(f"until ({until.isoformat()}) must be later than since ({since.isoformat()})")
    return AuditFilters(action, actor, project_id, since, until)


FiltersDep = Annotated[AuditFilters, Depends(audit_filters)]


def _admin_of(session: Session, caller: Caller, team_id: uuid.UUID) -> None:
    team = session.get(Team, team_id)
    if team is None or caller.role_in(team_id) is None:
        raise NotFound(f"no team with id {team_id}; list yours with GET /api/v1/teams")
    require_role(session, caller, team_id, Role.admin, "reading the audit trail")


def _events(team_id: uuid.UUID, filters: AuditFilters) -> Select[AuditEvent, str]:
    """The team's events with their project's name, newest first."""
    return (
        select(AuditEvent, Project.name)
        .outerjoin(Project, Project.id == AuditEvent.project_id)
        .where(*filters.conditions(team_id))
        .order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
    )


def _out(event: AuditEvent, project_name: str | None, target_name: str | None) -> AuditEventOut:
    return AuditEventOut.model_validate(event).model_copy(
        update={"project_name": project_name, "target_name": target_name}
    )


@router.get(
    "/teams/{team_id}/audit",
    operation_id="listAuditEvents",
    responses=error_responses(NotFound, Forbidden, InvalidRequest),
)
def list_audit_events(
    team_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    filters: FiltersDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> Page[AuditEventOut]:
    """Who uploaded, launched, cancelled, deleted and changed what in the team, in which project, newest
    first (team admins); filtered by action, person, project and time."""
    _admin_of(session, caller, team_id)
    conditions = filters.conditions(team_id)
    total = session.execute(select(func.count()).select_from(AuditEvent).where(*conditions)).scalar_one()
    rows = session.execute(_events(team_id, filters).limit(limit).offset(offset)).all()
    targets = target_names(session, [event for event, _ in rows])
    return Page[AuditEventOut](
        items=[_out(event, name, targets[event.id]) for event, name in rows],
        total=total,
        limit=limit,
        offset=offset,
    )


@router.get(
    "/teams/{team_id}/audit.csv",
    operation_id="exportAuditEventsCsv",
    responses=error_responses(NotFound, Forbidden, InvalidRequest)
    | {
        200: {
            "content": {"text/csv": {}},
            "description": "One row per event, newest first, a header row first.",
        }
    },
    response_class=Response,
)
def export_audit_events_csv(
    team_id: uuid.UUID,
    session: SessionDep,
    caller: CallerDep,
    filters: FiltersDep,
    limit: Annotated[int, Query(ge=1, le=100_000, description="At most this many events (newest).")] = 10_000,
) -> Response:
    """The audit trail as CSV (team admins), with the same filters as the list; `detail` is a JSON object."""
    _admin_of(session, caller, team_id)
    events = session.execute(_events(team_id, filters).limit(limit)).all()
    targets = target_names(session, [event for event, _ in events])
    rows = (
        [
            _utc(event.created_at).isoformat(),  # type: ignore[union-attr]
            event.actor_name,
            event.action,
            event.resource_type,
            event.resource_id,
            event.project_id or "",
            name or "",
            targets[event.id] or "",
            json.dumps(event.detail, sort_keys=True, ensure_ascii=False),
        ]
        for event, name in events
    )
    return Response(
        csv_text(CSV_COLUMNS, rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="audit-{str(team_id)[:8]}.csv"'},
    )
