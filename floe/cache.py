"""One bounded, thread-safe LRU cache for every cache floe and the explorer keep.

Everything floe caches is derived from immutable files (metadata, manifest lists, manifests,
delete files), so entries never go stale: a key names a file (or a value computed from
one) and only memory bounds the cache. The bound is a number of entries, or a total weight
when a ``weigher`` says how heavy each value is (decoded manifests weigh their entry count).

Loads run outside the lock, so one slow file never blocks readers of other keys; threads
missing a key that another thread is loading wait for that load and share its value (one
decoded 1M-file manifest set or explained plan in memory, not one per request), or load it
themselves when it failed (errors are not cached, nor shared).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRUCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Loading:
    """A load in progress: its thread, and once done, whether it gave a value."""

    __slots__ = ("done", "loaded", "owner", "value")

    def __init__(self, owner: int) -> None:
        self.owner = owner
        self.done = threading.Event()
        self.loaded = False
        self.value: object = None


class LRUCache(Generic[K, V]):
    """At most ``max_weight`` in total (each value weighs ``weigher(value)``, default 1, so
    the bound is an entry count), least recently used evicted first. A value weighs at least
    1, so the bound also bounds how many values are held (empty ones included).

    A value heavier than the whole bound is returned to the caller but not kept.
    ``on_evict(key, value)`` runs (under the lock) for every entry evicted or replaced, but
    not on :meth:`clear`. ``hits`` / ``misses`` count :meth:`get` and :meth:`get_or_load`
    lookups.
    """

    def __init__(
        self,
        max_weight: int,
        *,
        weigher: Callable[[V], int] | None = None,
        on_evict: Callable[[K, V], None] | None = None,
    ) -> None:
        if max_weight < 1:
            raise ValueError(f"a cache needs room for at least one entry, got {max_weight}")
        self._max_weight = max_weight
        self._weigher = weigher
        self._on_evict = on_evict
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self._loading: dict[K, _Loading] = {}
        self.hits = 0
        self.misses = 0

    # -- reads -----------------------------------------------------------------------------

    def get(self, key: K, default: V | None = None) -> V | None:
        """The cached value (now the most recently used) or ``default``."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return default
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def get_or_load(self, key: K, load: Callable[[], V]) -> V:
        """The cached value, or ``load()`` stored under ``key`` (errors are not cached). While
        one thread loads a key, others asking for it wait and get its value."""
        me = threading.get_ident()
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return item[0]
            self.misses += 1
            loading = self._loading.get(key)
            mine = loading is None or loading.owner == me  # (a load that asks for its key)
            if loading is None:
                loading = self._loading[key] = _Loading(me)
        if not mine:
            loading.done.wait()
            if loading.loaded:
                return loading.value  # type: ignore[return-value]
            return self.get_or_load(key, load)  # it failed: try for ourselves
        try:
            value = load()
            loading.value, loading.loaded = value, True
            self.put(key, value)
            return value
        finally:
            if loading.owner == me:
                with self._lock:
                    if self._loading.get(key) is loading:
                        del self._loading[key]
                loading.done.set()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[K]:
        """The keys, least recently used first (a copy)."""
        with self._lock:
            return list(self._items)

    @property
    def weight(self) -> int:
        """The total weight held (the entry count without a weigher)."""
        return self._weight

    @property
    def max_weight(self) -> int:
        return self._max_weight

    # -- writes ----------------------------------------------------------------------------

    def put(self, key: K, value: V) -> None:
        weight = max(1, self._weigher(value)) if self._weigher is not None else 1
        if weight > self._max_weight:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]
                if self._on_evict is not None:
                    self._on_evict(key, old[0])
            self._items[key] = (value, weight)
            self._weight += weight
            self._shrink()

    def resize(self, max_weight: int) -> None:
        """A new bound (settings may change at run time); evicts down to it at once."""
        if max_weight < 1:
            raise ValueError(f"a cache needs room for at least one entry, got {max_weight}")
        with self._lock:
            self._max_weight = max_weight
            self._shrink()

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._items.clear()
            self._weight = 0
            self.hits = 0
            self.misses = 0

    def _shrink(self) -> None:
        while self._weight > self._max_weight and self._items:
            key, (value, weight) = self._items.popitem(last=False)
            self._weight -= weight
            if self._on_evict is not None:
                self._on_evict(key, value)

    def __repr__(self) -> str:
        return (f"LRUCache({len(self._items)} entries, weight {self._weight}/{self._max_weight}, "
                f"{self.hits} hits, {self.misses} misses)")
