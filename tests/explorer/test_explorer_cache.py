"""The explorer's one cache: sized from settings, cleared at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from explorer import cache as explorer_cache
from explorer.cache import CACHE, ExplorerCache
from floe.catalog.filesystem import FileSystemCatalog
from floe.partition_stats import partition_stats
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.types import LONG, NestedField


def test_the_explorer_cache_is_sized_from_settings_and_cleared_at_once(settings: Any) -> None:
    cache = ExplorerCache(metadata_size=8)
    settings.FLOE_METADATA_CACHE_SIZE = 3
    assert cache.sized() is cache
    assert cache.metadata.max_weight == 3
    assert cache.derived.max_weight == 12
    for part in (cache.metadata, cache.derived, cache.scans):
        part.put(("k",), 1)  # type: ignore[arg-type]
    cache.entries.put("m", [])  # weighs 1: empty values are bounded too
    assert cache.entries.weight == 1
    cache.clear()
    assert all(len(p) == 0 for p in (cache.metadata, cache.derived, cache.scans, cache.entries))
    assert "ExplorerCache(" in repr(CACHE)


def test_cached_plans_are_bounded_by_the_files_they_decided(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    """An explained plan keeps a decision per file (~2 GB for 1M files): the scans part is
    bounded by the files its plans decided, not only by their number."""
    catalog = FileSystemCatalog("local", str(tmp_path))
    catalog.create_namespace(("ns",))
    schema = Schema(NestedField(1, "id", LONG, required=True))
    table = catalog.create_table("ns.t", schema, parse_partition_by("bucket(8, id)", schema))
    for first in (0, 100):  # 8 files each
        table.append(pa.table({"id": pa.array(range(first, first + 100), pa.int64())}))
    table = catalog.load_table("ns.t")
    plan = plan_files(table.io, table.metadata, explain=True, cache=None)
    stats = partition_stats(table.io, table.metadata, cache=None)

    monkeypatch.setattr(explorer_cache, "SCAN_CACHE_FILES", 24, raising=False)
    monkeypatch.setattr(explorer_cache, "SCAN_CACHE_SIZE", 6)
    cache = ExplorerCache()
    cache.scans.put(("plan", 1), plan)
    cache.scans.put(("plan", 2), plan)  # 32 files decided: more than 24, the first plan goes
    assert cache.scans.keys() == [("plan", 2)]
    cache.scans.put(("stats",), stats)  # its 8 partitions fit beside the plan
    assert cache.scans.keys() == [("plan", 2), ("stats",)]
    for key in "abcdef":  # a small value weighs a sixth of the part: six at most
        cache.scans.put((key,), 1)
    assert cache.scans.keys() == [(k,) for k in "abcdef"]
    assert (explorer_cache.scan_weight(plan), explorer_cache.scan_weight(stats)) == (16, 8)
