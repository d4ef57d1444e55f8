"""Job rows for the lifecycle tests: a queued job in a fresh team and project."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from backend.db.models import Job, JobStatus, Project, Team


def new_project(session: Session) -> Project:
    """A project in a team of its own, both flushed."""
    team = Team(name=f"t-{uuid.uuid4().hex[:6]}")
    session.add(team)
    session.flush()
    project = Project(name=f"p-{uuid.uuid4().hex[:6]}", team_id=team.id)
    session.add(project)
    session.flush()
    return project


def queued_job(session: Session, kind: str = "fidelity") -> Job:
    """A committed queued job, never delivered (attempts 0)."""
    job = Job(
        project_id=new_project(session).id, kind=kind, params={}, status=JobStatus.queued.value, attempts=0
    )
    session.add(job)
    session.commit()
    return job
