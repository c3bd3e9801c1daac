"""Reading manifest entries: the one entry point every reader of a manifest's entries goes
through (tests/floe/test_layers.py holds everyone else to it); the decoders behind it stay
where their fast paths are:

* :func:`read_entries`: every entry of one manifest, deleted ones too (history, partition
  statistics, a commit's rewrite, a manifest's page), decoded by :mod:`floe.manifest`;
* :func:`read_live_entries`: the live entries of many manifests (planning, compaction, row
  changes, the files listing), from this process's cache, the persistent cache on disk
  (:mod:`floe.scan.manifest_store`), worker processes, or decoded here;
* :class:`ManifestScanner` (:mod:`floe.scan.manifest_scan`): only the live paths, scanned
  from the bytes where the manifest-list counts allow (expiry, orphans, a purging drop).

Reading the manifests of a plan: a bounded cache by path, threads or processes.

Manifests are immutable, so decoded entries are cached by path (an LRU bounded by the total
number of entries held). The live entries are decoded by the C extension
:mod:`floe._native` (:mod:`floe.scan.native`) when it is built and accepts the manifest,
straight into the persistent cache's table; else in pure Python (:mod:`floe.avro`). Both hold
the GIL, so threads add no CPU; a cold plan over many manifests can be spread over a process pool
instead, whose workers decode and send the live entries back in a compact form while the
planner decodes its own share. Whether that pays depends on the machine:
``benchmarks/plan.py`` measures it; see :data:`PROCESS_MIN_CPUS`.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from floe import stats
from floe.cache import LRUCache
from floe.io import is_local
from floe.manifest import (
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    load_bytes,
    read_manifest,
)
from floe.scan import native
from floe.scan.manifest_scan import ManifestScanner
from floe.scan.manifest_store import StoredEntries, manifest_store, unwire, wire

if TYPE_CHECKING:
    from concurrent.futures import Executor

__all__ = ["ManifestCache", "ManifestScanner", "DEFAULT_CACHE", "read_entries",
           "read_live_entries", "PROCESS_MIN_ENTRIES", "shutdown_pool"]


def read_entries(io: Any, manifest: ManifestFile, *, discard_deleted: bool = False,
                 lazy_stats: bool = True) -> list[ManifestEntry]:
    """Every entry of one manifest with inherited snapshot ids and sequence numbers (DELETED
    ones too unless ``discard_deleted``; ``lazy_stats``: statistics maps decoded on first
    use), decoded from the Avro: nothing caches entries a plan does not use."""
    return read_manifest(io, manifest, discard_deleted=discard_deleted, lazy_stats=lazy_stats)

#: Estimated entries (from the manifest list's counts) above which a cold read uses processes.
PROCESS_MIN_ENTRIES = 50_000
#: Cores needed before processes are used by default. Measured on 2 cores (1M entries, 200
#: manifests): 24 s with one worker + the planner vs 28 s in one process on an idle
#: machine, but 36 s vs 29 s as soon as another process competes for a core; receiving an
#: entry costs the planner ~11 us against ~25 us to decode it, so the gain grows with cores.
#: Not by default when floe._native decodes (floe.scan.native): ~2 us an entry in this
#: process, less than receiving it (benchmarks/plan.py, 100k files: 0.27 s cold in one
#: process, 0.79 s with a worker).
PROCESS_MIN_CPUS = 4
_DELETED = ManifestEntryStatus.DELETED


class ManifestCache(LRUCache[str, list[ManifestEntry]]):
    """Live entries of decoded manifests by path, at most ``max_entries`` entries in all
    (a :class:`~floe.cache.LRUCache` weighed by entry count). Values derived from a manifest
    (its scan tasks per filter) are kept beside it and dropped when it is evicted."""

    def __init__(self, max_entries: int = 2_000_000) -> None:
        super().__init__(max_entries, weigher=len, on_evict=self._forget_derived)
        self._derived: dict[tuple[str, Any], Any] = {}

    @property
    def max_entries(self) -> int:
        return self.max_weight

    def _forget_derived(self, path: str, _entries: list[ManifestEntry]) -> None:
        # Called by LRUCache under its lock.
        for key in [k for k in self._derived if k[0] == path]:
            del self._derived[key]

    def derived(self, path: str, key: Any) -> Any:
        """A value computed from a cached manifest (e.g. its scan tasks), or None."""
        return self._derived.get((path, key))

    def put_derived(self, path: str, key: Any, value: Any) -> None:
        """Remember a value computed from a manifest while the manifest stays cached."""
        with self._lock:  # evictions drop derived values under the same lock
            if path in self._items:
                self._derived[(path, key)] = value

    def clear(self) -> None:
        super().clear()
        with self._lock:
            self._derived.clear()

    @property
    def size(self) -> int:
        """Entries held (an empty manifest counts as one)."""
        return self.weight


DEFAULT_CACHE = ManifestCache()

_pool: Executor | None = None  # multiprocessing is imported when the first pool starts
_pool_lock = threading.Lock()


def _get_pool(workers: int) -> Executor:
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ProcessPoolExecutor

            _pool = ProcessPoolExecutor(max_workers=workers)
        return _pool


def shutdown_pool() -> None:
    """Stop the worker processes (they are started on the first large cold plan)."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)
            _pool = None


def _stored(manifest: ManifestFile) -> list[ManifestEntry] | None:
    store = manifest_store()
    got = store.get(manifest) if store is not None else None
    # a StoredEntries: read like a list by every caller (floe.bulk.LazyList)
    return cast("list[ManifestEntry] | None", got)


