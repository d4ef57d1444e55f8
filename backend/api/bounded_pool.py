"""Small bounded thread pools for the API's expensive steps, so that a flood of them cannot starve other
requests: password hashing (Argon2id) and image decoding for dataset previews.

Argon2id (argon2-cffi's defaults) takes 64 MiB and about 0.24 s of one core per hash on the CI machine.
In Starlette's shared thread pool (40 threads) a 40-way flood of wrong passwords took the API to 1.1 GB RSS
and another user's GET from 17 ms to 3.7 s; 8 concurrent thumbnails of 9000x9000 PNGs took it to 5.1 GB.
Here at most `workers` jobs run at once (memory ≤ workers × one job), at most `queue` more wait, and
anything beyond is refused at once (503 with Retry-After) instead of queueing. The pool's threads run at a
lower CPU priority (nice 10; Linux nice values are per thread), so the scheduler gives the threads that
answer other requests the CPU first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from backend.errors import Busy

T = TypeVar("T")
POOL_NICE = 10


def _lower_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not allowed: plain priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), POOL_NICE)


class BoundedPool:
    def __init__(self, name: str, workers: int, queue: int, busy_message: str) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix=name, initializer=_lower_priority
        )
        self.capacity = workers + queue
        self.busy_message = busy_message
        self._admitted = 0
        self._lock = threading.Lock()

    @property
    def admitted(self) -> int:
        """Jobs running or waiting now."""
        return self._admitted

    def _release(self, _: Future[Any]) -> None:
        with self._lock:
            self._admitted -= 1

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """fn(*args) in one of the pool's threads; Busy at once when `capacity` jobs are already running or
        waiting. The slot is held until fn returns, even when the request that asked for it is gone."""
        with self._lock:
            if self._admitted >= self.capacity:
                raise Busy(self.busy_message)
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


def hashing_pool(workers: int, queue: int) -> BoundedPool:
    return BoundedPool(
        "password-hash",
        workers,
        queue,
        "too many sign-ins are being checked right now; try again in a second",
    )


def render_pool(workers: int) -> BoundedPool:
    # Waiting renders hold no thread and little memory (a request each); 64 per process bounds the wait.
    return BoundedPool(
        "preview-render", workers, 64, "too many previews are being drawn right now; try again in a second"
    )
