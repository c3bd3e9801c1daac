"""Expire snapshots on real file-system tables: Java's retention rules (table defaults, branch
overrides, ref ages, explicit ids), refusals, the files deleted (exactly those only expired
snapshots reach, never one a kept snapshot uses), dry run = real run, statistics files,
unused schemas / specs, cancelling, concurrent commits and finishing an interrupted run."""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe import stats
from floe.catalog.filesystem import FileSystemCatalog
from floe.clock import ManualClock, use_clock
from floe.errors import NotFound, ValidationError
from floe.scan.readers import plan_to_table
from floe.maintenance import Cancelled, Progress
from floe.maintenance.expire import ExpireResult, expire_snapshots, plan_expiration
from floe.reachable import PartitionBox
from floe.manifest import PartitionFieldSummary, read_manifest, read_manifest_list
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.snapshots import PartitionStatisticsFile, StatisticsFile
from floe.table import Table
from floe.types import LONG, STRING, IntegerType, NestedField, StringType, StructType

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}
DAY = 86_400_000
HOUR = 3_600_000


# -- helpers (test_orphans.py and test_maintenance_crash.py use them too) --------------------

#: Stamps the histories these tests build days in the past: tables are created a year ago and
#: each commit happens when :func:`append_at` moves the clock (history never goes back in
#: time: floe refuses to write such metadata, as Iceberg Java does).
CLOCK = ManualClock(0)


@pytest.fixture(autouse=True)
def history_clock() -> Iterator[ManualClock]:
    CLOCK.set(now_ms() - 365 * DAY)
    with use_clock(CLOCK):
        yield CLOCK


def now_ms() -> int:
    return int(time.time() * 1000)


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i % 3}" for i in ids]})


def new_table(catalog: FileSystemCatalog, name: str = "db.t", *, fv: int = 2,
              partitioned: bool = True, properties: dict[str, str] | None = None) -> Table:
    spec = parse_partition_by("s", SCHEMA) if partitioned else UNPARTITIONED
    return catalog.create_table(name, SCHEMA, spec=spec, format_version=fv,
                                properties={**FAST, **(properties or {})})


def append_at(t: Table, ts_ms: int, *ids: int, branch: str = "main") -> int:
    """Append ``ids`` at ``ts_ms``; the commits after it happen then too."""
    CLOCK.set(ts_ms)
    t.append(rows(*ids), branch=branch)
    head = t.metadata.refs[branch].snapshot_id
    return head


def snapshot_files(t: Table, snap: Any) -> set[str]:
    """Manifest list, manifests and live data / delete files of one snapshot."""
    out = {snap.manifest_list}
    for m in read_manifest_list(t.io, snap.manifest_list):
        out.add(m.manifest_path)
        out |= {e.data_file.file_path for e in read_manifest(t.io, m, discard_deleted=True)}
    return out


def ref_rows(t: Table) -> dict[str, list[int]]:
    """Sorted ids of every ref (as Spark reads a ref, with the current schema)."""
    out = {}
    for name in sorted(t.metadata.refs):
        plan = plan_files(t.io, t.metadata, ref=name)
        out[name] = sorted(plan_to_table(t.io, plan).column("id").to_pylist())
    return out


def disk_files(t: Table) -> set[str]:
    root = Path(t.location)
    return {str(p) for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}


def assert_kept_intact(t: Table, before_rows: dict[str, list[int]] | None = None) -> None:
    """Every file of every snapshot still in the table exists; rows of every ref unchanged."""
    t.refresh()
    for snap in t.metadata.snapshots:
        for path in snapshot_files(t, snap):
            assert os.path.exists(path), f"snapshot {snap.snapshot_id} lost {path}"
    for s in t.metadata.statistics + t.metadata.partition_statistics:
        assert os.path.exists(s.statistics_path), s.statistics_path
    if before_rows is not None:
        after = ref_rows(t)
        assert after == {r: before_rows[r] for r in after}


def reach(t: Table) -> dict[int, set[str]]:
    """Per snapshot: every file it reaches (manifest list, manifests, live data and delete
    files, its statistics files). Taken before an expiration, to compare with after."""
    md = t.refresh().metadata
    out = {s.snapshot_id: snapshot_files(t, s) for s in md.snapshots}
    for st in md.statistics + md.partition_statistics:
        out[st.snapshot_id].add(st.statistics_path)
    return out


def expected_deletions(before: dict[int, set[str]], t: Table) -> set[str]:
    """Spark's ExpireSnapshotsSparkAction by brute force: what the expired snapshots reached
    minus what the kept ones reach."""
    kept = {s.snapshot_id for s in t.refresh().metadata.snapshots}
    gone: set[str] = set().union(*[f for sid, f in before.items() if sid not in kept])
    keep: set[str] = set().union(*[f for sid, f in before.items() if sid in kept])
    return gone - keep


