"""Accounts for tests: a user in a team with a role, and an API token, written straight to the database
(the HTTP routes that do the same are tested in tests/backend/access/)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Role, TokenKind, create_team, create_user, issue_token
from backend.db.models import Team, TeamMembership
from backend.db.session import session_factory


@dataclass(frozen=True)
class TestAccount:
    __test__ = False  # not a pytest test class

    user_id: uuid.UUID
    username: str
    team_id: uuid.UUID
    team_name: str
    role: Role
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def add_account(
    session: Session,
    username: str | None = None,
    team: str | None = None,
    role: Role = Role.admin,
    password: str | None = None,
) -> TestAccount:
    """A user with an API token, in `team` (created when missing) with `role`. Committed."""
    username = username or f"user-{uuid.uuid4().hex[:8]}"
    team = team or f"team-{uuid.uuid4().hex[:8]}"
    user = create_user(session, username, password)
    session.flush()
    existing = session.scalar(select(Team).where(Team.name == team))
    if existing is None:
        team_row = create_team(session, team, user)
        if role is not Role.admin:
            membership = session.get_one(TeamMembership, (team_row.id, user.id))
            membership.role = role.name
    else:
        team_row = existing
        session.add(TeamMembership(team_id=team_row.id, user_id=user.id, role=role.name))
    _, secret = issue_token(session, user.id, TokenKind.api, "tests")
    session.commit()
    return TestAccount(user.id, user.username, team_row.id, team_row.name, role, secret)


def account_in(database_url: str, **kwargs: object) -> TestAccount:
    with session_factory(database_url)() as session:
        return add_account(session, **kwargs)  # type: ignore[arg-type]


def cli_token(data_dir: Path, name: str = "tests", user: str = "admin") -> str:
    """A personal API token made the way the README says (`kneeboard token create`), for an instance whose
    data lives in `data_dir`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    result = subprocess.run(
        [sys.executable, "-m", "backend.cli", "token", "create", "--user", user, "--name", name],
        env=env | {"KNEEBOARD_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()
