"""Process-wide counters of metadata file reads, for tests and benchmarks that check what a
page or a plan reads (``manifest`` and ``manifest_list``). Thread-safe and cheap: one lock
and a dict increment per file read."""

from __future__ import annotations

import threading
from collections import Counter

__all__ = ["MANIFEST", "MANIFEST_LIST", "MANIFEST_CACHE", "count_read", "reads", "reset"]

MANIFEST = "manifest"
MANIFEST_LIST = "manifest_list"
#: A manifest's entries read from the persistent cache (floe.scan.manifest_store), not decoded.
MANIFEST_CACHE = "manifest_cache"

_lock = threading.Lock()
_reads: Counter[str] = Counter()


def count_read(kind: str) -> None:
    """Record that one file of ``kind`` was read and decoded."""
    with _lock:
        _reads[kind] += 1


def reads() -> dict[str, int]:
    """A copy of the counters: kind → files read since the last :func:`reset`."""
    with _lock:
        return dict(_reads)


def reset() -> None:
    with _lock:
        _reads.clear()