def register_statistics(t: Table, stats_for: dict[int, str], part_stats_for: dict[int, str]
                        ) -> None:
    """Register (Puffin-like) statistics files for snapshots, written as real files."""
    md = t.metadata
    for path in {*stats_for.values(), *part_stats_for.values()}:
        t.io.write(path, b"PFA1 not really puffin", overwrite=True)
    new = dataclasses.replace(
        md,
        statistics=md.statistics + tuple(
            StatisticsFile(sid, p, 22, 0) for sid, p in stats_for.items()),
        partition_statistics=md.partition_statistics + tuple(
            PartitionStatisticsFile(sid, p, 22) for sid, p in part_stats_for.items()))
    t.catalog.commit_metadata(t.identifier, t.metadata_location, md, new)
    t.refresh()


@pytest.fixture
def catalog(tmp_path: Path) -> FileSystemCatalog:
    return FileSystemCatalog("c", str(tmp_path / "wh"))


def history_table(catalog: FileSystemCatalog, days: list[float], **kw: Any) -> tuple[Table,
                                                                                     list[int]]:
    """A table with one append per entry of ``days`` (days ago), oldest first."""
    t = new_table(catalog, **kw)
    base = now_ms()
    ids = [append_at(t, base - int(d * DAY), i) for i, d in enumerate(days)]
    return t, ids


def remaining(t: Table) -> list[int]:
    t.refresh()
    return [s.snapshot_id for s in t.metadata.snapshots]


# -- retention rules ------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "props", "kept"), [
    # defaults: 5 days, keep 1
    ({}, {}, [3, 4, 5]),
    ({"older_than_ms": "now"}, {}, [5]),
    ({"older_than_ms": "now", "retain_last": 3}, {}, [3, 4, 5]),
    ({"retain_last": 5}, {}, [1, 2, 3, 4, 5]),
    # the table's history.expire.* properties are the defaults
    ({}, {"history.expire.max-snapshot-age-ms": str(7 * DAY)}, [2, 3, 4, 5]),
    ({}, {"history.expire.min-snapshots-to-keep": "4"}, [2, 3, 4, 5]),
    # arguments win over properties
    ({"older_than_ms": "now"}, {"history.expire.max-snapshot-age-ms": str(30 * DAY)}, [5]),
    ({"retain_last": 1, "older_than_ms": "now"},
     {"history.expire.min-snapshots-to-keep": "4"}, [5]),
], ids=["defaults", "older-than-now", "retain-last", "retain-more-than-age",
        "prop-age", "prop-min", "arg-age-wins", "arg-min-wins"])
def test_table_retention(catalog: FileSystemCatalog, kwargs: dict[str, Any],
                         props: dict[str, str], kept: list[int]) -> None:
    t, ids = history_table(catalog, [10, 8, 6, 4, 2, 0.001], properties=props)
    kwargs = {k: now_ms() if v == "now" else v for k, v in kwargs.items()}
    before = ref_rows(t)
    result = expire_snapshots(t, **kwargs)
    assert remaining(t) == [ids[i] for i in kept]
    assert sorted(result.expired_snapshot_ids) == sorted(set(ids) - {ids[i] for i in kept})
    assert_kept_intact(t, before)


def test_branch_retention_overrides_table_defaults(catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [20, 18, 16, 14])
    base = now_ms()
    # dev forks at ids[1] and gets three commits of its own
    t.manage_snapshots().create_branch("dev", ids[1], min_snapshots_to_keep=4).commit()
    # old: forks at ids[0], keeps snapshots younger than 9 days (at least 1)
    t.manage_snapshots().create_branch("old", ids[0], max_snapshot_age_ms=9 * DAY).commit()
    # the branches' own commits, in the order they happen (days ago)
    commits = sorted([("dev", 12), ("dev", 10), ("dev", 8), ("old", 11), ("old", 7),
                      ("old", 3)], key=lambda c: -c[1])
    heads = {(b, d): append_at(t, base - d * DAY, (100 if b == "dev" else 200) + d, branch=b)
             for b, d in commits}
    dev = [heads["dev", d] for d in (12, 10, 8)]
    old = [heads["old", d] for d in (11, 7, 3)]
    before = ref_rows(t)
    expire_snapshots(t, older_than_ms=base, retain_last=1)
    # main: only its head; dev: 4 newest ancestors (3 own + ids[1]); old: 2 young ones
    assert set(remaining(t)) == {ids[3], *dev, ids[1], old[1], old[2]}
    assert_kept_intact(t, before)


def test_branch_age_keeps_at_least_its_minimum(catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [9, 8, 7, 6])
    t.manage_snapshots().set_retention("main", min_snapshots_to_keep=3,
                                        max_snapshot_age_ms=HOUR).commit()
    expire_snapshots(t, older_than_ms=now_ms())
    assert remaining(t) == ids[1:]


