"""Signing in and out, the signed-in user, their password and their personal API tokens."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import NoReturn

from fastapi import APIRouter, Request, Response, status
from sqlalchemy import select, update
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from backend import login_throttle
from backend.accounts import (
    Caller,
    TokenKind,
    hash_password,
    issue_token,
    now,
    password_matches,
    password_needs_rehash,
    revoke_token,
    roles_of,
    user_named,
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
from backend.api.bounded_pool import BoundedPool
from backend.api.deps import SessionDep, SettingsDep
from backend.api.errors import error_responses
from backend.db.models import ApiToken, Team, User
from backend.errors import (
    Busy,
    InvalidRequest,
    KneeboardError,
    NotFound,
    TooManyAttempts,
    Unauthenticated,
)
from backend.login_throttle import (
    KnownBlocks,
    Policy,
    ThrottleKey,
    account_key,
    address_key,
    retry_after_s,
)
from backend.settings import Settings

NO_STORE = "no-store"
"""Cache-Control of the responses that carry a secret (a session cookie, a new token): no cache keeps them."""

public_router = APIRouter(prefix="/auth", tags=["auth"])
router = APIRouter(prefix="/auth", tags=["auth"])


def _me(session: Session, user_id: uuid.UUID, via_cookie: bool) -> MeOut:
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


def _throttle_keys(username: str, address: str, settings: Settings) -> tuple[ThrottleKey, ThrottleKey]:
    def policy(free: int) -> Policy:
        return Policy(free, settings.login_delay_s, settings.login_max_delay_s, settings.login_forget_s)

    return (
        ThrottleKey(address_key(address), policy(settings.login_free_attempts_per_address)),
        ThrottleKey(account_key(username), policy(settings.login_free_attempts)),
    )


def hashing_pool(request: Request) -> BoundedPool:
    pool: BoundedPool = request.app.state.hashing_pool
    return pool


async def _refuse_throttled(wait_s: float, settings: Settings) -> NoReturn:
    # An idle wait (no thread, no CPU): a client that ignores Retry-After gets about one answer a second per
    # connection, so a flood of refused guesses costs the API next to nothing.
    await asyncio.sleep(min(wait_s, settings.login_tarpit_s))
    retry = retry_after_s(wait_s)
    raise TooManyAttempts(
        f"too many failed sign-ins for this account or from this address; try again in {retry} s",
        retry_after_s=retry,
    )


@public_router.post(
    "/login",
    operation_id="login",
    responses=error_responses(KneeboardError, Unauthenticated, InvalidRequest, TooManyAttempts, Busy),
)
async def login(
    body: LoginIn, request: Request, response: Response, session: SessionDep, settings: SettingsDep
) -> MeOut:
    """Sign in to the dashboard: sets an HttpOnly, SameSite=Strict session cookie. After
    KNEEBOARD_LOGIN_FREE_ATTEMPTS failures of one account (or ..._PER_ADDRESS from one address) each
    further attempt waits, doubling: 429 with Retry-After."""
    keys = _throttle_keys(body.username, request.client.host if request.client else "unknown", settings)
    known: KnownBlocks = request.app.state.known_login_blocks
    wait = known.wait_s(keys, now())  # a repeated refused attempt costs no database round trip
    if wait is None:
        wait = await run_in_threadpool(login_throttle.claim_attempt, session, keys, now(), known)
    if wait is not None:
        await _refuse_throttled(wait, settings)
    pool = hashing_pool(request)
    user_id, password_hash = await run_in_threadpool(_password_hash_of, session, body.username)
    try:
        matches = await pool.run(password_matches, password_hash, body.password)
    except Busy:  # never checked: the attempt does not count
        await run_in_threadpool(login_throttle.give_back, session, keys)
        raise
    if not matches or user_id is None or password_hash is None:
        raise Unauthenticated("wrong username or password")
    rehashed = None
    if password_needs_rehash(password_hash):
        rehashed = await pool.run(hash_password, body.password)
    secret = await run_in_threadpool(_signed_in, session, settings, user_id, keys, rehashed)
    lifetime = timedelta(hours=settings.session_ttl_h)
    response.headers["Cache-Control"] = NO_STORE
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=int(lifetime.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=settings.cookie_secure,
        path="/",
    )
    return await run_in_threadpool(_me, session, user_id, True)


def _password_hash_of(session: Session, username: str) -> tuple[uuid.UUID | None, str | None]:
    """The user's id and password hash, read in a transaction that ends here: no database connection is
    held while the password waits for (and takes) a hashing thread."""
    user = user_named(session, username)
    found = (user.id, user.password_hash) if user else (None, None)
    session.rollback()
    return found


def _signed_in(
    session: Session,
    settings: Settings,
    user_id: uuid.UUID,
    keys: tuple[ThrottleKey, ThrottleKey],
    rehashed: str | None,
) -> str:
    """The right password: the account's failures are forgotten, the address gets its attempt back, and a
    new session token is issued. Committed; returns the token's secret."""
    address, account = keys
    login_throttle.forget(session, account.key)
    login_throttle.give_back(session, [address])
    if rehashed is not None:
        session.get_one(User, user_id).password_hash = rehashed
    _, secret = issue_token(
        session, user_id, TokenKind.session, "dashboard", timedelta(hours=settings.session_ttl_h)
    )
    session.commit()
    return secret


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT, operation_id="logout")
def logout(response: Response, session: SessionDep, caller: CallerDep) -> None:
    """End this dashboard session (its cookie stops working everywhere at once)."""
    if caller.via_cookie and caller.token_id is not None:
        token = session.get_one(ApiToken, caller.token_id)
        if token.kind == TokenKind.session.value:  # a cookie only ever carries a sign-in (authenticate)
            revoke_token(session, token)
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
    responses=error_responses(KneeboardError, Unauthenticated, InvalidRequest, Busy),
)
async def change_password(
    body: PasswordChange, request: Request, session: SessionDep, settings: SettingsDep, caller: CallerDep
) -> None:
    """Change your password; your other dashboard sessions end (API tokens keep working)."""
    pool = hashing_pool(request)
    _, password_hash = await run_in_threadpool(_password_hash_of, session, caller.username)
    if not await pool.run(password_matches, password_hash, body.current_password):
        raise Unauthenticated("the current password is wrong")
    new_hash = await pool.run(hash_password, body.new_password)
    await run_in_threadpool(_store_new_password, session, caller, new_hash)
    if caller.username == settings.first_admin:  # the generated first password is no longer valid
        settings.first_admin_password_file.unlink(missing_ok=True)


def _store_new_password(session: Session, caller: Caller, new_hash: str) -> None:
    session.get_one(User, caller.user_id).password_hash = new_hash
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
def create_token(
    body: TokenCreate, response: Response, session: SessionDep, caller: CallerDep
) -> TokenCreatedOut:
    """A personal API token for scripts and CI: send it as 'Authorization: Bearer <token>'. The secret is in
    this response only (which no cache may keep)."""
    response.headers["Cache-Control"] = NO_STORE
    lifetime = None if body.expires_in_days is None else timedelta(days=body.expires_in_days)
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
