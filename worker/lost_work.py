"""Rows to change, by job kind, when a job fails because its pool process was lost (time limit, crash).

Its own module so that worker.celery_app (which fails such jobs) and worker.tasks (which defines the tasks)
do not import each other.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from backend.contracts import JobKind
from backend.db.models import Model, ModelStatus

if TYPE_CHECKING:
    from worker.runtime import LostWorkHook


def model_invalid(session: Session, params: Mapping[str, Any], reason: str) -> None:
    """A failed inspection: the model is invalid, with the reason. Whether the inspection failed in its own
    process (InspectHandler.on_failure) or its pool process was lost (time limit, crash)."""
    row = session.get(Model, uuid.UUID(str(params["model_id"])))
    if row is not None:
        row.status = ModelStatus.invalid.value
        row.error = reason


LOST_WORK_HOOKS: dict[str, LostWorkHook] = {JobKind.inspect.value: model_invalid}