@pytest.mark.parametrize("kind", ["tag", "branch"])
def test_refs_older_than_their_max_age_go_with_their_snapshots(catalog: FileSystemCatalog,
                                                               kind: str) -> None:
    t, ids = history_table(catalog, [10, 8, 6, 0.001])
    ms = t.manage_snapshots()
    create = ms.create_tag if kind == "tag" else ms.create_branch
    create("young", ids[1], max_ref_age_ms=30 * DAY)
    (ms.create_tag if kind == "tag" else ms.create_branch)("stale", ids[0],
                                                           max_ref_age_ms=9 * DAY)
    ms.commit()
    result = expire_snapshots(t)
    t.refresh()
    assert sorted(t.metadata.refs) == ["main", "young"]
    assert result.removed_refs == ("stale",)
    assert ids[0] not in remaining(t) and ids[1] in remaining(t)


def test_table_max_ref_age_property_and_main_is_never_removed(
        catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 8, 6],
                           properties={"history.expire.max-ref-age-ms": str(7 * DAY)})
    t.manage_snapshots().create_tag("t8", ids[1]).create_tag("t6", ids[2]).commit()
    result = expire_snapshots(t, older_than_ms=now_ms())
    t.refresh()
    assert sorted(t.metadata.refs) == ["main", "t6"]  # main's snapshot is 6 days old too
    assert result.removed_refs == ("t8",)
    assert remaining(t) == [ids[2]]


def test_explicit_ids_expire_even_inside_retention(catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [4, 3, 2, 1])
    before = ref_rows(t)
    result = expire_snapshots(t, snapshot_ids=[ids[1]], retain_last=10)
    assert remaining(t) == [ids[0], ids[2], ids[3]]
    assert result.expired_snapshot_ids == (ids[1],)
    assert_kept_intact(t, before)
    # an unknown id is ignored, as in Java (a re-run with the same ids still works)
    assert expire_snapshots(t, snapshot_ids=[ids[1]]).expired_snapshot_ids == ()


@pytest.mark.parametrize("ref", ["main", "tag", "branch"])
def test_ids_held_by_a_ref_are_refused(catalog: FileSystemCatalog, ref: str) -> None:
    t, ids = history_table(catalog, [4, 3, 2])
    held = {"main": ids[2], "tag": ids[0], "branch": ids[1]}[ref]
    if ref == "tag":
        t.manage_snapshots().create_tag("keep", held).commit()
    elif ref == "branch":
        t.manage_snapshots().create_branch("b", held).commit()
    files = disk_files(t)
    location = t.metadata_location
    with pytest.raises(ValidationError, match=f"cannot expire snapshot {held}.*still "
                                              f"referenced by"):
        expire_snapshots(t, snapshot_ids=[held])
    t.refresh()
    assert t.metadata_location == location and disk_files(t) == files


def test_ids_of_refs_that_expire_themselves_may_be_expired(catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 2])
    t.manage_snapshots().create_tag("gone", ids[0], max_ref_age_ms=DAY).commit()
    result = expire_snapshots(t, snapshot_ids=[ids[0]])
    assert result.removed_refs == ("gone",) and remaining(t) == [ids[1]]


@pytest.mark.parametrize(("kwargs", "props", "message"), [
    ({}, {"gc.enabled": "false"}, "gc.enabled is false"),
    ({"older_than_ms": "future"}, {}, "is in the future"),
    ({"retain_last": 0}, {}, "retain_last must be at least 1"),
    ({"dry_run": True}, {"gc.enabled": "false"}, "gc.enabled is false"),
])
def test_refusals_change_nothing(catalog: FileSystemCatalog, kwargs: dict[str, Any],
                                 props: dict[str, str], message: str) -> None:
    t, _ = history_table(catalog, [10, 8, 6], properties=props)
    kwargs = {k: now_ms() + DAY if v == "future" else v for k, v in kwargs.items()}
    files = disk_files(t)
    location = t.metadata_location
    with pytest.raises(ValidationError, match=message):
        expire_snapshots(t, **kwargs)
    t.refresh()
    assert t.metadata_location == location and disk_files(t) == files


def test_a_table_without_snapshots_is_nothing_to_do(catalog: FileSystemCatalog) -> None:
    t = new_table(catalog)
    location = t.metadata_location
    result = expire_snapshots(t, older_than_ms=now_ms())
    assert result.expired_snapshot_ids == () and result.files() == () and not result.committed
    assert t.refresh().metadata_location == location


# -- files ----------------------------------------------------------------------------------


def live_files(t: Table, content: int | None = None) -> list[str]:
    snap = t.refresh().metadata.current_snapshot()
    out = []
    for m in read_manifest_list(t.io, snap.manifest_list):
        out += [e.data_file.file_path for e in read_manifest(t.io, m, discard_deleted=True)
                if content is None or e.data_file.content == content]
    return sorted(out)


