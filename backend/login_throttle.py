"""Sign-in throttling per account and per client address, with its state in the database so that every API
process (KNEEBOARD_API_PROCESSES) enforces the same delays. Plain functions over a session, unaware of HTTP.

An attempt is counted *before* its password is checked (a compare-and-set on the row's `failures`), so a
burst of 40 concurrent guesses gets `free` of them through and the rest refused without hashing; a sign-in
that succeeds then forgets its account's failures and gives its address back the attempt. After `free`
failures each further attempt waits `delay`, doubling up to `max_delay`; failures are forgotten `forget`
after the last one.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from backend.db.models import LoginThrottle

CAS_TRIES = 20


@dataclass(frozen=True)
class Policy:
    free: int
    delay_s: float
    max_delay_s: float
    forget_s: float

    def wait_after(self, failures: int) -> float | None:
        """Seconds an account or address waits after this many failures (None: no wait)."""
        if failures < self.free:
            return None
        return min(self.max_delay_s, self.delay_s * 2.0 ** min(failures - self.free, 60))


@dataclass(frozen=True)
class ThrottleKey:
    key: str
    policy: Policy


def account_key(username: str) -> str:
    return "user:" + username.strip().lower()[:190]


def address_key(address: str) -> str:
    return "addr:" + address[:190]


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)  # SQLite gives naive UTC datetimes back


def _wait_s(blocked_until: datetime | None, now: datetime) -> float | None:
    if blocked_until is None:
        return None
    left = (_aware(blocked_until) - now).total_seconds()
    return left if left > 0 else None


def _insert_if_missing(session: Session, key: str, now: datetime) -> None:
    """INSERT … ON CONFLICT DO NOTHING (Postgres and SQLite): another process may insert the same key."""
    dialect = session.get_bind().dialect.name
    values = {"key": key, "failures": 0, "last_failure_at": now}
    if dialect == "postgresql":
        session.execute(pg_insert(LoginThrottle).values(**values).on_conflict_do_nothing())
    elif dialect == "sqlite":
        session.execute(sqlite_insert(LoginThrottle).values(**values).on_conflict_do_nothing())
    else:
        raise RuntimeError(f"the sign-in throttle supports Postgres and SQLite, not {dialect}")


def _claim_one(session: Session, key: ThrottleKey, now: datetime) -> float | None:
    """Count one attempt against `key`; the seconds left to wait (and nothing counted) when it is blocked."""
    for _ in range(CAS_TRIES):
        row = session.execute(
            select(LoginThrottle.failures, LoginThrottle.last_failure_at, LoginThrottle.blocked_until).where(
                LoginThrottle.key == key.key
            )
        ).first()
        if row is None:
            _insert_if_missing(session, key.key, now)
            continue
        failures, last, blocked_until = row.tuple()
        wait = _wait_s(blocked_until, now)
        if wait is not None:
            return wait
        forgotten = (now - _aware(last)).total_seconds() > key.policy.forget_s
        counted = (0 if forgotten else failures) + 1
        wait_next = key.policy.wait_after(counted)
        claimed = session.execute(
            update(LoginThrottle)
            .where(LoginThrottle.key == key.key, LoginThrottle.failures == failures)
            .where(or_(LoginThrottle.blocked_until.is_(None), LoginThrottle.blocked_until <= now))
            .values(
                failures=counted,
                last_failure_at=now,
                blocked_until=None if wait_next is None else now + timedelta(seconds=wait_next),
            )
        )
        if claimed.rowcount == 1:  # type: ignore[attr-defined]
            return None
    raise RuntimeError(f"sign-in throttle row {key.key!r} kept changing")  # 20 concurrent writers


class KnownBlocks:
    """The blocks this API process has already read, so that a client hammering a blocked account or address
    costs no database round trip per attempt. Only a cache: a block never ends before its time (a success,
    which forgets an account, cannot happen while it is blocked), so a remembered block is still true."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self._until: dict[str, datetime] = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def wait_s(self, keys: Sequence[ThrottleKey], now: datetime) -> float | None:
        with self._lock:
            waits = [w for k in keys if (w := _wait_s(self._until.get(k.key), now)) is not None]
        return max(waits) if waits else None

    def remember(self, key: str, wait_s: float, now: datetime) -> None:
        with self._lock:
            if len(self._until) >= self.max_entries:
                self._until = {k: t for k, t in self._until.items() if t > now}
            if len(self._until) < self.max_entries:
                self._until[key] = now + timedelta(seconds=wait_s)


def claim_attempt(
    session: Session, keys: Sequence[ThrottleKey], now: datetime, known: KnownBlocks | None = None
) -> float | None:
    """Count one sign-in attempt against every key, committed; or, when any key is blocked, count none and
    return the seconds until the last of them is free again (remembered in `known`)."""
    known = known or KnownBlocks()
    remembered = known.wait_s(keys, now)
    if remembered is not None:
        return remembered
    for k in keys:
        blocked_until = session.scalar(select(LoginThrottle.blocked_until).where(LoginThrottle.key == k.key))
        if (wait := _wait_s(blocked_until, now)) is not None:
            known.remember(k.key, wait, now)
    waits = known.wait_s(keys, now)
    if waits is not None:
        session.rollback()  # hand the connection back: the caller now waits without holding it
        return waits
    claimed: list[ThrottleKey] = []
    for key in keys:
        wait = _claim_one(session, key, now)
        if wait is not None:  # blocked meanwhile by a concurrent attempt: give back what was counted
            known.remember(key.key, wait, now)
            session.commit()
            give_back(session, claimed)
            return wait
        claimed.append(key)
    session.commit()
    return None


def give_back(session: Session, keys: Sequence[ThrottleKey]) -> None:
    """Un-count an attempt (its password was right, or it was never checked). Committed."""
    for key in keys:
        session.execute(
            update(LoginThrottle)
            .where(LoginThrottle.key == key.key, LoginThrottle.failures > 0)
            .values(failures=LoginThrottle.failures - 1)
        )
    session.commit()


def forget(session: Session, key: str) -> None:
    """A successful sign-in: the account's failures and wait are gone. Not committed."""
    session.execute(delete(LoginThrottle).where(LoginThrottle.key == key))


def forget_old(session: Session, before: datetime, now: datetime) -> int:
    """Delete rows whose last failure is older than `before` and that block nothing now. Committed."""
    result = session.execute(
        delete(LoginThrottle).where(
            LoginThrottle.last_failure_at < before,
            or_(LoginThrottle.blocked_until.is_(None), LoginThrottle.blocked_until <= now),
        )
    )
    session.commit()
    return int(result.rowcount)  # type: ignore[attr-defined]


def retry_after_s(wait_s: float) -> int:
    return max(1, math.ceil(wait_s))
