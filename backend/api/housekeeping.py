"""The API's own periodic clean-up: abandoned upload staging files and forgotten sign-in failures.

Runs once when the API starts (before it answers) and then every KNEEBOARD_STAGING_SWEEP_INTERVAL_S.
A staging file is abandoned when no write touched it for KNEEBOARD_UPLOAD_MAX_LIFE_S: an upload streams
into it (renewing its mtime) and is cut off at that age, so only an API killed mid-upload leaves one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

from starlette.concurrency import run_in_threadpool

from backend import login_throttle
from backend.accounts import now
from backend.db.session import session_factory
from backend.settings import Settings
from backend.storage import ArtifactStore, sweep_staging

log = logging.getLogger(__name__)


def housekeep_once(settings: Settings, store: ArtifactStore) -> None:
    swept = sweep_staging(store, settings.upload_max_life_s)
    if swept:
        log.info("deleted %d abandoned upload staging file(s) from %s", len(swept), store.staging_dir)
    with session_factory(settings.resolved_database_url)() as session:
        current = now()
        login_throttle.forget_old(session, current - timedelta(seconds=settings.login_forget_s), current)


async def _loop(settings: Settings, store: ArtifactStore) -> None:
    while True:
        await asyncio.sleep(settings.staging_sweep_interval_s)
        try:
            await run_in_threadpool(housekeep_once, settings, store)
        except Exception:  # a database blip: try again next round
            log.exception("housekeeping failed; retrying in %s s", settings.staging_sweep_interval_s)


@contextlib.asynccontextmanager
async def running_housekeeping(settings: Settings, store: ArtifactStore) -> AsyncIterator[None]:
    try:
        await run_in_threadpool(housekeep_once, settings, store)
    except Exception:
        log.exception("housekeeping at start failed; retrying in %s s", settings.staging_sweep_interval_s)
    task = asyncio.create_task(_loop(settings, store))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
