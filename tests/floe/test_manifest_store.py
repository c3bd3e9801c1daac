"""The persistent cache of decoded manifests (floe.scan.manifest_store): a later process plans
from it instead of decoding the Avro, with results identical to no cache at all; an entry
that is corrupt, truncated or another manifest's is never trusted (ignored, rebuilt); two
processes filling it at once leave whole entries; a value that would not read back exactly
is not stored; the cache stays within its bound in bytes."""

from __future__ import annotations

import decimal
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from floe import stats
from floe.manifest import DataFile, FileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from floe.scan.manifest_store import ManifestStore
from floe.scan.manifests import read_live_entries


@pytest.fixture(scope="module")
def table(deletes_table: Any) -> Any:
    """Appends over two partition specs, with position and equality deletes."""
    return deletes_table


def _plan(table: Any, cache_dir: Path | str, *args: str, command: str = "plan") -> str:
    """``floe plan --json`` (or another command) as a process with the cache at
    ``cache_dir`` (or "off")."""
    env = {**os.environ, "FLOE_MANIFEST_CACHE": str(cache_dir)}
    got = subprocess.run([sys.executable, "-m", "floe.cli", command, table.location, "--json",
                          *args], capture_output=True, text=True, timeout=120, env=env)
    assert got.returncode == 0, got.stderr
    return got.stdout


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.arrow"))


def _manifests(table: Any) -> list[Any]:
    from floe.manifest import read_manifest_list

    snap = table.metadata.current_snapshot()
    return read_manifest_list(table.io, snap.manifest_list)


@pytest.mark.parametrize(("command", "args"), [
    ("plan", ()), ("plan", ("--filter", "id > 15")), ("plan", ("--filter", "cat = 'c1'")),
    ("files", ()),
])
def test_plans_from_the_cache_equal_plans_without_it(table: Any, tmp_path: Path, command: str,
                                                     args: tuple[str, ...]) -> None:
    without = _plan(table, "off", *args, command=command)
    filled = _plan(table, tmp_path, *args, command=command)  # decodes, stores what it reads
    stored = _entries(tmp_path)
    assert stored and filled == without
    assert _plan(table, tmp_path, *args, command=command) == without  # decodes nothing
    assert _entries(tmp_path) == stored


