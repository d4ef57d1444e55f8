"""Fetch-or-404 helpers, so every route reports unknown ids the same way."""

from __future__ import annotations

import uuid
from typing import TypeVar

from sqlalchemy.orm import Session

from backend.db.models import Base, Dataset, Job, Model, Project
from backend.errors import NotFound

Row = TypeVar("Row", bound=Base)

_LABELS: dict[type[Base], str] = {Project: "project", Model: "model", Dataset: "dataset", Job: "job"}


def get_or_404(session: Session, table: type[Row], row_id: uuid.UUID) -> Row:
    row = session.get(table, row_id)
    if row is None:
        label = _LABELS.get(table, table.__name__.lower())
        raise NotFound(f"no {label} with id {row_id}; list them with GET /api/v1/{label}s")
    return row


def get_in_project_or_404(
    session: Session, table: type[Row], row_id: uuid.UUID, project_id: uuid.UUID
) -> Row:
    row = get_or_404(session, table, row_id)
    if getattr(row, "project_id", None) != project_id:
        label = _LABELS.get(table, table.__name__.lower())
        raise NotFound(f"no {label} with id {row_id} in project {project_id}")
    return row