def _decode(io: Any, manifest: ManifestFile) -> list[ManifestEntry]:
    """Decode the live entries, and keep them in the persistent cache: by the C decoder
    (floe.scan.native) when it is built, on and accepts the manifest, else in Python."""
    store = manifest_store()
    if native.available():
        data = load_bytes(io, manifest.manifest_path)
        table = native.decode_live_table(data, manifest)
        if table is not None:
            stats.count_read(stats.MANIFEST)
            if store is not None:
                store.put_table(manifest, table)
            return cast("list[ManifestEntry]", StoredEntries.of(table))
        io = _Fetched(data)  # declined: the same bytes decoded in Python
    live = [e for e in read_manifest(io, manifest, discard_deleted=True) if e.status != _DELETED]
    if store is not None:
        store.put(manifest, live)
    return live


def _live(io: Any, manifest: ManifestFile) -> list[ManifestEntry]:
    """The live entries of one manifest: from the persistent cache when it has them
    (floe.scan.manifest_store), else decoded, and then stored there."""
    got = _stored(manifest)
    return got if got is not None else _decode(io, manifest)


class _Fetched:
    """The bytes of one file, fetched already, as the io its decoder reads them from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, location: str) -> bytes:
        return self.data


def _read_remote(io: Any, manifests: Sequence[ManifestFile], missing: list[int],
                 out: list[list[ManifestEntry] | None]) -> None:
    """Manifests on an object store: the ones the persistent cache lacks are fetched
    :data:`floe.io.PARALLEL_READS` at a time while this thread decodes them in order."""
    need = []
    for i in missing:
        out[i] = _stored(manifests[i])
        if out[i] is None:
            need.append(i)
    fetched = io.read_many(manifests[i].manifest_path for i in need)
    for i, data in zip(need, fetched, strict=True):
        out[i] = _decode(_Fetched(data), manifests[i])


def _live_chunk(io: Any, manifests: Sequence[ManifestFile]) -> list[list[tuple[Any, ...]]]:
    gc.disable()  # a worker process: see floe.bulk.gc_paused
    try:
        return [[wire(e) for e in _live(io, m)] for m in manifests]
    finally:
        gc.enable()


def _estimate(m: ManifestFile) -> int:
    return (m.added_files_count or 0) + (m.existing_files_count or 0) + \
        (m.deleted_files_count or 0)


def _may_fork() -> bool:
    """Daemonic processes (a Celery prefork worker) cannot have children;
    ``FLOE_PLAN_PROCESSES=0`` turns worker processes off."""
    if os.environ.get("FLOE_PLAN_PROCESSES", "").strip() == "0":
        return False
    # a process multiprocessing started has the module loaded (forked or spawned); one
    # without it is no daemonic child, and importing it only to ask costs every plan
    mp = sys.modules.get("multiprocessing")
    return mp is None or not mp.current_process().daemon


def _read_in_processes(io: Any, manifests: Sequence[ManifestFile], missing: list[int],
                       out: list[list[ManifestEntry] | None], cpus: int) -> None:
    """Workers decode part of the manifests while this process decodes its own share.

    Receiving a decoded entry (unpickle + rebuild, ~11 us) costs this process less than
    decoding it (~25 us), so it keeps about 1/(workers+1) of the entries for itself and
    spends the rest of its time taking in the workers' results.
    """
    workers = max(1, cpus - 1)
    pool = _get_pool(workers)
    order = sorted(missing, key=lambda i: -_estimate(manifests[i]))
    total = sum(_estimate(manifests[i]) for i in order) or 1
    own: list[int] = []
    chunks: list[list[int]] = [[] for _ in range(workers * 4)]
    loads = [0] * len(chunks)
    own_load = 0
    for i in order:
        size = _estimate(manifests[i]) + 1
        if own_load + size <= total / (workers + 1):
            own.append(i)
            own_load += size
            continue
        k = loads.index(min(loads))
        chunks[k].append(i)
        loads[k] += size
    from concurrent.futures import as_completed

    futures = {pool.submit(_live_chunk, io, [manifests[i] for i in c]): c for c in chunks if c}
    for i in own:
        out[i] = _live(io, manifests[i])
    for fut in as_completed(futures):
        for i, rows in zip(futures[fut], fut.result(), strict=True):
            out[i] = unwire(rows)


def read_live_entries(
    io: Any,
    manifests: Sequence[ManifestFile],
    cache: ManifestCache | None = DEFAULT_CACHE,
    processes: bool | None = None,
) -> list[list[ManifestEntry]]:
    """Live (added or existing) entries of each manifest, in order.

    ``processes``: None decides by size (cache misses holding more than
    :data:`PROCESS_MIN_ENTRIES` entries, on a machine with :data:`PROCESS_MIN_CPUS` cores).
    """
    out: list[list[ManifestEntry] | None] = [None] * len(manifests)
    missing: list[int] = []
    for i, m in enumerate(manifests):
        io.guard(m.manifest_path)  # before any cache (this process's, the one on disk)
        got = cache.get(m.manifest_path) if cache is not None else None
        if got is None:
            missing.append(i)
        else:
            out[i] = got
    cpus = os.cpu_count() or 1
    if processes is None:
        processes = cpus >= PROCESS_MIN_CPUS and len(missing) > 1 and _may_fork() and \
            not native.available() and \
            sum(_estimate(manifests[i]) for i in missing) >= PROCESS_MIN_ENTRIES
    if processes and len(missing) > 1:
        _read_in_processes(io, manifests, missing, out, cpus)
    elif len(missing) > 1 and not all(is_local(manifests[i].manifest_path) for i in missing):
        _read_remote(io, manifests, missing, out)
    else:
        for i in missing:
            out[i] = _live(io, manifests[i])
    if cache is not None:
        for i in missing:
            got = out[i]
            assert got is not None
            cache.put(manifests[i].manifest_path, got)
    return [o if o is not None else [] for o in out]
