"""A small bounded pool for password hashing, so that a sign-in flood cannot starve other requests.

Argon2id (argon2-cffi's defaults) takes 64 MiB and about 0.24 s of one core per hash on the CI machine.
In Starlette's shared thread pool (40 threads) a 40-way flood of wrong passwords took the API to 1.1 GB RSS
and another user's GET from 17 ms to 3.7 s. Here at most `workers` hashes run at once (memory ≤ workers ×
64 MiB), at most `queue` more wait, and anything beyond is refused at once (503, Retry-After) instead of
queueing. The hashing threads run at a lower CPU priority (nice 10; Linux nice values are per thread), so
the scheduler gives the threads that answer other requests the CPU first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from backend.errors import Busy

log = logging.getLogger(__name__)
T = TypeVar("T")
HASHING_NICE = 10


def _lower_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not allowed: plain priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HASHING_NICE)


class HashingPool:
    def __init__(self, workers: int, queue: int) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="password-hash", initializer=_lower_priority
        )
        self.capacity = workers + queue
        self._admitted = 0
        self._lock = threading.Lock()

    @property
    def admitted(self) -> int:
        """Hashes running or waiting now."""
        return self._admitted

    def _release(self, _: Future[Any]) -> None:
        with self._lock:
            self._admitted -= 1

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """fn(*args) in a hashing thread; Busy at once when `capacity` hashes are already running or waiting.
        The slot is held until fn returns, even when the request that asked for it is gone."""
        with self._lock:
            if self._admitted >= self.capacity:
                raise Busy("too many sign-ins are being checked right now; try again in a second")
            self._admitted += 1
        try:
            future = self._executor.submit(fn, *args)
        except BaseException:
            self._release(Future())
            raise
        future.add_done_callback(self._release)
        return await asyncio.wrap_future(future)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