def _build_row_level(catalog: FileSystemCatalog, fv: int, partitioned: bool) -> Table:
    """Old appends, a tag that outlives its max age, merge-on-read / copy-on-write /
    equality deletes, a delete file dropped again, a branch with its own commits."""
    t = new_table(catalog, fv=fv, partitioned=partitioned,
                  properties={"commit.manifest.min-count-to-merge": "3"})
    base = now_ms() - 20 * DAY
    for i in range(6):
        append_at(t, base + i * DAY, *range(10 * i, 10 * i + 6))
    t.manage_snapshots().create_tag("t2", t.metadata.snapshots[2].snapshot_id,
                                    max_ref_age_ms=10 * DAY).commit()
    mode = "merge-on-read" if fv == 2 else "copy-on-write"
    t.delete_where("id = 1 or id = 22", mode=mode)
    t.delete_where("id < 14", mode="copy-on-write")
    if fv == 2:
        t.delete_equal(["id"], pa.table({"id": pa.array([31, 52], pa.int64())}))
        t.delete_files(live_files(t, content=1)[:1])  # drop a position delete file
    t.manage_snapshots().create_branch("dev").commit()
    t.append(rows(90, 91), branch="dev")
    t.delete_where("id = 41", mode=mode, branch="dev")
    t.append(rows(95))
    return t


@pytest.mark.parametrize("fv", [1, 2])
@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("cut", [2, 5, 8, "all"])
def test_dry_run_lists_exactly_what_the_run_deletes(catalog: FileSystemCatalog, fv: int,
                                                    partitioned: bool, cut: Any) -> None:
    t = _build_row_level(catalog, fv, partitioned)
    snaps = t.metadata.snapshots
    older = now_ms() if cut == "all" else snaps[cut].timestamp_ms
    before = reach(t)
    before_rows = ref_rows(t)
    before_disk = disk_files(t)
    dry = expire_snapshots(t, older_than_ms=older, dry_run=True)
    assert t.refresh().metadata is not None and t.metadata_location == \
        catalog.metadata_location("db.t")
    assert disk_files(t) == before_disk and len(t.metadata.snapshots) == len(snaps)
    real = expire_snapshots(t, older_than_ms=older)
    assert real.committed == bool(real.expired_snapshot_ids)
    assert real.files() == dry.files() and real.expired_snapshot_ids == \
        dry.expired_snapshot_ids and real.removed_refs == dry.removed_refs
    assert real.deleted_files == len(real.files()) and not real.failed
    expected = expected_deletions(before, t)
    assert set(real.files()) == expected
    assert disk_files(t) == before_disk - expected | {t.metadata_location}
    assert_kept_intact(t, before_rows)
    # the kinds are told apart
    for path in real.position_delete_files + real.equality_delete_files:
        assert path.endswith(".parquet") and fv == 2


def test_files_live_in_a_kept_snapshot_survive_a_delete_in_a_newer_one(
        catalog: FileSystemCatalog) -> None:
    t = new_table(catalog, partitioned=False)
    base = now_ms() - 10 * DAY
    append_at(t, base, 1, 2)
    first = t.metadata.snapshots[0]
    data = [p for p in snapshot_files(t, first) if p.endswith(".parquet")]
    CLOCK.set(base + DAY)
    t.new_transaction().delete_files(data).commit()
    append_at(t, base + 2 * DAY, 3)
    t.manage_snapshots().create_tag("keep", first.snapshot_id).commit()
    result = expire_snapshots(t, older_than_ms=now_ms())
    assert result.data_files == ()  # still live in the tagged snapshot
    assert all(os.path.exists(p) for p in data)
    t.manage_snapshots().remove_tag("keep").commit()
    result = expire_snapshots(t, older_than_ms=now_ms())
    assert result.data_files == tuple(data)
    assert not any(os.path.exists(p) for p in data)


def test_kept_manifests_are_read_only_when_their_summaries_allow_a_candidate(
        catalog: FileSystemCatalog) -> None:
    t = new_table(catalog, properties={"commit.manifest-merge.enabled": "false"})
    base = now_ms() - 10 * DAY
    for i in range(6):  # one manifest per partition s0..s2 ... (ids 0..5 → s0 s1 s2 s0 s1 s2)
        CLOCK.set(base + i * HOUR)
        t.append(pa.table({"id": pa.array([i], pa.int64()), "s": [f"p{i}"]}))
    p0 = [p for p in snapshot_files(t, t.metadata.snapshots[0]) if p.endswith(".parquet")]
    CLOCK.set(base + DAY)
    t.new_transaction().delete_files(p0).commit()
    stats.reset()
    result = expire_snapshots(t, older_than_ms=now_ms())
    assert result.data_files == tuple(p0)
    # the doomed manifest of p0 only: the kept p1..p5 manifests cannot hold a p0 file, and the
    # rewritten p0 manifest holds no live file
    assert stats.reads().get("manifest", 0) == 1
    assert_kept_intact(t)


