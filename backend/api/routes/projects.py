from __future__ import annotations

import uuid

from fastapi import APIRouter, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from backend.api.deps import SessionDep
from backend.api.errors import error_responses
from backend.api.routes.lookup import get_or_404
from backend.api.schemas import ProjectCreate, ProjectOut
from backend.db.models import Project
from backend.errors import Conflict, InvalidRequest, KneeboardError, NotFound, UploadTooLarge

router = APIRouter(prefix="/projects", tags=["projects"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    operation_id="createProject",
    responses=error_responses(KneeboardError, Conflict, InvalidRequest, UploadTooLarge),
)
def create_project(body: ProjectCreate, session: SessionDep) -> ProjectOut:
    project = Project(name=body.name, description=body.description)
    session.add(project)
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise Conflict(f"a project named {body.name!r} already exists; pick another name") from exc
    return ProjectOut.model_validate(project)


@router.get("", operation_id="listProjects")
def list_projects(session: SessionDep) -> list[ProjectOut]:
    rows = session.execute(select(Project).order_by(Project.created_at)).scalars()
    return [ProjectOut.model_validate(p) for p in rows]


@router.get("/{project_id}", operation_id="getProject", responses=error_responses(NotFound, InvalidRequest))
def get_project(project_id: uuid.UUID, session: SessionDep) -> ProjectOut:
    return ProjectOut.model_validate(get_or_404(session, Project, project_id))
