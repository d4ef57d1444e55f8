"""The current names of what audit events were about, resolved in one query per kind of target whatever the
page's length: the audit trail reads "model digits-cnn int8", not "model 70016e19" (issue 35). A target
deleted since has no name (None); the event's own detail still says what it was called then."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.db.models import Alert, AuditEvent, Budget, Dataset, Job, Model, Project, Team, User

# resource_type -> (table, name column): the targets named by one column of their own row.
_NAMED: dict[str, tuple[Any, Any]] = {
    "project": (Project, Project.name),
    "model": (Model, Model.name),
    "dataset": (Dataset, Dataset.name),
    "team": (Team, Team.name),
    "user": (User, User.username),
    "budget": (Budget, Budget.name),
    "alert": (Alert, Alert.budget_name),
}

# The model a job is about, in the order a job's params name it (fidelity: the compressed side).
_JOB_MODEL_KEYS = ("compressed_model_id", "model_id", "golden_model_id")


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def _ids(events: Iterable[AuditEvent], kind: str) -> set[uuid.UUID]:
    return {u for e in events if e.resource_type == kind and (u := _uuid(e.resource_id)) is not None}


def _job_model(params: dict[str, Any]) -> uuid.UUID | None:
    for key in _JOB_MODEL_KEYS:
        raw = params.get(key)
        if isinstance(raw, str) and (found := _uuid(raw)) is not None:
            return found
    return None


def _job_names(session: Session, ids: set[uuid.UUID]) -> dict[uuid.UUID, str]:
    """A job by its name, else its kind and the model it is about ("fidelity of digits-cnn int8"), else its
    kind alone."""
    if not ids:
        return {}
    jobs = session.execute(select(Job.id, Job.name, Job.kind, Job.params).where(Job.id.in_(ids))).all()
    models = {m for *_, params in jobs if (m := _job_model(params or {})) is not None}
    model_names = (
        dict(session.execute(select(Model.id, Model.name).where(Model.id.in_(models))).tuples().all())
        if models
        else {}
    )
    out: dict[uuid.UUID, str] = {}
    for job_id, name, kind, params in jobs:
        about = model_names.get(_job_model(params or {}))  # type: ignore[arg-type]
        out[job_id] = name or (f"{kind} of {about}" if about else kind)
    return out


def target_names(session: Session, events: Sequence[AuditEvent]) -> dict[int, str | None]:
    """Event id -> the current name of its target (None: deleted, or a kind of target without a name)."""
    found: dict[tuple[str, uuid.UUID], str] = {}
    for kind, (table, column) in _NAMED.items():
        ids = _ids(events, kind)
        if ids:
            rows = session.execute(select(table.id, column).where(table.id.in_(ids))).tuples().all()
            found.update({(kind, i): n for i, n in rows})
    found.update({("job", i): n for i, n in _job_names(session, _ids(events, "job")).items()})
    return {
        e.id: found.get((e.resource_type, u)) if (u := _uuid(e.resource_id)) is not None else None
        for e in events
    }
