"""The SQL behind the team and account routes: teams by id, a team's members with their accounts, its
admins, accounts by name. routes/teams.py checks who may do what and shapes the answers."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Role
from backend.db.models import Team, TeamMembership, User


def teams_by_name(session: Session, team_ids: Collection[uuid.UUID]) -> list[Team]:
    """The teams among `team_ids`, by name."""
    return list(session.scalars(select(Team).where(Team.id.in_(list(team_ids))).order_by(Team.name)))


def members(session: Session, team_id: uuid.UUID) -> list[tuple[TeamMembership, User]]:
    """Every membership of the team with its account (one query, not one per member)."""
    joined = select(TeamMembership, User).join(User, User.id == TeamMembership.user_id)
    return list(session.execute(joined.where(TeamMembership.team_id == team_id)).tuples())


def member(session: Session, team_id: uuid.UUID, user_id: uuid.UUID) -> tuple[TeamMembership, User] | None:
    row = session.get(TeamMembership, (team_id, user_id))
    return None if row is None else (row, session.get_one(User, user_id))


def admin_ids(session: Session, team_id: uuid.UUID) -> list[uuid.UUID]:
    return list(
        session.scalars(
            select(TeamMembership.user_id).where(
                TeamMembership.team_id == team_id, TeamMembership.role == Role.admin.name
            )
        )
    )


def user_named(session: Session, username: str) -> User | None:
    """The account of that (already normalized) username."""
    return session.scalar(select(User).where(User.username == username))


def all_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.username)))
