"""Riding out a database blip: a write that fails because the connection broke (server restarted, failover,
network) is retried with backoff for a bounded time instead of failing the job or losing its message.

Only errors that say nothing about the data are retried (the connection went away, the server is starting
or shutting down, a pool timeout, a deadlock); an integrity error or a bad query is raised at once. After a
disconnect SQLAlchemy invalidates the pool, and `pool_pre_ping` (backend/db/session.py) checks every
connection on checkout, so the next attempt gets a fresh connection once the server is back.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

FIRST_DELAY_S = 0.2
MAX_DELAY_S = 5.0


def transient_db_error(error: BaseException) -> bool:
    """Whether `error` is the database going away (worth retrying), not something wrong with the data."""
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError)


def retry_budget_s() -> float:
    """How long a write is retried before its error is raised (KNEEBOARD_DB_RETRY_S)."""
    from backend.settings import get_settings

    return get_settings().db_retry_s


def _retrying(what: str, attempt: Callable[[], T], between: Callable[[], None], budget_s: float | None) -> T:
    budget = retry_budget_s() if budget_s is None else budget_s
    deadline = time.monotonic() + budget
    delay = FIRST_DELAY_S
    failures = 0
    while True:
        try:
            result = attempt()
        except Exception as error:
            if not transient_db_error(error) or time.monotonic() + delay > deadline:
                raise
            failures += 1
            log.warning(
                "%s: database unavailable (%s); retry %d in %.1f s",
                what,
                (str(error).splitlines() or [""])[0][:200],
                failures,
                delay,
            )
            between()
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY_S)
            continue
        if failures:
            log.warning("%s: database back after %d retries", what, failures)
        return result


def in_transaction(
    sessions: sessionmaker[Session], work: Callable[[Session], T], what: str, budget_s: float | None = None
) -> T:
    """Run `work` in a fresh session, again from the start in a new session while the database is
    unreachable (for at most the retry budget). `work` must be one transaction that can be replayed:
    everything it adds to the session is lost with a failed attempt and added again by the next."""

    def attempt() -> T:
        with sessions() as session:
            return work(session)

    return _retrying(what, attempt, lambda: None, budget_s)


def retried(fn: Callable[Concatenate[Session, P], T]) -> Callable[Concatenate[Session, P], T]:
    """For a compare-and-set transition that is one self-contained transaction on the given session (it
    adds nothing the caller put there): on a lost connection the session is rolled back and the
    transition run again. Not for transitions that commit rows the caller added (job_lifecycle.finish)."""

    @functools.wraps(fn)
    def wrapper(session: Session, *args: P.args, **kwargs: P.kwargs) -> T:
        def rollback() -> None:
            try:
                session.rollback()
            except Exception:  # the connection is gone; the next attempt checks out another
                log.debug("rollback after a lost connection failed", exc_info=True)

        return _retrying(fn.__name__, lambda: fn(session, *args, **kwargs), rollback, None)

    return wrapper