def _int(v: int) -> bytes:
    return v.to_bytes(4, "little", signed=True)


def _s(lo: Any, hi: Any, nulls: bool = False, nan: bool | None = None) -> PartitionFieldSummary:
    def enc(v: Any) -> bytes | None:
        if v is None or isinstance(v, bytes):
            return v
        return _int(v) if isinstance(v, int) else str(v).encode()

    return PartitionFieldSummary(nulls, nan, enc(lo), enc(hi))


INT, STR = IntegerType(), StringType()


@pytest.mark.parametrize(("types", "group", "other", "may"), [
    ([INT], [[_s(1, 5)]], [_s(3, 9)], True),
    ([INT], [[_s(1, 5)], [_s(20, 30)]], [_s(7, 9)], True),  # one box: 1..30
    ([INT], [[_s(1, 5)]], [_s(6, 9)], False),
    ([INT], [[_s(1, 5)]], [_s(None, None, nulls=True)], False),
    ([INT], [[_s(1, 5, nulls=True)]], [_s(None, None, nulls=True)], True),
    ([INT], [[_s(None, None, nulls=True)]], [_s(1, 5)], False),
    ([INT], [[_s(1, 5)]], None, True),
    ([INT], [None], [_s(6, 9)], True),
    ([STR], [[_s("b", "d")]], [_s("e", "f")], False),
    ([STR], [[_s("b", "d")]], [_s("a", "b")], True),
    # Java orders strings by UTF-16 units: never decide on characters beyond the BMP
    ([STR], [[_s("\U00010000", "\U00010000")]], [_s("\uffff", "\uffff")], True),
    ([STR, INT], [[_s("a", "a"), _s(1, 1)]], [_s("a", "a"), _s(2, 2)], False),
    ([STR, INT], [[_s("a", "a"), _s(1, 1)]], [_s("b", "b"), _s(1, 1)], False),
    ([STR, INT], [[_s("a", "a"), _s(1, 1)]], [_s("a", "a"), _s(1, 3)], True),
])
def test_partition_boxes(types: list[Any], group: list[Any], other: Any, may: bool) -> None:
    struct = StructType(*[NestedField(1000 + i, f"p{i}", t) for i, t in enumerate(types)])
    box = PartitionBox(struct)
    for summaries in group:
        box.add(summaries)
    assert box.may_overlap(other) is may
    assert PartitionBox(None).may_overlap(other) is True


# -- statistics and unused metadata -------------------------------------------------------------


def test_statistics_files_of_expired_snapshots_go_unless_a_kept_one_uses_them(
        catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 8, 6, 4])
    meta = f"{t.location}/metadata"
    shared = f"{meta}/shared.stats"
    register_statistics(
        t, {ids[0]: f"{meta}/s0.stats", ids[1]: shared, ids[3]: shared},
        {ids[0]: f"{meta}/p0.parquet", ids[2]: f"{meta}/p2.parquet",
         ids[3]: f"{meta}/p3.parquet"})
    dry = expire_snapshots(t, older_than_ms=now_ms() - 5 * DAY, dry_run=True)
    result = expire_snapshots(t, older_than_ms=now_ms() - 5 * DAY)
    assert result.files() == dry.files()
    assert result.statistics_files == (f"{meta}/s0.stats",)
    assert result.partition_statistics_files == (f"{meta}/p0.parquet", f"{meta}/p2.parquet")
    assert os.path.exists(shared) and os.path.exists(f"{meta}/p3.parquet")
    t.refresh()
    assert [s.snapshot_id for s in t.metadata.statistics] == [ids[3]]
    assert [s.snapshot_id for s in t.metadata.partition_statistics] == [ids[3]]
    assert_kept_intact(t)


