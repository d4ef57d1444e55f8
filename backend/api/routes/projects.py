from __future__ import annotations

import uuid

from fastapi import APIRouter, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from backend.accounts import Caller, Role
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import get_or_404, require_role
from backend.api.schemas import ProjectCreate, ProjectOut
from backend.audit import AuditAction, record
from backend.db.models import Project
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
    """The projects of your teams (of one team with `team_id`)."""
    teams = [t for t in caller.roles if team_id is None or t == team_id]
    rows = session.execute(
        select(Project).where(Project.team_id.in_(teams)).order_by(Project.created_at)
    ).scalars()
    return [ProjectOut.model_validate(p) for p in rows]


@router.get("/{project_id}", operation_id="getProject", responses=error_responses(NotFound, InvalidRequest))
def get_project(project_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> ProjectOut:
    return ProjectOut.model_validate(get_or_404(session, Project, project_id, caller))
