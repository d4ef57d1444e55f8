"""ASGI middleware that refuses request bodies over the upload limit before they fill the disk.

A declared Content-Length over the limit is answered 413 at once; a body without one is counted as it
streams and cut off at the limit.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(BaseException):
    """Not an Exception on purpose: FastAPI turns any Exception raised while parsing a body into a 400."""


class UploadLimitMiddleware:
    def __init__(self, app: ASGIApp, limit_bytes: int, slack_bytes: int = 64 * 1024) -> None:
        self.app = app
        self.limit = limit_bytes + slack_bytes  # multipart framing around the file itself
        self.file_limit = limit_bytes

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": "upload_too_large",
                "detail": f"upload is larger than the limit of {self.file_limit} bytes "
                "(raise KNEEBOARD_MAX_UPLOAD_BYTES if this file is expected)",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)