def test_a_later_process_reads_no_manifest(table: Any, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOE_MANIFEST_CACHE", str(tmp_path))
    manifests = _manifests(table)
    first = read_live_entries(table.io, manifests, cache=None, processes=False)
    stats.reset()
    again = read_live_entries(table.io, manifests, cache=None, processes=False)
    assert stats.reads() == {stats.MANIFEST_CACHE: len(manifests)}
    assert again == first
    # entries read back are the same values of the same types (enums, lazy maps included)
    for a, b in zip(first, again, strict=True):
        for x, y in zip(a, b, strict=True):
            assert type(x.status) is type(y.status)
            assert type(x.data_file.content) is type(y.data_file.content)
            assert dict(x.data_file.value_counts or {}) == dict(y.data_file.value_counts or {})
            assert dict(x.data_file.lower_bounds or {}) == dict(y.data_file.lower_bounds or {})


@pytest.mark.parametrize("damage", ["truncate", "garbage", "one byte", "empty",
                                    "other manifest's"])
def test_a_damaged_entry_is_ignored_and_rebuilt(table: Any, tmp_path: Path, damage: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    without = _plan(table, "off")
    _plan(table, tmp_path)
    store = ManifestStore(tmp_path)
    manifests = _manifests(table)
    victim = store.path_for(manifests[0])
    other = store.path_for(manifests[1])
    good = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        victim.write_bytes(good[:64] + bytes(255 - b for b in good[64:200]) + good[200:])
    elif damage == "one byte":  # in the middle of the column data: only the checksum sees it
        middle = len(good) // 2
        victim.write_bytes(good[:middle] + bytes([good[middle] ^ 0x01]) + good[middle + 1:])
    elif damage == "empty":
        victim.write_bytes(b"")
    else:  # a whole, valid entry, but for another manifest: its key inside does not match
        victim.write_bytes(other.read_bytes())
    assert _plan(table, tmp_path) == without
    monkeypatch.setenv("FLOE_MANIFEST_CACHE", str(tmp_path))
    stats.reset()
    read_live_entries(table.io, manifests, cache=None, processes=False)
    assert stats.reads() == {stats.MANIFEST_CACHE: len(manifests)}  # rebuilt by the plan


def test_two_processes_filling_at_once(table: Any, tmp_path: Path) -> None:
    without = _plan(table, "off")
    env = {**os.environ, "FLOE_MANIFEST_CACHE": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-m", "floe.cli", "plan", table.location,
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert all(out == without for out, _ in outs)
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]
    assert len(_entries(tmp_path)) == len(_manifests(table))
    assert _plan(table, tmp_path) == without


def _entry(partition: tuple[Any, ...]) -> ManifestEntry:
    return ManifestEntry(ManifestEntryStatus.ADDED, 1, 1, 1, DataFile(
        FileContent.DATA, "s3://b/t/data/f.parquet", FileFormat.PARQUET, partition, 10, 100,
        column_sizes={1: 5}, value_counts={1: 10}, lower_bounds={1: b"\x01"},
        upper_bounds={1: b"\x09"}, split_offsets=[4], spec_id=0))


@pytest.mark.parametrize("values", [
    # Arrow keeps one scale per column: 2.5 beside 1.50 would come back as 2.50
    [decimal.Decimal("1.50"), decimal.Decimal("2.5")],
    # one column, two types: Arrow cannot hold them (no Iceberg writer makes this)
    [1, "a"],
])
def test_values_that_would_not_read_back_exactly_are_not_stored(table: Any, tmp_path: Path,
                                                                values: list[Any]) -> None:
    store = ManifestStore(tmp_path)
    manifest = _manifests(table)[0]
    assert store.put(manifest, [_entry((v,)) for v in values]) is False
    assert _entries(tmp_path) == [] and store.get(manifest) is None
    # values that do round trip are stored and come back equal, dict maps included
    plain = [_entry(("a", 3, None, 2.5, float("nan"), b"\x00", uuid.UUID(int=7),
                     decimal.Decimal("1.50")))]
    assert store.put(manifest, plain) is True
    back = store.get(manifest)
    assert back is not None and back[0].data_file.partition[:4] == ("a", 3, None, 2.5)
    assert back[0].data_file.partition[4] != back[0].data_file.partition[4]  # NaN
    assert back[0].data_file.partition[5:] == (b"\x00", uuid.UUID(int=7),
                                               decimal.Decimal("1.50"))
    assert str(back[0].data_file.partition[7]) == "1.50"
    assert dict(back[0].data_file.column_sizes) == {1: 5}
    assert back[0].data_file.split_offsets == [4]


def test_the_cache_stays_within_its_bound(table: Any, tmp_path: Path) -> None:
    manifests = _manifests(table)
    live = read_live_entries(table.io, manifests, cache=None, processes=False)
    one = ManifestStore(tmp_path / "probe")
    one.put(manifests[0], live[0])
    size = _entries(tmp_path / "probe")[0].stat().st_size
    store = ManifestStore(tmp_path / "bounded", max_bytes=size * 3)
    for m, entries in zip(manifests, live, strict=True):
        assert store.put(m, entries)
    # a temporary file a killed writer left: removed once old, kept while it may be written
    old_tmp = tmp_path / "bounded" / "ab" / ".tmp-killed.arrow"
    new_tmp = tmp_path / "bounded" / "ab" / ".tmp-writing.arrow"
    old_tmp.parent.mkdir(parents=True, exist_ok=True)
    old_tmp.write_bytes(b"x")
    new_tmp.write_bytes(b"x")
    os.utime(old_tmp, (0, 0))
    store.trim()
    assert not old_tmp.exists() and new_tmp.exists()
    new_tmp.unlink()
    kept = _entries(tmp_path / "bounded")
    assert 0 < len(kept) <= 3 < len(manifests)
    assert sum(p.stat().st_size for p in kept) <= size * 3 * 1.01
    assert store.get(manifests[-1]) is not None  # the most recent stay


def test_partition_stats_from_the_cache_columns_equal_those_from_entries(
        table: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The partitions of a snapshot come from the stored columns, grouped by Arrow, without
    building an entry; the numbers (and each partition's file sizes) equal the entries'."""
    from floe.partition_stats import partition_stats
    from floe.scan.manifest_store import StoredEntries

    def numbers(stats: Any) -> list[tuple[Any, ...]]:
        return [(p.spec_id, p.partition, p.label, p.record_count, p.file_count, p.total_size,
                 p.delete_file_count, p.delete_record_count, sorted(p.file_sizes))
                for p in stats.partitions]

    monkeypatch.setenv("FLOE_MANIFEST_CACHE", str(tmp_path))
    expected = partition_stats(table.io, table.metadata, cache=None)  # decodes, stores
    assert any(p.delete_file_count for p in expected.partitions)
    assert any(None in p.partition for p in expected.partitions)  # null partition values
    assert len({p.spec_id for p in expected.partitions}) == 2

    def refuse(self: Any, source: Any) -> Any:
        raise AssertionError("an entry was built")

    monkeypatch.setattr(StoredEntries, "_build", refuse)
    stats.reset()
    got = partition_stats(table.io, table.metadata, cache=None)
    assert stats.reads().get(stats.MANIFEST_CACHE) == len(_manifests(table))
    assert numbers(got) == numbers(expected)
