"""Accounts without HTTP: password hashes, token hashes, the first admin, the migration that gives existing
projects a team, and the `kneeboard user` / `kneeboard token` commands."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.config import Config
from argon2 import PasswordHasher
from sqlalchemy import create_engine, select, text
from sqlalchemy.orm import Session

from alembic import command
from backend import accounts
from backend.accounts import Role, TokenKind
from backend.db.migrations import upgrade_to_head
from backend.db.models import ApiToken, Project, Team, TeamMembership, User
from backend.db.session import session_factory
from backend.errors import Conflict, InvalidRequest
from tests.support.services import REPO_ROOT


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    url = f"sqlite:///{tmp_path / 'kb.db'}"
    upgrade_to_head(url)
    with session_factory(url)() as s:
        yield s


def test_passwords_are_argon2id_hashes_that_verify(session: Session) -> None:
    user = accounts.create_user(session, "Ada", "correct horse battery")
    session.commit()
    assert user.username == "ada" and user.password_hash.startswith("$argon2id$")
    assert "correct horse" not in user.password_hash
    assert PasswordHasher().verify(user.password_hash, "correct horse battery")
    assert accounts.check_password(session, "ADA ", "correct horse battery") is user
    assert accounts.check_password(session, "ada", "correct horse battery!") is None
    assert accounts.check_password(session, "nobody", "correct horse battery") is None


def test_a_hash_with_weaker_parameters_is_upgraded_at_sign_in(session: Session) -> None:
    weak = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash("an old password")
    session.add(User(username="old", password_hash=weak))
    session.commit()
    user = accounts.check_password(session, "old", "an old password")
    assert user is not None and user.password_hash != weak
    assert not PasswordHasher().check_needs_rehash(user.password_hash)


def test_token_only_accounts_cannot_sign_in_with_a_password(session: Session) -> None:
    accounts.create_user(session, "ci-bot", None)
    session.commit()
    assert accounts.check_password(session, "ci-bot", "") is None
    assert accounts.check_password(session, "ci-bot", "anything at all") is None


@pytest.mark.parametrize(
    ("username", "password", "error"),
    [
        ("a", "long enough password", "username"),
        ("../x", "long enough password", "username"),
        ("ok", "short", "10"),
    ],
)
def test_bad_usernames_and_short_passwords_are_refused(
    session: Session, username: str, password: str, error: str
) -> None:
    with pytest.raises(InvalidRequest, match=error):
        accounts.create_user(session, username, password)


def test_usernames_and_team_names_are_unique(session: Session) -> None:
    user = accounts.create_user(session, "ada", None)
    accounts.create_team(session, "vision", user)
    session.commit()
    with pytest.raises(Conflict):
        accounts.create_user(session, "Ada", None)
    with pytest.raises(Conflict):
        accounts.create_team(session, "vision", user)


def test_only_the_sha256_of_a_token_is_stored_and_it_authenticates_until_revoked(session: Session) -> None:
    user = accounts.create_user(session, "ada", None)
    team = accounts.create_team(session, "vision", user)
    token, secret = accounts.issue_token(session, user.id, TokenKind.api, "ci")
    session.commit()
    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest() and secret.startswith("kb_")
    assert len(secret) >= 40 and token.prefix == secret[:9]
    caller = accounts.authenticate(session, secret)
    assert caller is not None and caller.username == "ada" and caller.roles == {team.id: Role.admin}
    assert session.get_one(ApiToken, token.id).last_used_at is not None
    assert accounts.authenticate(session, secret + "x") is None
    assert accounts.authenticate(session, token.token_hash) is None  # the stored hash is no credential
    accounts.revoke_token(session, token)
    session.commit()
    assert accounts.authenticate(session, secret) is None


def test_the_first_admin_is_created_once(session: Session) -> None:
    first = accounts.ensure_first_admin(session, "admin", None, "default")
    assert first.password and len(first.password) >= 12
    admin = session.scalar(select(User).where(User.username == "admin"))
    assert admin is not None and admin.is_site_admin
    assert accounts.check_password(session, "admin", first.password) is not None
    again = accounts.ensure_first_admin(session, "admin", None, "default")
    assert again.password is None and session.scalar(select(text("count(*)")).select_from(User)) == 1


def test_projects_made_before_teams_move_to_the_default_team_of_the_first_admin(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "alembic"))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "0005")
    old_id = uuid.uuid4()
    with create_engine(url).begin() as conn:
        conn.execute(
            text(
                "INSERT INTO projects (id, name, description, created_at) VALUES (:id, 'old', '', '2026-01-01')"
            ),
            {"id": old_id.hex},
        )
    command.upgrade(config, "head")
    with session_factory(url)() as s:
        accounts.ensure_first_admin(s, "admin", "a long password", "default")
        project = s.get_one(Project, old_id)
        team = s.get_one(Team, project.team_id)
        admin = s.scalar(select(User).where(User.username == "admin"))
        assert team.name == "default" and admin is not None
        assert s.get_one(TeamMembership, (team.id, admin.id)).role == "admin"


def _cli(data_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    return subprocess.run(
        [sys.executable, "-m", "backend.cli", *args],
        env=env | {"KNEEBOARD_DATA_DIR": str(data_dir)},
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )


def test_user_and_token_commands(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = _cli(
        data, "user", "create", "ada", "--password-stdin", "--team", "vision", stdin="a long password\n"
    )
    assert made.returncode == 0 and "created user 'ada' in team 'vision'" in made.stdout, made.stderr
    viewer = _cli(data, "user", "create", "vic", "--team", "vision", "--role", "viewer")
    assert viewer.returncode == 0, viewer.stderr
    again = _cli(data, "user", "create", "ada")
    assert again.returncode != 0 and "already exists" in again.stderr
    token = _cli(data, "token", "create", "--user", "ada", "--name", "ci", "--expires-in-days", "2")
    assert token.returncode == 0, token.stderr
    secret = token.stdout.strip()
    assert secret.startswith("kb_") and "\n" not in secret  # only the token on stdout, for $(...)
    with session_factory(f"sqlite:///{(data / 'kneeboard.db').resolve()}")() as s:
        caller = accounts.authenticate(s, secret)
        assert caller is not None and caller.username == "ada"
        roles = {s.get_one(Team, t).name: r for t, r in caller.roles.items()}
        assert roles == {"vision": Role.admin}
        vic = s.scalar(select(User).where(User.username == "vic"))
        assert vic is not None and vic.password_hash == ""
        assert accounts.roles_of(s, vic.id) == {next(iter(caller.roles)): Role.viewer}
        assert accounts.check_password(s, "ada", "a long password") is not None
    unknown = _cli(data, "token", "create", "--user", "nobody")
    assert unknown.returncode != 0 and "no user named 'nobody'" in unknown.stderr
