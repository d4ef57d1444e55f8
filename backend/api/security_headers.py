"""Security headers on every response: a Content-Security-Policy without external origins for the dashboard
and the API, nosniff, no framing by other sites, no Referer to other sites.

The dashboard is a bundle served from /assets (vite): no inline scripts, no external origins. Plotly draws
with inline style attributes, hence style-src 'unsafe-inline'; images are thumbnails from the API and data:
URIs (the favicon, Plotly's mode bar). The interactive API docs (/docs) load Swagger UI from
this server (backend/api/docs_pages.py) with an inline start-up script: only those pages allow inline scripts.
No policy names an external origin.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DASHBOARD_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
DOCS_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "frame-ancestors 'none'",
    )
)
DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect"})

COMMON_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


class SecurityHeadersMiddleware:
    """Adds the headers to every HTTP response (errors and static files included) unless a route set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = DOCS_POLICY if scope["path"] in DOCS_PATHS else DASHBOARD_POLICY
        added = ((b"content-security-policy", policy.encode()), *COMMON_HEADERS)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend((name, value) for name, value in added if name not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
