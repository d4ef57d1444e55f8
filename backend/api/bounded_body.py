"""Run an ASGI app with its request body bounded: the one counting rule of the body-size middlewares
(upload_limit.py for uploads, body_limit.py for every other body).

A declared Content-Length over the limit is refused at once, unread; a body without one (chunked) is counted
as it streams and the app is stopped as soon as more than the limit has arrived, so no more than the limit
is ever read. The refusal is sent only if the app has not started its own response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _OverLimit(BaseException):
    """Not an Exception on purpose: FastAPI turns any Exception raised while reading a body into a 400."""


async def run_with_bounded_body(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    limit: int,
    refuse: Callable[[], Awaitable[None]],
) -> None:
    """`app(scope, receive, send)` with a body of at most `limit` bytes; `refuse()` answers a larger one."""
    headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        await refuse()
        return
    received = 0
    started = False
    over = _OverLimit()  # this call's own: an inner bounded app's refusal is not ours to answer

    async def counting_receive() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise over
        return message

    async def tracking_send(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    try:
        await app(scope, counting_receive, tracking_send)
    except _OverLimit as exc:
        if exc is not over:
            raise
        if not started:
            await refuse()
