"""At most as many reads in progress per API process as it has database connections; the rest wait their
turn in the event loop (first come, first served), holding neither a thread nor a connection.

Without it, 50 clients on one process meant 40 threads (the thread pool) contending for a pool of 10
connections: the waiting threads hold the GIL's attention and the thread pool, and once more requests are
in flight than there are threads, a request that holds a connection can wait for a thread held by one that
waits for a connection, until the pool's 30 s timeout answers 500 (the issue's "database-pool timeouts").
Only GET and HEAD are gated: an upload streams its body for as long as the client takes, and must not hold
a slot for it. A slot is given back when the response starts, so a slow download does not hold one either.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

GATED_METHODS = frozenset({"GET", "HEAD"})


class RequestSlots:
    def __init__(self, app: ASGIApp, slots: int) -> None:
        self.app = app
        self.slots = slots
        self._semaphore: asyncio.Semaphore | None = None  # made in the server's event loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in GATED_METHODS:
            await self.app(scope, receive, send)
            return
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        semaphore = self._semaphore
        await semaphore.acquire()
        held = True

        async def send_and_release(message: Message) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                semaphore.release()
            await send(message)

        try:
            await self.app(scope, receive, send_and_release)
        finally:
            if held:
                semaphore.release()
