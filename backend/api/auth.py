"""Who is calling: a personal API token (``Authorization: Bearer kb_…``) or the dashboard's session cookie.

Every /api/v1 route except health and sign-in depends on `authenticated_caller` (backend/api/app.py), so a
new route cannot forget it; what the caller may do with a resource is checked where the resource is looked
up (backend/api/routes/lookup.py).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer

from backend.accounts import Caller, authenticate
from backend.api.deps import SessionDep
from backend.errors import Forbidden, Unauthenticated

SESSION_COOKIE = "kneeboard_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# Declared for the OpenAPI spec (the "Authorize" button of /docs); the checks are ours, below.
bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="token",
    description="A personal API token: POST /api/v1/auth/tokens, the dashboard's account page, or "
    "`kneeboard token create --user NAME`.",
)
cookie_scheme = APIKeyCookie(
    name=SESSION_COOKIE,
    auto_error=False,
    scheme_name="session",
    description="Set by POST /api/v1/auth/login (the dashboard's sign-in).",
)

HOW_TO_SIGN_IN = (
    "sign in: send 'Authorization: Bearer <token>' with a personal API token (create one on the dashboard's "
    "account page, with POST /api/v1/auth/tokens, or with `kneeboard token create --user NAME`), or sign in "
    "on the dashboard"
)


def _same_origin(request: Request) -> bool:
    """A browser's unsafe request carrying our cookie must come from our own pages (CSRF). The cookie is
    SameSite=Strict already; this also covers browsers that ignore that."""
    if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not a browser's cross-origin request (browsers send Origin on every unsafe request)
    return urlsplit(origin).netloc == request.headers.get("host", "")


def authenticated_caller(
    request: Request,
    session: SessionDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    cookie: Annotated[str | None, Depends(cookie_scheme)],
) -> Caller:
    if request.headers.get("authorization"):
        if bearer is None:
            raise Unauthenticated("the Authorization header must be 'Bearer <token>'; " + HOW_TO_SIGN_IN)
        caller = authenticate(session, bearer.credentials.strip())
        if caller is None:
            raise Unauthenticated(
                "this token is unknown, expired or revoked; create a new one, or " + HOW_TO_SIGN_IN
            )
        return caller
    if cookie:
        caller = authenticate(session, cookie, via_cookie=True)
        if caller is None:
            raise Unauthenticated("your session has ended (signed out or expired); sign in again")
        if request.method not in SAFE_METHODS and not _same_origin(request):
            raise Forbidden("a request from another site cannot use your dashboard session")
        return caller
    raise Unauthenticated(HOW_TO_SIGN_IN)


CallerDep = Annotated[Caller, Depends(authenticated_caller)]
