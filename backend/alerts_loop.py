"""The API's background loop for fidelity budgets: every KNEEBOARD_BUDGET_CHECK_INTERVAL_S it checks newly
finished jobs against their budgets (backend/budgets.py) and sends due alert webhooks (backend/webhook.py).

It runs in every API process; the compare-and-set claims make concurrent rounds harmless. A round that fails
(the database is down, a bug) is logged and the next one runs as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.concurrency import run_in_threadpool

from backend import budgets, webhook
from backend.db.session import session_factory
from backend.settings import Settings

log = logging.getLogger(__name__)


def alerts_round(settings: Settings, post: webhook.Post = webhook.http_post) -> budgets.CheckRound:
    with session_factory(settings.resolved_database_url)() as session:
        checked = budgets.check_finished_jobs(session, webhook=bool(settings.alert_webhook_url))
        if checked.alert_ids:
            log.warning("fidelity budgets breached: alerts %s", checked.alert_ids)
        for delivery in webhook.deliver_due(session, settings, post):
            if delivery.error:
                log.warning(
                    "alert %s webhook attempt %s: %s (%s)",
                    delivery.alert_id,
                    delivery.attempt,
                    delivery.error,
                    delivery.state,
                )
    return checked


async def _loop(settings: Settings) -> None:
    while True:
        await asyncio.sleep(settings.budget_check_interval_s)
        try:
            await run_in_threadpool(alerts_round, settings)
        except Exception as exc:  # keep going: the next round retries whatever this one did not finish
            log.error("budget check round failed: %s: %s", type(exc).__name__, str(exc)[:300])
            log.debug("budget check round failed", exc_info=True)


@contextlib.asynccontextmanager
async def running_alerts(settings: Settings) -> AsyncIterator[None]:
    task = asyncio.create_task(_loop(settings))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
