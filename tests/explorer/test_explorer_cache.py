"""The explorer's one cache: sized from settings, cleared at once."""

from __future__ import annotations

from typing import Any

from explorer.cache import CACHE, ExplorerCache


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
