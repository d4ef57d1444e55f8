"""The FastAPI application: REST API under /api/v1, OpenAPI at /docs, the dashboard at /."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from backend.alerts_loop import running_alerts
from backend.api.auth import authenticated_caller
from backend.api.body_limit import BodyLimitMiddleware
from backend.api.bounded_pool import hashing_pool, render_pool
from backend.api.docs_pages import install_docs
from backend.api.errors import error_responses, install_error_handlers
from backend.api.health import router as health_router
from backend.api.housekeeping import running_housekeeping
from backend.api.routes import (
    attention,
    auth,
    budgets,
    dataset_preview,
    datasets,
    diagnostics,
    fidelity,
    jobs,
    model_graph,
    models,
    projects,
    recovery,
    report_export,
    robustness,
    sample_inspector,
    sensitivity,
    sweep,
    sweep_search,
    task_proxy,
    task_samples,
    teams,
    trends,
)
from backend.api.security_headers import SecurityHeadersMiddleware
from backend.api.upload_limit import UploadLimitMiddleware
from backend.api.validation import refuse_unstorable_input
from backend.errors import InvalidRequest, Unauthenticated
from backend.login_throttle import KnownBlocks
from backend.reaper import running_reaper
from backend.settings import Settings, get_settings
from backend.storage import store_from_uri

FRONTEND_DIST = Path(__file__).resolve().parents[2] / "frontend" / "dist"
NOT_BUILT_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Kneeboard</title></head>
<body><h1>Kneeboard</h1><p>The dashboard is not built. <code>./scripts/install.sh</code> builds it (it needs Node 20
and npm), or by hand: <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>, then reload.</p>
<p>The REST API is running: see <a href="/docs">/docs</a>.</p></body></html>"""

PUBLIC_ROUTERS = (health_router, auth.public_router)
"""The only routes that answer without signing in."""

SIGNED_IN_ROUTERS = (
    auth.router,
    teams.router,
    projects.router,
    models.router,
    model_graph.router,
    datasets.router,
    dataset_preview.router,
    jobs.router,
    fidelity.router,
    diagnostics.router,
    task_proxy.router,
    task_samples.router,
    attention.router,
    robustness.router,
    sensitivity.router,
    sweep.router,
    sweep_search.router,
    recovery.router,
    report_export.router,
    budgets.router,
    sample_inspector.router,
    trends.router,
)


class DashboardAssets(StaticFiles):
    """The dashboard's bundles; when the dashboard is not built every path is a 404 (StaticFiles raises a
    RuntimeError, a 500, for a directory that does not exist)."""

    async def check_config(self) -> None:
        if self.directory is not None and Path(self.directory).is_dir():
            await super().check_config()


def create_app(
    settings: Settings | None = None, *, run_reaper: bool = True, frontend_dist: Path = FRONTEND_DIST
) -> FastAPI:
    settings = settings or get_settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The spec is built (seconds) before the first request rather than during it: BodyLimitMiddleware
        # reads the routes from it.
        await run_in_threadpool(app.openapi)
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(running_housekeeping(settings, app.state.store))
            if run_reaper:
                await stack.enter_async_context(running_reaper(settings))
                await stack.enter_async_context(running_alerts(settings))
            yield

    app = FastAPI(
        title="Kneeboard",
        version="0.1.0",
        description="How far does a compressed model diverge from its golden model, which layers are to "
        "blame, and which configuration is on the Pareto frontier.",
        lifespan=lifespan,
        docs_url=None,  # served by install_docs from this server's files, not from a CDN
        redoc_url=None,
    )
    install_docs(app)
    app.state.settings = settings
    app.state.frontend_dist = frontend_dist  # report_export reads the offline report page from it
    app.state.store = store_from_uri(
        settings.resolved_artifact_uri, settings.data_dir / "artifact-cache", settings.s3_endpoint_url
    )
    app.state.hashing_pool = hashing_pool(settings.password_hash_workers, settings.password_hash_queue)
    app.state.render_pool = render_pool(settings.preview_renders)
    app.state.known_login_blocks = KnownBlocks()
    install_error_handlers(app)
    app.add_middleware(UploadLimitMiddleware, limit_bytes=settings.max_upload_bytes)
    # Outside the upload limit: bodies other than uploads are bounded (and calls without any credential to
    # signed-in routes refused) before FastAPI reads and parses them.
    app.add_middleware(BodyLimitMiddleware, limit_bytes=settings.max_body_bytes, openapi=app.openapi)
    app.add_middleware(SecurityHeadersMiddleware)  # added last: outermost, so every response has them

    api = APIRouter(
        prefix="/api/v1",
        dependencies=[Depends(refuse_unstorable_input)],
        # refuse_unstorable_input can refuse any operation's input, so every operation documents a 422.
        responses=error_responses(InvalidRequest),
    )
    for router in PUBLIC_ROUTERS:
        api.include_router(router)
    # Everything else needs a signed-in caller: one dependency here, so that no route can forget it.
    signed_in = APIRouter(
        dependencies=[Depends(authenticated_caller)], responses=error_responses(Unauthenticated)
    )
    for router in SIGNED_IN_ROUTERS:
        signed_in.include_router(router)
    api.include_router(signed_in)
    app.include_router(api)

    # The built single-page app: index.html at /, its hashed bundles under /assets (vite's assetsDir).
    # Routes live in the URL fragment (#/jobs/12), so no other path needs to fall back to index.html.
    app.mount("/assets", DashboardAssets(directory=frontend_dist / "assets", check_dir=False), name="assets")

    @app.get("/", include_in_schema=False, response_model=None)
    def index() -> FileResponse | HTMLResponse:
        built = frontend_dist / "index.html"
        return FileResponse(built) if built.is_file() else HTMLResponse(NOT_BUILT_PAGE)

    return app
