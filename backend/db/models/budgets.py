"""Fidelity budgets of a project and the alerts raised when a finished job breaks one (backend/budgets.py)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from backend.db.models.base import Base, TZDateTime, utcnow


class Budget(Base):
    """A named fidelity budget of a project: rules ({metric, bound: max|min, value}, the vocabulary of
    `kneeboard check --max/--min`) that every succeeded fidelity job whose compressed model is in scope must
    meet. Scope: every model ("all"), models with a tag ("tag"), or models whose name starts with a prefix
    ("family")."""

    __tablename__ = "budgets"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(16))
    scope_value: Mapped[str] = mapped_column(String(200), default="")
    rules: Mapped[list[Any]] = mapped_column(JSON)
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class Alert(Base):
    """A budget breached by a finished job: the rules it broke, and the state of its webhook delivery
    ("none": no webhook configured, "pending", "delivered", "failed")."""

    __tablename__ = "alerts"
    __table_args__ = (
        UniqueConstraint("budget_id", "job_id"),
        Index("ix_alerts_project_created", "project_id", "created_at"),
        Index("ix_alerts_delivery_due", "delivery_state", "next_attempt_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    project_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    # The budget's name is kept, so an alert still reads after its budget was deleted.
    budget_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("budgets.id", ondelete="SET NULL"), default=None
    )
    budget_name: Mapped[str] = mapped_column(String(200))
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    breaches: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    acknowledged_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    acknowledged_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    delivery_state: Mapped[str] = mapped_column(String(16), default="none")
    delivery_attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    delivered_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