def test_clean_expired_metadata_removes_unused_schemas_and_specs(
        catalog: FileSystemCatalog) -> None:
    t = new_table(catalog, partitioned=False)
    base = now_ms() - 10 * DAY
    # a staged (write-audit-publish) snapshot is the only user of schema 0 and spec 0
    CLOCK.set(base)
    t.new_transaction().append(rows(1), wap_id="w").commit()
    t.update_schema().add_column("x", LONG).commit()
    t.update_spec().add_field("s").commit()
    CLOCK.set(base + DAY)
    t.append(pa.table({"id": pa.array([2], pa.int64()), "s": ["a"],
                       "x": pa.array([7], pa.int64())}))
    t.update_schema().add_column("y", STRING).commit()  # current, used by no snapshot
    t.update_spec().add_field("id").commit()
    t.update_schema().add_column("z", STRING).commit()
    md = t.refresh().metadata
    assert len(md.schemas) == 4 and len(md.partition_specs) == 3
    keep_all = expire_snapshots(t, older_than_ms=base + 1, dry_run=True)
    assert keep_all.removed_schema_ids == () and keep_all.removed_spec_ids == ()
    assert keep_all.expired_snapshot_ids == (md.snapshots[0].snapshot_id,)
    result = expire_snapshots(t, older_than_ms=base + 1, clean_expired_metadata=True)
    md = t.refresh().metadata
    # schema 0 / spec 0: only the expired snapshot used them; schema 2 (y) nothing ever
    # used; schema 1 and spec 1 the kept snapshot; schema 3 and spec 2 are current
    assert result.removed_schema_ids == (0, 2) and result.removed_spec_ids == (0,)
    assert [s.schema_id for s in md.schemas] == [1, 3]
    assert [s.spec_id for s in md.partition_specs] == [1, 2]
    assert_kept_intact(t)
    assert plan_to_table(t.io, plan_files(t.io, md)).column("id").to_pylist() == [2]
    # nothing else to clean: a second run changes nothing
    again = expire_snapshots(t, older_than_ms=base + 1, clean_expired_metadata=True)
    assert not again.committed and again.removed_schema_ids == ()


# -- commits, cancelling, finishing -----------------------------------------------------------


def test_a_concurrent_ref_change_is_seen_before_anything_is_removed(
        catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 8, 6, 0.001])
    other = catalog.load_table("db.t")
    moved = []

    def progress(p: Progress) -> None:
        if p.stage == "committing" and not moved:
            # another writer tags a snapshot this expiration planned to remove
            other.manage_snapshots().create_tag("late", ids[1]).commit()
            moved.append(True)

    result = expire_snapshots(t, on_progress=progress)
    assert moved
    assert remaining(t) == [ids[1], ids[3]]
    assert ids[1] not in result.expired_snapshot_ids
    assert sorted(result.expired_snapshot_ids) == sorted([ids[0], ids[2]])
    assert_kept_intact(t)
    t.refresh()
    assert t.metadata.refs["late"].snapshot_id == ids[1]
    # the files it deleted are exactly what the two expired snapshots alone reached
    for path in result.files():
        assert not os.path.exists(path)


def test_cancel_before_the_commit_changes_nothing(catalog: FileSystemCatalog) -> None:
    t, _ = history_table(catalog, [10, 8, 6])
    files, location = disk_files(t), t.metadata_location

    def cancel(p: Progress) -> None:
        if p.stage == "committing":
            raise Cancelled("stop")

    with pytest.raises(Cancelled):
        expire_snapshots(t, older_than_ms=now_ms(), on_progress=cancel)
    assert t.refresh().metadata_location == location and disk_files(t) == files


@pytest.mark.parametrize("how", ["cancel", "no-clean"])
def test_a_re_run_finishes_an_interrupted_cleanup(catalog: FileSystemCatalog, how: str) -> None:
    t = _build_row_level(catalog, 2, True)
    before = reach(t)
    older = now_ms()
    plan = expire_snapshots(t, older_than_ms=older, dry_run=True)
    assert len(plan.files()) > 3
    if how == "cancel":
        def cancel(p: Progress) -> None:
            if p.stage == "deleting files" and p.done > 0:
                raise Cancelled("stop")

        import floe.maintenance.expire as expire_module
        old_batch = expire_module.DELETE_BATCH
        expire_module.DELETE_BATCH = 2
        try:
            with pytest.raises(Cancelled):
                expire_snapshots(t, older_than_ms=older, on_progress=cancel)
        finally:
            expire_module.DELETE_BATCH = old_batch
    else:
        result = expire_snapshots(t, older_than_ms=older, clean_expired_files=False)
        assert result.committed and result.files() == ()
    left = [p for p in plan.files() if os.path.exists(p)]
    assert left
    again = expire_snapshots(t, older_than_ms=older, dry_run=True)
    assert again.expired_snapshot_ids == ()
    assert set(again.previously_expired_snapshot_ids) == set(plan.expired_snapshot_ids) \
        if how == "no-clean" else set(again.previously_expired_snapshot_ids)
    assert set(left) <= set(again.files()) <= set(plan.files())
    done = expire_snapshots(t, older_than_ms=older)
    assert done.files() == again.files()
    assert not any(os.path.exists(p) for p in plan.files())
    assert set(plan.files()) == expected_deletions(before, t)
    assert_kept_intact(t)
    # and then there is nothing left to finish
    assert expire_snapshots(t, older_than_ms=older, dry_run=True).files() == ()


