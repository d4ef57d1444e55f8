"""ASGI middleware that makes a hostile request body cost nothing (issue 32).

FastAPI reads and parses a route's whole body before it runs any dependency, authentication included, so a
35 MB JSON array sent with no token used to take a minute and gigabytes of memory to refuse. Before the
route sees the request, this middleware

- refuses a request to a signed-in route that carries no credential at all (no Authorization header, no
  session cookie) with the 401 that authentication would give, without reading its body;
- refuses a body over KNEEBOARD_MAX_BODY_BYTES: a declared Content-Length at once, a body without one
  (chunked) as soon as the bytes counted so far pass the limit, so no more than the limit is ever read.

Uploads (routes whose request body is multipart/form-data) are left to their own, larger limit
(backend/api/upload_limit.py); so is a path no route serves (404 or 405, the body never read). A credential
that is present but wrong is still checked after the (bounded) body is read, by authenticated_caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Any

from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from backend.api.auth import HOW_TO_SIGN_IN, SESSION_COOKIE
from backend.api.bounded_body import run_with_bounded_body
from backend.api.errors import error_response
from backend.errors import KneeboardError, RequestTooLarge, Unauthenticated

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Operation:
    """What the middleware needs to know of one operation of the OpenAPI spec."""

    def __init__(self, path: str, operation: dict[str, Any]) -> None:
        self.pattern: re.Pattern[str] = compile_path(path)[0]
        self.needs_sign_in = bool(operation.get("security"))  # authenticated_caller's schemes
        content = (operation.get("requestBody") or {}).get("content") or {}
        self.takes_upload = "multipart/form-data" in content


def _operations(spec: dict[str, Any]) -> dict[str, list[_Operation]]:
    by_method: dict[str, list[_Operation]] = {}
    for path, operations in spec.get("paths", {}).items():
        for method, operation in operations.items():
            by_method.setdefault(method.upper(), []).append(_Operation(path, operation))
    return by_method


def _has_credential(headers: dict[bytes, bytes]) -> bool:
    if headers.get(b"authorization", b"").strip():
        return True
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # a malformed Cookie header carries no usable session either
        return False
    return bool(SESSION_COOKIE in cookie and cookie[SESSION_COOKIE].value)


class BodyLimitMiddleware:
    """`openapi` is the application's spec (FastAPI.openapi, built once on the first request): the routes
    are read from it, as an operation's security and request body say what it needs."""

    def __init__(self, app: ASGIApp, limit_bytes: int, openapi: Callable[[], dict[str, Any]]) -> None:
        self.app = app
        self.limit = limit_bytes
        self.openapi = openapi
        self._operations: dict[str, list[_Operation]] | None = None

    def _route_kind(self, scope: Scope) -> tuple[bool, bool] | None:
        """(needs sign-in, takes an upload) of the operations this request may reach; None when none may.
        Where templates overlap, the request is treated as an upload if any of them is one, and as needing
        a sign-in only if all of them do."""
        if self._operations is None:
            self._operations = _operations(self.openapi())
        path = scope["path"]
        matched = [op for op in self._operations.get(scope["method"], []) if op.pattern.match(path)]
        if not matched:
            return None
        return all(op.needs_sign_in for op in matched), any(op.takes_upload for op in matched)

    def _too_large(self) -> RequestTooLarge:
        return RequestTooLarge(
            f"the request body is larger than the limit of {self.limit} bytes for a JSON request "
            "(uploads have their own limit; raise KNEEBOARD_MAX_BODY_BYTES if such a body is expected)"
        )

    async def _refuse(self, error: KneeboardError, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(error)
        response.headers["Connection"] = "close"  # the unread rest of the body must not be taken as a request
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        kind = self._route_kind(scope)
        if kind is None or kind[1]:
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        if kind[0] and not _has_credential(headers):
            await self._refuse(Unauthenticated(HOW_TO_SIGN_IN), scope, receive, send)
            return
        await run_with_bounded_body(
            self.app,
            scope,
            receive,
            send,
            self.limit,
            lambda: self._refuse(self._too_large(), scope, receive, send),
        )
