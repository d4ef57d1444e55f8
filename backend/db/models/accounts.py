"""Accounts and access: users, teams and their members, API tokens and sessions, sign-in throttling, the
audit trail."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from backend.db.models.base import Base, TZDateTime, utcnow


class User(Base):
    """Someone who signs in. ``password_hash`` is an Argon2 hash, or "" for an account that can only use
    API tokens (e.g. created by `kneeboard token create` for CI)."""

    __tablename__ = "users"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255), default="")
    # Site admins create accounts; they see no team's data unless they are a member of the team.
    is_site_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class Team(Base):
    """Owns projects; its members' roles decide who may read and change them."""

    __tablename__ = "teams"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class TeamMembership(Base):
    __tablename__ = "team_memberships"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class ApiToken(Base):
    """A bearer credential: a personal API token (kind "api") or a dashboard sign-in (kind "session").

    Only the SHA-256 of the secret is stored (the secret is 256 random bits, so a slow hash adds nothing);
    every request looks the row up, so a revoked token stops working at once.
    """

    __tablename__ = "api_tokens"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200), default="")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    expires_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)


class LoginThrottle(Base):
    """Failed sign-in attempts of one account ("user:NAME") or one client address ("addr:IP"), shared by all
    API processes (backend/login_throttle.py). An attempt is counted before its password is checked, with a
    compare-and-set on `failures`, so that concurrent guesses cannot all slip through."""

    __tablename__ = "login_throttle"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_failure_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    blocked_until: Mapped[datetime | None] = mapped_column(TZDateTime, default=None)


class AuditEvent(Base):
    """Who uploaded, launched, cancelled, deleted or changed what, in which team. Written in the same
    transaction as the change it records."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_team_created", "team_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    actor_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor_name: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(64))
    resource_type: Mapped[str] = mapped_column(String(32))
    resource_id: Mapped[str] = mapped_column(String(64))
    project_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
