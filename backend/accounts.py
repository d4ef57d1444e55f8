"""Accounts, teams and credentials: plain functions over a SQLAlchemy session, unaware of HTTP.

- Passwords are hashed with Argon2id (argon2-cffi's defaults, the RFC 9106 "low memory" profile); a hash made
  with older parameters is re-hashed at the next successful sign-in.
- API tokens and dashboard sessions are random secrets ("kb_" + 43 url-safe characters, 256 bits) of which
  only the SHA-256 is stored. The secret is shown once, when it is created. Every request looks the hash up,
  so revoking a token takes effect at once.
"""

from __future__ import annotations

import enum
import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from backend.db.models import ApiToken, Team, TeamMembership, User
from backend.errors import Conflict, InvalidRequest

TOKEN_PREFIX = "kb_"
USERNAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{1,63}$"
MIN_PASSWORD_LENGTH = 10
LAST_USED_RESOLUTION = timedelta(seconds=60)
"""A token's last_used_at is written at most this often (not on every request)."""

_hasher = PasswordHasher()
# Verifying against this when the user does not exist makes "no such user" as slow as "wrong password".
_DUMMY_HASH = _hasher.hash("not a real password")


class Role(enum.IntEnum):
    """A member's role in a team; a higher role can do everything a lower one can."""

    viewer = 1  # read
    member = 2  # upload, launch, cancel and delete their own
    admin = 3  # manage members, read the audit trail, delete anything

    @classmethod
    def parse(cls, name: str) -> Role:
        try:
            return cls[name]
        except KeyError:
            raise InvalidRequest(f"unknown role {name!r}; roles are viewer, member and admin") from None


class TokenKind(enum.StrEnum):
    api = "api"
    session = "session"


@dataclass(frozen=True)
class Caller:
    """Who is making a request, and their role in each of their teams."""

    user_id: uuid.UUID
    username: str
    is_site_admin: bool
    roles: dict[uuid.UUID, Role] = field(default_factory=dict)
    token_id: uuid.UUID | None = None
    via_cookie: bool = False

    def role_in(self, team_id: uuid.UUID) -> Role | None:
        return self.roles.get(team_id)


def now() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    """SQLite gives naive datetimes back; they were written in UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


# Passwords ---------------------------------------------------------------------------------------


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidRequest(f"password: must be at least {MIN_PASSWORD_LENGTH} characters")
    return _hasher.hash(password)


def check_password(session: Session, username: str, password: str) -> User | None:
    """The user, if the password is theirs; None otherwise (as slowly for an unknown name)."""
    user = user_named(session, username)
    if not password_matches(user.password_hash if user else None, password):
        return None
    assert user is not None
    if password_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
    return user


def user_named(session: Session, username: str) -> User | None:
    return session.scalar(select(User).where(User.username == username.strip().lower()))


def password_matches(password_hash: str | None, password: str) -> bool:
    """Whether the password matches the stored hash; with no hash (unknown user, token-only account) it is
    checked against a dummy hash, as slowly, and does not match. The expensive step: the API runs it in its
    bounded hashing pool (backend/api/bounded_pool.py)."""
    if not password_hash:
        _verify(_DUMMY_HASH, password)
        return False
    return _verify(password_hash, password)


def password_needs_rehash(password_hash: str) -> bool:
    return _hasher.check_needs_rehash(password_hash)


def _verify(hashed: str, password: str) -> bool:
    try:
        return _hasher.verify(hashed, password)
    except (VerificationError, InvalidHashError):
        return False


# Users and teams -------------------------------------------------------------------------------------


def normalized_username(username: str) -> str:
    name = username.strip().lower()
    if not re.fullmatch(USERNAME_PATTERN, name):
        raise InvalidRequest(
            "username: 2-64 characters of lower-case letters, digits, '.', '_' and '-', starting with a "
            "letter or digit"
        )
    return name


def create_user(session: Session, username: str, password: str | None, *, site_admin: bool = False) -> User:
    """A new account; without a password it can only use API tokens. Not committed."""
    name = normalized_username(username)
    if session.scalar(select(User.id).where(User.username == name)) is not None:
        raise Conflict(f"a user named {name!r} already exists")
    user = User(
        id=uuid.uuid4(),
        username=name,
        password_hash=hash_password(password) if password else "",
        is_site_admin=site_admin,
    )
    session.add(user)
    return user


def create_team(session: Session, name: str, admin: User | uuid.UUID) -> Team:
    """A new team with `admin` as its first admin. Not committed."""
    name = name.strip()
    if not name:
        raise InvalidRequest("name: must not be empty")
    if session.scalar(select(Team.id).where(Team.name == name)) is not None:
        raise Conflict(f"a team named {name!r} already exists; pick another name")
    team = Team(id=uuid.uuid4(), name=name)
    session.add(team)
    session.flush()
    user_id = admin if isinstance(admin, uuid.UUID) else admin.id
    session.add(TeamMembership(team_id=team.id, user_id=user_id, role=Role.admin.name))
    return team


def roles_of(session: Session, user_id: uuid.UUID) -> dict[uuid.UUID, Role]:
    rows = session.execute(
        select(TeamMembership.team_id, TeamMembership.role).where(TeamMembership.user_id == user_id)
    )
    return {team_id: Role[role] for team_id, role in rows}


def caller_for(
    session: Session, user: User, token: ApiToken | None = None, via_cookie: bool = False
) -> Caller:
    return Caller(
        user_id=user.id,
        username=user.username,
        is_site_admin=user.is_site_admin,
        roles=roles_of(session, user.id),
        token_id=token.id if token else None,
        via_cookie=via_cookie,
    )


# Tokens ----------------------------------------------------------------------------------------------


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def issue_token(
    session: Session,
    user_id: uuid.UUID,
    kind: TokenKind,
    name: str = "",
    lifetime: timedelta | None = None,
) -> tuple[ApiToken, str]:
    """A new token row and its secret (the only time the secret exists outside the caller). Not committed."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        id=uuid.uuid4(),
        user_id=user_id,
        kind=kind.value,
        name=name,
        token_hash=token_hash(secret),
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        created_at=now(),
        expires_at=now() + lifetime if lifetime else None,
    )
    session.add(token)
    return token, secret


