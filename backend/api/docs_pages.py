"""The interactive API docs (/docs, Swagger UI) served from this server, never from a CDN.

The script and style sheet come from the PyPI package fastapi-offline (maintained, MIT, depends only on
FastAPI), which ships the Swagger UI bundle FastAPI otherwise loads from cdn.jsdelivr.net; only its static
folder is used (not its FastAPI factory, so the app stays an ordinary FastAPI). Swagger UI starts without its
online validator badge (validator.swagger.io), so the page makes no request outside the server. There is no
/redoc: ReDoc's page carries a link to redocly.com, and /docs already shows the same spec.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_ASSETS_URL = "/docs-assets"
DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"


def install_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Add /docs and /docs/oauth2-redirect (the app must be made with docs_url=None, redoc_url=None)."""
    app.mount(DOCS_ASSETS_URL, StaticFiles(directory=DOCS_ASSETS), name="docs-assets")
    favicon = f"{DOCS_ASSETS_URL}/favicon.png"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=favicon,
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
