"""Everything the explorer keeps between requests: one cache object, one :func:`clear`.

Every key names an immutable file (a metadata file, a manifest list, a manifest) or a value
computed from one, so nothing goes stale: a commit writes a new metadata file, every request
asks the catalog for the current one (cheap for file-system and SQL catalogs), and the new
location is a new key. The old entries age out. Each part is a bounded
:class:`floe.cache.LRUCache`:

* ``metadata``: floe's cache of parsed metadata files (``floe.catalog.base.METADATA_CACHE``,
  which ``Catalog.load_table`` reads through), sized to ``FLOE_METADATA_CACHE_SIZE`` files;
* ``derived``: values computed from one file, keyed (file path, what): snapshot index,
  timeline, snapshot and history rows, manifest lists, manifest rows;
* ``scans``: explained scan plans and partition statistics, bounded by the files they hold
  (:func:`scan_weight`) as well as by their number;
* ``entries``: decoded manifests, every entry status, bounded by the number of entries;
* ``live``: the planner's manifest cache (live entries; :class:`floe.scan.ManifestCache`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from floe.cache import LRUCache
from floe.catalog.base import METADATA_CACHE
from floe.manifest import ManifestEntry
from floe.partition_stats import TablePartitionStats
from floe.scan.manifests import DEFAULT_CACHE, ManifestCache

__all__ = ["CACHE", "ExplorerCache", "clear"]

#: Decoded manifest entries kept, all statuses, counted across manifests (and as many live
#: entries for the planner).
ENTRY_CACHE_SIZE = 1_000_000
#: Values derived from one file, per parsed metadata file kept.
DERIVED_PER_METADATA = 4
#: Explained plans and partition statistics kept at most (each may hold every file of a table)…
SCAN_CACHE_SIZE = 16
#: …and what they hold together (:func:`scan_weight`): an explained plan keeps a decision for
#: every file its manifests list, ~2 KB each (a filter the partition summaries cannot narrow,
#: on a 1M-file table: ~2 GB), so sixteen such plans would hold tens of GB in a web process.
SCAN_CACHE_FILES = ENTRY_CACHE_SIZE


class ExplorerCache:
    """The explorer's caches (see the module docstring); sized from settings on use."""

    def __init__(self, metadata_size: int = 256) -> None:
        self.metadata = METADATA_CACHE
        self.metadata.resize(metadata_size)
        self.derived: LRUCache[tuple[Any, ...], Any] = LRUCache(
            metadata_size * DERIVED_PER_METADATA)
        self.scans: LRUCache[tuple[Any, ...], Any] = LRUCache(SCAN_CACHE_FILES,
                                                              weigher=scan_weight)
        self.entries: LRUCache[str, list[ManifestEntry]] = LRUCache(
            ENTRY_CACHE_SIZE, weigher=len)
        self.live = ManifestCache(ENTRY_CACHE_SIZE)

    def _parts(self) -> tuple[LRUCache[Any, Any], ...]:
        return (self.metadata, self.derived, self.scans, self.entries, self.live)

    def sized(self) -> ExplorerCache:
        """This cache, bounded by the current ``FLOE_METADATA_CACHE_SIZE``."""
        size = settings.FLOE_METADATA_CACHE_SIZE
        if self.metadata.max_weight != size:
            self.metadata.resize(size)
            self.derived.resize(size * DERIVED_PER_METADATA)
        return self

    def clear(self) -> None:
        for part in self._parts():
            part.clear()

    def __repr__(self) -> str:
        names = ("metadata", "derived", "scans", "entries", "live")
        return "ExplorerCache(" + ", ".join(
            f"{n}={len(p)}" for n, p in zip(names, self._parts(), strict=True)) + ")"


def scan_weight(value: Any) -> int:
    """What a value of the ``scans`` part weighs: the files a plan decided (a decision
    each), the partitions of partition statistics (an object each; a file is one int of
    its sizes there), and at least a SCAN_CACHE_SIZE-th of the part (so that it holds no
    more than SCAN_CACHE_SIZE values, however small)."""
    weight = 0
    funnel = getattr(value, "funnel", None)
    if funnel is not None:  # a ScanPlan
        weight = funnel.data_files_total + funnel.delete_files_total
    elif isinstance(value, TablePartitionStats):
        weight = len(value.partitions)
    return max(weight, SCAN_CACHE_FILES // SCAN_CACHE_SIZE)


CACHE = ExplorerCache()


def clear() -> None:
    """Forget everything cached in this process: the explorer's cache and floe's own
    manifest cache (:data:`floe.scan.manifests.DEFAULT_CACHE`, which maintenance reads
    through). Keys never go stale; tests and a worker after each task
    (explorer.celery) call it."""
    CACHE.clear()
    DEFAULT_CACHE.clear()