def test_previously_expired_needs_the_table_own_metadata_log(catalog: FileSystemCatalog
                                                             ) -> None:
    t, ids = history_table(catalog, [10, 8, 6])
    # a manifest list of a snapshot no metadata file describes (a failed commit) is left alone
    stray = f"{t.location}/metadata/snap-123-1-0000.avro"
    t.io.write(stray, b"junk")
    assert expire_snapshots(t, dry_run=True).previously_expired_snapshot_ids == ()
    expire_snapshots(t, older_than_ms=now_ms())
    assert os.path.exists(stray)


# -- a randomized check -------------------------------------------------------------------------


def _random_ops(t: Table, rng: random.Random, steps: int) -> None:
    next_id = 1000
    for _ in range(steps):
        op = rng.choice(["append", "append", "mor", "cow", "eq", "branch", "tag", "dev",
                         "rollback"])
        md = t.refresh().metadata
        live = ref_rows(t).get("main", [])
        try:
            if op == "append" or not live:
                t.append(rows(*range(next_id, next_id + rng.randint(1, 4))))
                next_id += 5
            elif op in ("mor", "cow"):
                victim = rng.choice(live)
                t.delete_where(f"id = {victim}", mode="merge-on-read" if op == "mor"
                               else "copy-on-write")
            elif op == "eq":
                t.delete_equal(["id"], pa.table({"id": pa.array([rng.choice(live)],
                                                                pa.int64())}))
            elif op == "branch":
                sid = rng.choice(md.snapshots).snapshot_id
                t.manage_snapshots().create_branch(
                    f"b{next_id}", sid, min_snapshots_to_keep=rng.choice([None, 1, 2]),
                    max_ref_age_ms=rng.choice([None, 1, DAY])).commit()
                next_id += 1
            elif op == "tag":
                sid = rng.choice(md.snapshots).snapshot_id
                t.manage_snapshots().create_tag(f"t{next_id}", sid,
                                                max_ref_age_ms=rng.choice([None, 1])).commit()
                next_id += 1
            elif op == "dev":
                branches = [n for n, r in md.refs.items() if r.is_branch and n != "main"]
                if branches:
                    t.append(rows(next_id), branch=rng.choice(branches))
                    next_id += 1
            elif op == "rollback":
                anc = list(md.ancestors_of(md.current_snapshot_id))
                if len(anc) > 1:
                    t.manage_snapshots().rollback_to(anc[1].snapshot_id).commit()
        except ValidationError:
            pass
        time.sleep(0.002)  # distinct commit times


@pytest.mark.parametrize("seed", range(6))
def test_randomized_expirations_never_delete_a_kept_file(catalog: FileSystemCatalog,
                                                         seed: int) -> None:
    rng = random.Random(seed)
    t = new_table(catalog, partitioned=bool(seed % 2),
                  properties={"commit.manifest.min-count-to-merge": str(rng.choice([2, 4]))})
    _random_ops(t, rng, 14)
    for _ in range(3):
        md = t.refresh().metadata
        snaps = md.snapshots
        before = reach(t)
        before_rows = {n: r for n, r in ref_rows(t).items()}
        before_disk = disk_files(t)
        kwargs: dict[str, Any] = {
            "older_than_ms": rng.choice(snaps).timestamp_ms + rng.choice([0, 1]),
            "retain_last": rng.choice([None, 1, 2, 3]),
        }
        held = {r.snapshot_id for r in md.refs.values()}
        free = [s.snapshot_id for s in snaps if s.snapshot_id not in held]
        if free and rng.random() < 0.5:
            kwargs["snapshot_ids"] = rng.sample(free, min(len(free), 2))
        dry = expire_snapshots(t, dry_run=True, **kwargs)
        real = expire_snapshots(t, **kwargs)
        assert real.files() == dry.files()
        assert set(real.files()) == expected_deletions(before, t)
        assert disk_files(t) == before_disk - set(real.files()) | {t.metadata_location}
        assert_kept_intact(t, before_rows)
        _random_ops(t, rng, 5)


def test_plan_expiration_is_pure_and_counts_ancestors_to_a_missing_parent(
        catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 9, 8, 7])
    md = t.metadata
    # snapshot 1 gone (expired explicitly earlier): main's ancestry stops at snapshot 2
    md = dataclasses.replace(md, snapshots=tuple(s for s in md.snapshots
                                                 if s.snapshot_id != ids[1]))
    plan = plan_expiration(md, now_ms=now_ms(), older_than_ms=now_ms(), retain_last=5)
    # 2 and 3 are kept by main; 0 is reachable from no ref and old: expired
    assert plan.expired_ids == (ids[0],)


def _cancel_at(stage: str) -> Callable[[Progress], None]:
    def cb(p: Progress) -> None:
        if p.stage == stage:
            raise Cancelled(stage)
    return cb


