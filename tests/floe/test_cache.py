"""The one bounded LRU cache class (floe.cache.LRUCache) and the caches built on it."""

from __future__ import annotations

import threading
import time

import pytest

from floe.cache import LRUCache
from floe.scan.readers import DeleteCache
from floe.scan.manifests import ManifestCache


def test_count_bound_evicts_the_least_recently_used() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"] and "b" not in cache
    assert (cache.hits, cache.misses) == (1, 0)
    assert cache.get("b") is None and cache.misses == 1


def test_weight_bound_and_a_value_heavier_than_the_bound() -> None:
    evicted: list[str] = []
    cache: LRUCache[str, list[int]] = LRUCache(5, weigher=len,
                                               on_evict=lambda k, v: evicted.append(k))
    cache.put("three", [1, 2, 3])
    cache.put("two", [1, 2])
    assert cache.weight == 5
    cache.put("one", [1])
    assert evicted == ["three"] and cache.weight == 3
    cache.put("six", [0] * 6)  # never fits: returned to the caller, not kept
    assert "six" not in cache and cache.weight == 3
    cache.put("two", [9])  # a replacement counts its new weight, the old one is "evicted"
    assert evicted == ["three", "two"] and cache.weight == 2


def test_get_or_load_loads_once_and_does_not_cache_errors() -> None:
    cache: LRUCache[str, int] = LRUCache(10)
    loads: list[str] = []

    def load() -> int:
        loads.append("x")
        return 42

    assert cache.get_or_load("k", load) == 42 and cache.get_or_load("k", load) == 42
    assert loads == ["x"] and (cache.hits, cache.misses) == (1, 1)

    def fail() -> int:
        raise OSError("disk")

    with pytest.raises(OSError):
        cache.get_or_load("bad", fail)
    assert "bad" not in cache


def test_resize_and_clear() -> None:
    cache: LRUCache[int, int] = LRUCache(4)
    for i in range(4):
        cache.put(i, i)
    cache.resize(2)
    assert cache.keys() == [2, 3] and cache.max_weight == 2
    cache.clear()
    assert len(cache) == 0 and cache.weight == 0 and (cache.hits, cache.misses) == (0, 0)
    with pytest.raises(ValueError):
        LRUCache(0)


def test_threads_never_exceed_the_bound() -> None:
    cache: LRUCache[int, list[int]] = LRUCache(100, weigher=len)

    def work(start: int) -> None:
        for i in range(start, start + 500):
            cache.get_or_load(i % 150, lambda i=i: [i] * (1 + i % 7))

    threads = [threading.Thread(target=work, args=(n * 1000,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.weight <= 100
    assert cache.weight == sum(len(cache.get(k) or []) for k in cache.keys())
    assert cache.hits + cache.misses == 8 * 500 + len(cache.keys())


def test_floe_caches_are_lru_caches() -> None:
    manifests = ManifestCache(max_entries=3)
    assert isinstance(manifests, LRUCache) and manifests.max_entries == 3
    manifests.put("m1", [object()] * 2)  # type: ignore[list-item]
    manifests.put_derived("m1", "tasks", "derived value")
    manifests.put_derived("absent", "tasks", "ignored")
    assert manifests.derived("m1", "tasks") == "derived value"
    assert manifests.derived("absent", "tasks") is None
    manifests.put("m2", [object()] * 2)  # type: ignore[list-item]
    assert "m1" not in manifests and manifests.derived("m1", "tasks") is None
    assert manifests.size == 2
    deletes = DeleteCache(max_files=1)
    assert isinstance(deletes, LRUCache) and deletes.max_files == 1
    assert len(deletes) == 0  # empty, yet a DeleteCache passed to a reader is used (not `or`)


def test_threads_missing_one_key_share_one_load() -> None:
    cache: LRUCache[str, object] = LRUCache(10)
    calls: list[int] = []
    start = threading.Barrier(8)

    def load() -> object:
        calls.append(threading.get_ident())
        time.sleep(0.2)
        return object()

    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(cache.get_or_load("k", load))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 8 and len({id(v) for v in got}) == 1


def test_a_failed_load_is_not_shared_the_waiter_loads_after_it() -> None:
    cache: LRUCache[str, list[int]] = LRUCache(10)
    started = threading.Event()
    events: list[str] = []

    def failing() -> list[int]:
        events.append("fail starts")
        started.set()
        time.sleep(0.3)
        events.append("fail ends")
        raise OSError("gone")

    def own() -> list[int]:
        events.append("own load")
        return [1]

    errors: list[BaseException] = []

    def first() -> None:
        try:
            cache.get_or_load("k", failing)
        except OSError as e:
            errors.append(e)

    got: list[list[int]] = []
    t = threading.Thread(target=first)
    t.start()
    assert started.wait(10)
    waiter = threading.Thread(target=lambda: got.append(cache.get_or_load("k", own)))
    waiter.start()
    t.join()
    waiter.join()
    # the waiter waited for the failed load, then loaded for itself (the error is not shared)
    assert [str(e) for e in errors] == ["gone"]
    assert events == ["fail starts", "fail ends", "own load"] and got == [[1]]
    assert cache.get("k") == [1]
    # a load that asks for its own key loads it again instead of waiting for itself
    assert cache.get_or_load("r", lambda: [len(cache.get_or_load("r", lambda: [7]))]) == [1]


def test_a_value_too_heavy_to_keep_still_reaches_the_threads_that_waited_for_it() -> None:
    cache: LRUCache[str, list[int]] = LRUCache(3, weigher=len)
    calls: list[int] = []
    start = threading.Barrier(4)

    def heavy() -> list[int]:
        calls.append(1)
        time.sleep(0.2)
        return [1, 2, 3, 4]  # heavier than the whole cache: returned, not kept

    got: list[list[int]] = []

    def ask() -> None:
        start.wait()
        got.append(cache.get_or_load("k", heavy))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and got == [[1, 2, 3, 4]] * 4 and "k" not in cache
