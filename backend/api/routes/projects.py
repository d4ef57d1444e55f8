from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from fastapi import APIRouter, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from backend.accounts import Caller, Role
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import get_or_404, require_role
from backend.api.schemas import ProjectCreate, ProjectOut
from backend.audit import AuditAction, record
from backend.db.models import Alert, AuditEvent, Dataset, Job, Model, Project
from backend.errors import Conflict, Forbidden, InvalidRequest, KneeboardError, NotFound, UploadTooLarge

router = APIRouter(prefix="/projects", tags=["projects"])


def _owning_team(caller: Caller, team_id: uuid.UUID | None) -> uuid.UUID:
    if team_id is not None:
        if caller.role_in(team_id) is None:
            raise NotFound(f"no team with id {team_id}; list yours with GET /api/v1/teams")
        return team_id
    writable = [t for t, role in caller.roles.items() if role >= Role.member]
    if len(writable) == 1:
        return writable[0]
    if not writable:
        raise Forbidden("you are not a member or admin of any team; ask a team admin to add you")
    raise InvalidRequest("team_id: you are in several teams; say which one owns the project")


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)  # SQLite hands back naive UTC


def with_counts(session: Session, projects: Sequence[Project]) -> list[ProjectOut]:
    """The projects with their counts of models, datasets, jobs and open alerts and their last activity: the
    latest upload, launch, job start or finish, or audited change (rename, delete...), else the project's creation.
    One grouped query per table, whatever the number of projects."""
    ids = [p.id for p in projects]
    counts: dict[str, dict[uuid.UUID, int]] = {}
    latest: dict[uuid.UUID, datetime] = {p.id: _utc(p.created_at) for p in projects}

    def later(project_id: uuid.UUID | None, *times: datetime | None) -> None:
        for time in times:
            if project_id is not None and time is not None:
                latest[project_id] = max(latest[project_id], _utc(time))

    for label, table in (("models", Model), ("datasets", Dataset)):
        rows = session.execute(
            select(table.project_id, func.count(), func.max(table.created_at))
            .where(table.project_id.in_(ids))
            .group_by(table.project_id)
        ).all()
        counts[label] = {pid: n for pid, n, _ in rows}
        for pid, _, newest in rows:
            later(pid, newest)
    job_rows = session.execute(
        select(
            Job.project_id,
            func.count(),
            func.max(Job.created_at),
            func.max(Job.started_at),
            func.max(Job.finished_at),
        )
        .where(Job.project_id.in_(ids))
        .group_by(Job.project_id)
    ).all()
    counts["jobs"] = {pid: n for pid, n, *_ in job_rows}
    for pid, _, *times in job_rows:
        later(pid, *times)
    open_alerts = dict(
        session.execute(
            select(Alert.project_id, func.count())
            .where(Alert.project_id.in_(ids), Alert.acknowledged_at.is_(None))
            .group_by(Alert.project_id)
        )
        .tuples()
        .all()
    )
    team_ids = list({p.team_id for p in projects})
    audited = session.execute(
        select(AuditEvent.project_id, func.max(AuditEvent.created_at))
        .where(AuditEvent.team_id.in_(team_ids), AuditEvent.project_id.in_(ids))
        .group_by(AuditEvent.project_id)
    ).all()
    for audited_id, newest in audited:
        later(audited_id, newest)
    return [
        ProjectOut.model_validate(p).model_copy(
            update={
                "models_count": counts["models"].get(p.id, 0),
                "datasets_count": counts["datasets"].get(p.id, 0),
                "jobs_count": counts["jobs"].get(p.id, 0),
                "open_alerts_count": open_alerts.get(p.id, 0),
                "last_activity_at": latest[p.id],
            }
        )
        for p in projects
    ]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    operation_id="createProject",
    responses=error_responses(KneeboardError, NotFound, Forbidden, Conflict, InvalidRequest, UploadTooLarge),
)
def create_project(body: ProjectCreate, session: SessionDep, caller: CallerDep) -> ProjectOut:
    team_id = _owning_team(caller, body.team_id)
    require_role(session, caller, team_id, Role.member, "creating a project")
    project = Project(id=uuid.uuid4(), team_id=team_id, name=body.name, description=body.description)
    session.add(project)
    record(
        session,
        caller,
        team_id,
        AuditAction.project_created,
        "project",
        project.id,
        project.id,
        name=body.name,
    )
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise Conflict(
            f"a project named {body.name!r} already exists in this team; pick another name"
        ) from exc
    return ProjectOut.model_validate(project)


@router.get("", operation_id="listProjects")
def list_projects(
    session: SessionDep, caller: CallerDep, team_id: uuid.UUID | None = None
) -> list[ProjectOut]:
    """The projects of your teams (of one team with `team_id`), with their counts of models, datasets, jobs
    and open (unacknowledged) budget alerts and their last activity."""
    teams = [t for t in caller.roles if team_id is None or t == team_id]
    rows = session.execute(
        select(Project).where(Project.team_id.in_(teams)).order_by(Project.created_at)
    ).scalars()
    return with_counts(session, rows.all())


@router.get("/{project_id}", operation_id="getProject", responses=error_responses(NotFound, InvalidRequest))
def get_project(project_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> ProjectOut:
    return with_counts(session, [get_or_404(session, Project, project_id, caller)])[0]
