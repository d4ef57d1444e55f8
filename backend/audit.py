"""The audit trail: who uploaded, launched, cancelled, deleted or changed what, per team.

`record` adds the event to the caller's session, so it is committed with the change it describes, or not at
all. Team admins read it with GET /api/v1/teams/{team_id}/audit.
"""

from __future__ import annotations

import enum
import uuid
from typing import Any

from sqlalchemy.orm import Session

from backend.accounts import Caller
from backend.db.models import AuditEvent


class AuditAction(enum.StrEnum):
    project_created = "project.created"
    model_uploaded = "model.uploaded"
    model_deleted = "model.deleted"
    model_updated = "model.updated"
    dataset_uploaded = "dataset.uploaded"
    dataset_deleted = "dataset.deleted"
    dataset_updated = "dataset.updated"
    job_launched = "job.launched"
    job_cancelled = "job.cancelled"
    job_deleted = "job.deleted"
    job_updated = "job.updated"
    team_created = "team.created"
    member_added = "member.added"
    member_role_changed = "member.role_changed"
    member_removed = "member.removed"
    budget_created = "budget.created"
    budget_updated = "budget.updated"
    budget_deleted = "budget.deleted"
    alert_acknowledged = "alert.acknowledged"


def record(
    session: Session,
    caller: Caller,
    team_id: uuid.UUID,
    action: AuditAction,
    resource_type: str,
    resource_id: uuid.UUID | str,
    project_id: uuid.UUID | None = None,
    **detail: Any,
) -> None:
    session.add(
        AuditEvent(
            team_id=team_id,
            actor_id=caller.user_id,
            actor_name=caller.username,
            action=action.value,
            resource_type=resource_type,
            resource_id=str(resource_id),
            project_id=project_id,
            detail=detail,
        )
    )
