"""Signing in and out, the signed-in user, their password and their personal API tokens."""

from __future__ import annotations

import uuid
from datetime import timedelta

from fastapi import APIRouter, Response, status
from sqlalchemy import select, update

from backend.accounts import (
    TokenKind,
    check_password,
    hash_password,
    issue_token,
    now,
    revoke_token,
    roles_of,
)
from backend.api.account_schemas import (
    LoginIn,
    MeOut,
    PasswordChange,
    TeamRoleOut,
    TokenCreate,
    TokenCreatedOut,
    TokenOut,
    role_name,
)
from backend.api.auth import SESSION_COOKIE, CallerDep
from backend.api.deps import SessionDep, SettingsDep
from backend.api.errors import error_responses
from backend.db.models import ApiToken, Team, User
from backend.errors import InvalidRequest, KneeboardError, NotFound, Unauthenticated

public_router = APIRouter(prefix="/auth", tags=["auth"])
router = APIRouter(prefix="/auth", tags=["auth"])


def _me(session: SessionDep, user_id: uuid.UUID, via_cookie: bool) -> MeOut:
    user = session.get_one(User, user_id)
    roles = roles_of(session, user_id)
    teams = session.scalars(select(Team).where(Team.id.in_(list(roles))).order_by(Team.name))
    return MeOut(
        id=user.id,
        username=user.username,
        is_site_admin=user.is_site_admin,
        teams=[TeamRoleOut(id=t.id, name=t.name, role=role_name(roles[t.id])) for t in teams],
        auth="session" if via_cookie else "token",
    )


@public_router.post(
    "/login", operation_id="login", responses=error_responses(KneeboardError, Unauthenticated, InvalidRequest)
)
def login(body: LoginIn, response: Response, session: SessionDep, settings: SettingsDep) -> MeOut:
    """Sign in to the dashboard: sets an HttpOnly, SameSite=Strict session cookie."""
    user = check_password(session, body.username, body.password)
    if user is None:
        raise Unauthenticated("wrong username or password")
    lifetime = timedelta(hours=settings.session_ttl_h)
    _, secret = issue_token(session, user.id, TokenKind.session, "dashboard", lifetime)
    session.commit()
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=int(lifetime.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=settings.cookie_secure,
        path="/",
    )
    return _me(session, user.id, via_cookie=True)


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT, operation_id="logout")
def logout(response: Response, session: SessionDep, caller: CallerDep) -> None:
    """End this dashboard session (its cookie stops working everywhere at once)."""
    if caller.via_cookie and caller.token_id is not None:
        revoke_token(session, session.get_one(ApiToken, caller.token_id))
        session.commit()
    response.delete_cookie(SESSION_COOKIE, path="/")


@router.get("/me", operation_id="getMe")
def get_me(session: SessionDep, caller: CallerDep) -> MeOut:
    """Who you are signed in as, and your teams with your role in each."""
    return _me(session, caller.user_id, caller.via_cookie)


@router.post(
    "/password",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="changePassword",
    responses=error_responses(KneeboardError, Unauthenticated, InvalidRequest),
)
def change_password(
    body: PasswordChange, session: SessionDep, settings: SettingsDep, caller: CallerDep
) -> None:
    """Change your password; your other dashboard sessions end (API tokens keep working)."""
    if check_password(session, caller.username, body.current_password) is None:
        raise Unauthenticated("the current password is wrong")
    session.get_one(User, caller.user_id).password_hash = hash_password(body.new_password)
    session.execute(
        update(ApiToken)
        .where(
            ApiToken.user_id == caller.user_id,
            ApiToken.kind == TokenKind.session.value,
            ApiToken.revoked_at.is_(None),
            ApiToken.id != caller.token_id,
        )
        .values(revoked_at=now())
    )
    session.commit()
    if caller.username == settings.first_admin:  # the generated first password is no longer valid
        settings.first_admin_password_file.unlink(missing_ok=True)


@router.get("/tokens", operation_id="listTokens")
def list_tokens(session: SessionDep, caller: CallerDep) -> list[TokenOut]:
    """Your personal API tokens, newest first (revoked ones too, marked)."""
    rows = session.scalars(
        select(ApiToken)
        .where(ApiToken.user_id == caller.user_id, ApiToken.kind == TokenKind.api.value)
        .order_by(ApiToken.created_at.desc())
    )
    return [TokenOut.model_validate(t) for t in rows]


@router.post(
    "/tokens",
    status_code=status.HTTP_201_CREATED,
    operation_id="createToken",
    responses=error_responses(KneeboardError, InvalidRequest),
)
def create_token(body: TokenCreate, session: SessionDep, caller: CallerDep) -> TokenCreatedOut:
    """A personal API token for scripts and CI: send it as 'Authorization: Bearer <token>'. The secret is in
    this response only."""
    lifetime = timedelta(days=body.expires_in_days) if body.expires_in_days else None
    token, secret = issue_token(session, caller.user_id, TokenKind.api, body.name, lifetime)
    session.commit()
    return TokenCreatedOut.model_validate(TokenOut.model_validate(token).model_dump() | {"token": secret})


@router.delete(
    "/tokens/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="revokeToken",
    responses=error_responses(NotFound, InvalidRequest),
)
def revoke_api_token(token_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> None:
    """Revoke one of your tokens: it stops working at once."""
    token = session.get(ApiToken, token_id)
    if token is None or token.user_id != caller.user_id or token.kind != TokenKind.api.value:
        raise NotFound(f"you have no token with id {token_id}; list yours with GET /api/v1/auth/tokens")
    revoke_token(session, token)
    session.commit()
