"""Bodies of the account, token, team and audit endpoints."""

from __future__ import annotations

import uuid
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from backend.accounts import MIN_PASSWORD_LENGTH, Role
from backend.api.schemas import ORMModel, UTCDateTime

RoleName = Literal["viewer", "member", "admin"]
Username = Field(min_length=2, max_length=64, examples=["ada"])
Password = Field(min_length=MIN_PASSWORD_LENGTH, max_length=1024)


class LoginIn(BaseModel):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)


class TeamRoleOut(BaseModel):
    id: uuid.UUID
    name: str
    role: RoleName


class MeOut(BaseModel):
    id: uuid.UUID
    username: str
    is_site_admin: bool
    teams: list[TeamRoleOut]
    auth: Literal["token", "session"] = Field(description="How this request was signed in.")


class PasswordChange(BaseModel):
    current_password: str = Field(min_length=1, max_length=1024)
    new_password: str = Password


class TokenCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200, description="What the token is for, e.g. 'CI'.")
    expires_in_days: int | None = Field(
        default=None,
        ge=1,
        le=3650,
        strict=True,
        description="Days until it stops working; none: until revoked.",
    )


class TokenOut(ORMModel):
    id: uuid.UUID
    name: str
    prefix: str = Field(description="The first characters of the secret, to recognise it.")
    created_at: UTCDateTime
    last_used_at: UTCDateTime | None
    expires_at: UTCDateTime | None
    revoked_at: UTCDateTime | None


class TokenCreatedOut(TokenOut):
    token: str = Field(description="The secret. Shown only now: store it; Kneeboard keeps only its hash.")


class UserCreate(BaseModel):
    username: str = Username
    password: str | None = Field(
        default=None,
        min_length=MIN_PASSWORD_LENGTH,
        max_length=1024,
        description="Leave out for an account that only uses API tokens (e.g. for CI).",
    )
    is_site_admin: bool = Field(default=False, strict=True)


class UserOut(ORMModel):
    id: uuid.UUID
    username: str
    is_site_admin: bool
    created_at: UTCDateTime


class TeamCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)


class TeamOut(BaseModel):
    id: uuid.UUID
    name: str
    role: RoleName = Field(description="Your role in the team.")
    created_at: UTCDateTime


class MemberAdd(BaseModel):
    username: str = Username
    role: RoleName = "member"


class MemberUpdate(BaseModel):
    role: RoleName


class MemberOut(BaseModel):
    user_id: uuid.UUID
    username: str
    role: RoleName
    added_at: UTCDateTime


class AuditEventOut(ORMModel):
    id: int
    created_at: UTCDateTime
    actor_id: uuid.UUID | None
    actor_name: str
    action: str
    resource_type: str
    resource_id: str
    project_id: uuid.UUID | None
    project_name: str | None = Field(default=None, description="The project's name (null: no project).")
    target_name: str | None = Field(
        default=None,
        description="What the event was about, by its current name (a model's, a dataset's, a job's name or "
        "its kind and model, a project's, a team's, a user's username, a budget's, an alert's budget); null "
        "when it has been deleted since.",
    )
    detail: dict[str, Any]


def role_name(role: Role | str) -> RoleName:
    name = role.name if isinstance(role, Role) else Role[role].name
    return cast(RoleName, name)
