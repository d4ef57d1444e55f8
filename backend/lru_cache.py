"""A small thread-safe LRU cache for the API's read paths (it serves requests from a thread pool).

Bounded by the total `weight` of its values (points on cached frontiers, sample indexes of cached orders)
rather than by their number. A key that several threads miss at once is computed once: the others wait for
it (under 50 clients, ten simultaneous misses of one frontier would otherwise do the same work ten times).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    def __init__(self, max_weight: int, weight: Callable[[V], int] = lambda _: 1) -> None:
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[K, threading.Lock] = {}
        self._total = 0
        self.max_weight = max_weight
        self._weight = weight

    def _hit(self, key: K) -> tuple[bool, V | None]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key][0]
        return False, None

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        found, value = self._hit(key)
        if found:
            return value  # type: ignore[return-value]
        with self._lock:
            key_lock = self._computing.setdefault(key, threading.Lock())
        with key_lock:  # one computation per key; other threads missing it wait here, then hit
            found, value = self._hit(key)
            if found:
                return value  # type: ignore[return-value]
            try:
                computed = compute()
                self._put(key, computed)
            finally:
                with self._lock:
                    self._computing.pop(key, None)
            return computed

    def _put(self, key: K, value: V) -> None:
        cost = max(1, self._weight(value))
        if cost > self.max_weight:
            return
        with self._lock:
            if key in self._items:
                self._total -= self._items[key][1]
            self._items[key] = (value, cost)
            self._items.move_to_end(key)
            self._total += cost
            while self._total > self.max_weight:
                _, (_, old) = self._items.popitem(last=False)
                self._total -= old

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0
