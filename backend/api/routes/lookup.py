"""Fetch-or-404 helpers that also check the caller's rights, so every route reports unknown ids, other teams'
ids and too low a role the same way."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Caller, Role
from backend.contracts import JobKind
from backend.db.models import Base, Dataset, Job, JobResult, JobStatus, Model, Project, Team
from backend.errors import Conflict, Forbidden, InvalidRequest, NotFound

Row = TypeVar("Row", bound=Base)

_LABELS: dict[type[Base], str] = {Project: "project", Model: "model", Dataset: "dataset", Job: "job"}


def _not_found(table: type[Base], row_id: uuid.UUID) -> NotFound:
    label = _LABELS.get(table, table.__name__.lower())
    return NotFound(f"no {label} with id {row_id}; list them with GET /api/v1/{label}s")


def require_role(session: Session, caller: Caller, team_id: uuid.UUID, need: Role, action: str) -> Role:
    """The caller's role in the team if it is at least `need`. Forbidden (403) for a member whose role is too
    low; callers outside the team must have been answered 404 before (see `get_or_404`)."""
    role = caller.role_in(team_id)
    if role is None or role < need:
        team = session.get(Team, team_id)
        name = team.name if team else str(team_id)
        have = f"your role in team {name!r} is {role.name}" if role else f"you are not in team {name!r}"
        raise Forbidden(f"{have}; {action} needs the {need.name} role (ask a team admin)")
    return role


def get_or_404(
    session: Session,
    table: type[Row],
    row_id: uuid.UUID,
    caller: Caller,
    need: Role = Role.viewer,
    action: str = "this change",
) -> Row:
    """The row, when the caller's team owns it and their role is at least `need`. A row of another team is
    answered exactly like a missing one (404, same message), so ids cannot be probed."""
    row = session.get(table, row_id)
    if row is None:
        raise _not_found(table, row_id)
    project = row if isinstance(row, Project) else session.get(Project, getattr(row, "project_id"))  # noqa: B009
    if project is None or caller.role_in(project.team_id) is None:
        raise _not_found(table, row_id)
    require_role(session, caller, project.team_id, need, action)
    return row


def team_of(session: Session, row: Project | Model | Dataset | Job) -> uuid.UUID:
    return row.team_id if isinstance(row, Project) else session.get_one(Project, row.project_id).team_id


def require_owner_or_admin(session: Session, caller: Caller, row: Model | Dataset | Job, action: str) -> None:
    """Members may change what they uploaded or launched; admins anything in their team."""
    team_id = team_of(session, row)
    if row.created_by == caller.user_id:
        require_role(session, caller, team_id, Role.member, action)
    else:
        require_role(session, caller, team_id, Role.admin, f"{action} of someone else's {_LABELS[type(row)]}")


def get_in_project_or_404(
    session: Session, table: type[Row], row_id: uuid.UUID, project_id: uuid.UUID, caller: Caller
) -> Row:
    row = get_or_404(session, table, row_id, caller)
    if getattr(row, "project_id", None) != project_id:
        label = _LABELS.get(table, table.__name__.lower())
        raise NotFound(f"no {label} with id {row_id} in project {project_id}")
    return row


def succeeded_job(session: Session, job_id: uuid.UUID, kind: JobKind, caller: Caller) -> Job:
    """The job, if the caller may read it, it is of this kind and has succeeded (results exist only then)."""
    job = get_or_404(session, Job, job_id, caller)
    if job.kind != kind.value:
        raise InvalidRequest(f"job {job_id} is a {job.kind} job, not a {kind.value} job")
    if job.status != JobStatus.succeeded.value:
        detail = f": {job.error}" if job.error else ""
        raise Conflict(f"job {job_id} is {job.status}{detail}; results exist once it has succeeded")
    return job


def job_result(session: Session, job_id: uuid.UUID, key: str, missing: str) -> dict[str, Any]:
    """A stored result document of a job; NotFound with `missing` as the message when there is none."""
    payload = session.execute(
        select(JobResult.payload).where(JobResult.job_id == job_id, JobResult.key == key)
    ).scalar_one_or_none()
    if payload is None:
        raise NotFound(missing)
    return dict(payload)
