"""Reading the manifests of a plan: a bounded cache by path, threads or processes.

Manifests are immutable, so decoded entries are cached by path (an LRU bounded by the total
number of entries held). Decoding is pure Python (:mod:`floe.avro`), so threads do not add
CPU; a cold plan over many manifests is spread over a process pool instead, whose workers
decode and send the live entries back pickled. Whether that pays depends on the machine:
``benchmarks/plan.py`` measures it, and :data:`PROCESS_MIN_ENTRIES` is the threshold.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

from floe.manifest import ManifestEntry, ManifestEntryStatus, ManifestFile, read_manifest

__all__ = ["ManifestCache", "DEFAULT_CACHE", "read_live_entries", "PROCESS_MIN_ENTRIES",
           "shutdown_pool"]

#: Estimated entries (from the manifest list's counts) above which a cold read uses processes.
PROCESS_MIN_ENTRIES = 200_000
_DELETED = ManifestEntryStatus.DELETED


class ManifestCache:
    """Live entries of decoded manifests by path, at most ``max_entries`` entries in all."""

    def __init__(self, max_entries: int = 2_000_000) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, path: str) -> list[ManifestEntry] | None:
        with self._lock:
            entries = self._items.get(path)
            if entries is None:
                self.misses += 1
                return None
            self._items.move_to_end(path)
            self.hits += 1
            return entries

    def put(self, path: str, entries: list[ManifestEntry]) -> None:
        if len(entries) > self.max_entries:
            return
        with self._lock:
            old = self._items.pop(path, None)
            if old is not None:
                self._size -= len(old)
            self._items[path] = entries
            self._size += len(entries)
            while self._size > self.max_entries and self._items:
                _, dropped = self._items.popitem(last=False)
                self._size -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size(self) -> int:
        """Entries held."""
        return self._size


DEFAULT_CACHE = ManifestCache()

_pool: Executor | None = None
_pool_lock = threading.Lock()


def _get_pool(workers: int) -> Executor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=workers)
        return _pool


def shutdown_pool() -> None:
    """Stop the worker processes (they are started on the first large cold plan)."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)
            _pool = None


def _live(io: Any, manifest: ManifestFile) -> list[ManifestEntry]:
    return [e for e in read_manifest(io, manifest, discard_deleted=True) if e.status != _DELETED]


def _live_chunk(io: Any, manifests: Sequence[ManifestFile]) -> list[list[ManifestEntry]]:
    return [_live(io, m) for m in manifests]


def _estimate(m: ManifestFile) -> int:
    return (m.added_files_count or 0) + (m.existing_files_count or 0) + \
        (m.deleted_files_count or 0)


def read_live_entries(
    io: Any,
    manifests: Sequence[ManifestFile],
    cache: ManifestCache | None = DEFAULT_CACHE,
    processes: bool | None = None,
) -> list[list[ManifestEntry]]:
    """Live (added or existing) entries of each manifest, in order.

    ``processes``: None decides by size (cache misses holding more than
    :data:`PROCESS_MIN_ENTRIES` entries, on a machine with more than one core).
    """
    out: list[list[ManifestEntry] | None] = [None] * len(manifests)
    missing: list[int] = []
    for i, m in enumerate(manifests):
        got = cache.get(m.manifest_path) if cache is not None else None
        if got is None:
            missing.append(i)
        else:
            out[i] = got
    cpus = os.cpu_count() or 1
    if processes is None:
        processes = cpus > 1 and len(missing) > 1 and \
            sum(_estimate(manifests[i]) for i in missing) >= PROCESS_MIN_ENTRIES
    if processes and len(missing) > 1:
        workers = max(1, min(cpus, len(missing)))
        pool = _get_pool(workers)
        # few large chunks: one pickled reply per chunk, balanced by estimated entries
        chunks: list[list[int]] = [[] for _ in range(workers * 2)]
        loads = [0] * len(chunks)
        for i in sorted(missing, key=lambda i: -_estimate(manifests[i])):
            k = loads.index(min(loads))
            chunks[k].append(i)
            loads[k] += _estimate(manifests[i]) + 1
        futures = [(c, pool.submit(_live_chunk, io, [manifests[i] for i in c]))
                   for c in chunks if c]
        for c, fut in futures:
            for i, entries in zip(c, fut.result(), strict=True):
                out[i] = entries
    else:
        for i in missing:
            out[i] = _live(io, manifests[i])
    if cache is not None:
        for i in missing:
            got = out[i]
            assert got is not None
            cache.put(manifests[i].manifest_path, got)
    return [o if o is not None else [] for o in out]
