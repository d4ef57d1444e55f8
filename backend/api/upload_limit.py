"""ASGI middleware that refuses request bodies over the upload limit before they fill the disk.

A declared Content-Length over the limit is answered 413 at once; a body without one is counted as it
streams and cut off at the limit.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from backend.api.bounded_body import run_with_bounded_body


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
        await run_with_bounded_body(self.app, scope, receive, send, self.limit, lambda: self._refuse(send))