def authenticate(session: Session, secret: str, *, via_cookie: bool = False) -> Caller | None:
    """The caller a token secret belongs to, or None when it is unknown, revoked or expired. Records when
    the token was last used (at most once per LAST_USED_RESOLUTION), committed.

    The two credentials are kept apart: the session cookie (``via_cookie``) takes only a dashboard sign-in,
    the Authorization header only a personal API token, so a leaked one of them works in its own place only
    (and signing out through a cookie can never revoke an API token)."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    kind = TokenKind.session if via_cookie else TokenKind.api
    row = session.execute(
        select(ApiToken, User)
        .join(User, User.id == ApiToken.user_id)
        .where(ApiToken.token_hash == token_hash(secret), ApiToken.kind == kind.value)
    ).first()
    if row is None:
        return None
    token, user = row.tuple()
    current = now()
    if token.revoked_at is not None or (token.expires_at is not None and _aware(token.expires_at) <= current):
        return None
    if token.last_used_at is None or current - _aware(token.last_used_at) >= LAST_USED_RESOLUTION:
        session.execute(update(ApiToken).where(ApiToken.id == token.id).values(last_used_at=current))
        session.commit()
    return caller_for(session, user, token, via_cookie)


def revoke_token(session: Session, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = now()


# First start -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FirstAdmin:
    username: str
    password: str | None  # None when an account already existed
    team_name: str


def ensure_first_admin(session: Session, username: str, password: str | None, team_name: str) -> FirstAdmin:
    """On an instance without accounts: a site admin with this password (a random one when None), admin of
    a team (the "default" team that older projects were moved into, if it exists). Committed."""
    if session.scalar(select(User.id).limit(1)) is not None:
        return FirstAdmin(username=username, password=None, team_name=team_name)
    password = password or secrets.token_urlsafe(12)
    user = create_user(session, username, password, site_admin=True)
    session.flush()
    team = session.scalar(select(Team).where(Team.name == team_name))
    if team is None:
        create_team(session, team_name, user)
    else:
        session.add(TeamMembership(team_id=team.id, user_id=user.id, role=Role.admin.name))
    session.commit()
    return FirstAdmin(username=user.username, password=password, team_name=team_name)
