"""Changes by their owner (or a team admin): renaming, notes and tags of models, datasets and jobs (one rule
for the three PATCH routes), and deleting an uploaded model or dataset (one rule for the two DELETE routes)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from backend.accounts import Caller
from backend.api.routes.lookup import require_owner_or_admin, team_of
from backend.api.schemas import ResourceUpdate
from backend.audit import AuditAction, record
from backend.db.models import Dataset, Job, Model
from backend.services.artifacts import release
from backend.storage import ArtifactStore

_ACTIONS: dict[type[Model | Dataset | Job], tuple[str, AuditAction]] = {
    Model: ("model", AuditAction.model_updated),
    Dataset: ("dataset", AuditAction.dataset_updated),
    Job: ("job", AuditAction.job_updated),
}


def apply_update(session: Session, caller: Caller, row: Model | Dataset | Job, body: ResourceUpdate) -> None:
    """Change the fields sent, record what changed in the audit trail and commit. Members may change what
    they uploaded or launched; team admins anything of the team (as for deleting)."""
    label, action = _ACTIONS[type(row)]
    require_owner_or_admin(session, caller, row, f"changing a {label}")
    changes: dict[str, Any] = {}
    if body.name is not None and body.name != row.name:
        changes["name"] = {"from": row.name, "to": body.name}
        row.name = body.name
    if body.notes is not None and body.notes != row.notes:
        changes["notes"] = {"from_chars": len(row.notes), "to_chars": len(body.notes)}
        row.notes = body.notes
    if body.tags is not None:
        tags = list(dict.fromkeys(body.tags))  # duplicates dropped, order kept
        if tags != list(row.tags):
            changes["tags"] = {"from": list(row.tags), "to": tags}
            row.tags = tags
    if changes:
        record(session, caller, team_of(session, row), action, label, row.id, row.project_id, **changes)
    session.commit()
    session.refresh(row)


_DELETED: dict[type[Model | Dataset], tuple[str, AuditAction]] = {
    Model: ("model", AuditAction.model_deleted),
    Dataset: ("dataset", AuditAction.dataset_deleted),
}


def delete_upload(session: Session, store: ArtifactStore, caller: Caller, row: Model | Dataset) -> None:
    """Delete an uploaded model or dataset, record it in the audit trail, and release its stored file
    (kept while another row still points at the same bytes)."""
    label, action = _DELETED[type(row)]
    require_owner_or_admin(session, caller, row, f"deleting a {label}")
    sha = row.artifact_sha256
    record(session, caller, team_of(session, row), action, label, row.id, row.project_id, name=row.name)
    session.delete(row)
    session.commit()
    release(session, store, sha)