@pytest.mark.parametrize("stage", ["planning", "reading manifest lists", "committing"])
def test_cancel_at_every_stage_before_the_commit(catalog: FileSystemCatalog, stage: str) -> None:
    t, _ = history_table(catalog, [10, 8, 6])
    files, location = disk_files(t), t.metadata_location
    with pytest.raises(Cancelled):
        expire_snapshots(t, older_than_ms=now_ms(), on_progress=_cancel_at(stage))
    assert t.refresh().metadata_location == location and disk_files(t) == files


def test_result_json(catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 8])
    result = expire_snapshots(t, older_than_ms=now_ms(), dry_run=True)
    doc = result.to_json()
    assert doc["dry_run"] is True and doc["expired_snapshot_ids"] == [ids[0]]
    assert doc["manifest_lists"] == [t.metadata.snapshots[0].manifest_list]
    assert set(doc) >= {"data_files", "position_delete_files", "equality_delete_files",
                        "manifests", "statistics_files", "partition_statistics_files",
                        "removed_refs", "previously_expired_snapshot_ids", "failed"}
    assert isinstance(result, ExpireResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.dry_run = False  # type: ignore[misc]


def test_unreadable_kept_manifest_stops_before_the_commit(catalog: FileSystemCatalog) -> None:
    t, ids = history_table(catalog, [10, 8, 6], properties={
        "commit.manifest-merge.enabled": "false"})
    p0 = [p for p in snapshot_files(t, t.metadata.snapshots[0]) if p.endswith(".parquet")]
    t.new_transaction().delete_files(p0).commit()
    kept_list = t.refresh().metadata.current_snapshot().manifest_list
    os.unlink(kept_list)
    location = t.metadata_location
    with pytest.raises(NotFound):
        expire_snapshots(t, older_than_ms=now_ms())
    assert t.refresh().metadata_location == location


# -- reading the graph fast ---------------------------------------------------------------------


@pytest.mark.parametrize("fv", [1, 2])
def test_fast_readers_agree_with_the_decoders(catalog: FileSystemCatalog, fv: int) -> None:
    from floe.reachable import ManifestLists
    from floe.scan.manifests import ManifestScanner

    t = _build_row_level(catalog, fv, True)
    lists = ManifestLists(t.io)
    lists.prefetch(s.manifest_list for s in t.metadata.snapshots)
    scanner = ManifestScanner(t.io, t.location)
    seen = set()
    for snap in t.metadata.snapshots:
        assert lists.snapshot(snap) == read_manifest_list(t.io, snap.manifest_list)
        for m in lists.snapshot(snap):
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            decoded = {e.data_file.file_path: e.data_file.content
                       for e in read_manifest(t.io, m, discard_deleted=True)}
            assert scanner.live_files(m) == decoded
    assert lists.reused_records > 0 and lists.decoded_records > 0
    assert scanner.scanned > 0 and scanner.decoded > 0


def test_the_scan_never_cuts_a_path_out_of_a_longer_one(catalog: FileSystemCatalog) -> None:
    from floe.manifest import DataFile, FileContent, FileFormat
    from floe.scan.manifests import ManifestScanner

    t = new_table(catalog, partitioned=False)
    inside = f"{t.location}/data/a.parquet"
    outside = f"/elsewhere{t.location}/data/b.parquet"  # holds the table location inside
    t.new_transaction().fast_append([
        DataFile(FileContent.DATA, p, FileFormat.PARQUET, (), 1, 10) for p in (inside, outside)
    ]).commit()
    m = read_manifest_list(t.io, t.refresh().metadata.current_snapshot().manifest_list)[0]
    scanner = ManifestScanner(t.io, t.location)
    assert scanner.scan(m) is None
    assert set(scanner.live_files(m)) == {inside, outside} and scanner.decoded == 1


def test_expiry_trims_snapshot_log_and_partition_statistics(catalog: FileSystemCatalog) -> None:
    """Java updateSnapshotLog: history before a removed snapshot is dropped, so the log stays
    a line of ancestors; partition statistics of removed snapshots go with them."""
    t, ids = history_table(catalog, [10, 8, 6, 0.001])
    loc = t.metadata.location
    register_statistics(t, {}, {ids[1]: f"{loc}/metadata/p1.stats",
                                ids[3]: f"{loc}/metadata/p3.stats"})
    t.manage_snapshots().rollback_to(ids[1]).commit()
    t.manage_snapshots().set_current(ids[3]).commit()
    log_before = [e.snapshot_id for e in t.refresh().metadata.snapshot_log]
    assert log_before == [*ids, ids[1], ids[3]]
    expire_snapshots(t, snapshot_ids=[ids[1]])
    md = t.refresh().metadata
    assert [e.snapshot_id for e in md.snapshot_log] == [ids[3]]
    assert [p.snapshot_id for p in md.partition_statistics] == [ids[3]]
    assert not t.io.exists(f"{loc}/metadata/p1.stats")
