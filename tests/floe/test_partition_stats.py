"""Partition statistics files (floe.maintenance.partition_stats, Java PartitionStatsHandler):
full and incremental computes agree with the live files, files round-trip, a snapshot that
has one is a no-op, an unusable previous file falls back to a full compute, and the command
registers the file in one commit."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import ValidationError
from floe.inspect import live_entries
from floe.maintenance.compaction import compact
from floe.maintenance.partition_stats import (
    compute_partition_stats,
    compute_stats,
    plan_partition_stats,
    read_partition_stats,
    unified_partition_type,
    write_partition_stats,
)
from floe.maintenance.rewrite_manifests import rewrite_manifests
from floe.manifest import read_manifest_list
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import DATE, LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, True), NestedField(2, "cat", STRING, False),
                NestedField(3, "d", DATE, False))


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "cat": [f"c{i % 3}" if i % 7 else None for i in ids],
                     "d": pa.array([19000 + i % 2 for i in ids], pa.date32())})


@pytest.fixture
def table(tmp_path: Path) -> Any:
    cat = FileSystemCatalog("c", str(tmp_path / "wh"))
    t = cat.create_table("db.t", SCHEMA, spec=parse_partition_by("cat", SCHEMA),
                         properties={"commit.manifest-merge.enabled": "false"})
    for k in range(3):
        t.append(rows(range(k * 10, k * 10 + 10)))
    return t


def counters(stats: Any) -> dict[Any, tuple[int, ...]]:
    return {(s.spec_id, s.partition): (s.data_record_count, s.data_file_count,
                                       s.total_data_file_size_in_bytes,
                                       s.position_delete_record_count,
                                       s.position_delete_file_count,
                                       s.equality_delete_record_count,
                                       s.equality_delete_file_count)
            for s in stats if any((s.data_file_count, s.position_delete_file_count,
                                   s.equality_delete_file_count))}


def brute_force(t: Any) -> dict[Any, tuple[int, ...]]:
    """Counters straight from the live files, partitions coerced by hand."""
    md = t.refresh().metadata
    ids = [f.field_id for f in unified_partition_type(md).fields]
    out: dict[Any, list[int]] = defaultdict(lambda: [0] * 7)
    for m, e in live_entries(t.io, md.current_snapshot()):
        spec = md.spec_by_id(m.partition_spec_id)
        values = dict(zip([f.field_id for f in spec.fields], e.data_file.partition, strict=True))
        key = (m.partition_spec_id, tuple(values.get(i) for i in ids))
        df = e.data_file
        c, n = int(df.content), df.record_count
        slot = out[key]
        if c == 0:
            slot[0] += n
            slot[1] += 1
            slot[2] += df.file_size_in_bytes
        elif c == 1:
            slot[3] += n
            slot[4] += 1
        else:
            slot[5] += n
            slot[6] += 1
    return {k: tuple(v) for k, v in out.items()}


def full(t: Any) -> Any:
    md = t.refresh().metadata
    return compute_stats(t.io, md, read_manifest_list(t.io, md.current_snapshot().manifest_list))


def change(t: Any) -> None:
    """Deletes of both kinds, a copy-on-write delete, a new spec, compaction, manifests."""
    t.delete_where("id = 4 OR id = 15", mode="merge-on-read")
    t.delete_equal(["id"], pa.table({"id": pa.array([8, 22], pa.int64())}))
    t.delete_where("id >= 27", mode="copy-on-write")
    t.update_spec().add_field("day(d)").commit()
    t.append(rows(range(40, 52)))
    compact(t, options={"rewrite-all": "true", "min-input-files": "1"}, filter="cat = 'c1'")
    rewrite_manifests(t)


def test_full_compute_matches_the_live_files(table: Any) -> None:
    change(table)
    md = table.refresh().metadata
    assert [f.name for f in unified_partition_type(md).fields] == ["cat", "d_day"]
    stats = full(table)
    assert counters(stats.values()) == brute_force(table)
    snap_ids = {s.snapshot_id for s in md.snapshots}
    assert all(s.last_updated_snapshot_id in snap_ids for s in stats.values())


def test_incremental_compute_equals_full(table: Any) -> None:
    first = compute_partition_stats(table)
    assert first.committed and first.incremental_from is None and first.partitions == 4
    change(table)
    second = compute_partition_stats(table)
    assert second.incremental_from == first.snapshot_id
    md = table.refresh().metadata
    got = read_partition_stats(table.io, md, second.statistics_file)
    assert counters(got) == counters(full(table).values()) == brute_force(table)
    latest = {(s.spec_id, s.partition): s.last_updated_snapshot_id for s in got}
    assert latest == {k: s.last_updated_snapshot_id for k, s in full(table).items()
                      if k in latest}
    assert [p.snapshot_id for p in md.partition_statistics] == [first.snapshot_id,
                                                               second.snapshot_id]


def test_the_plan_says_what_the_compute_then_reads(table: Any) -> None:
    def compute() -> tuple[Any, int]:
        seen: list[Any] = []
        result = compute_partition_stats(table, on_progress=seen.append)
        totals = {p.total for p in seen if p.stage == "reading manifests"}
        return result, totals.pop() if totals else 0

    plan = plan_partition_stats(table)
    assert (plan.snapshot_id, plan.incremental_from, plan.existing_file) == (
        table.current_snapshot().snapshot_id, None, None)
    first, read = compute()
    assert (plan.manifests, plan.entries) == (read, 12)  # 3 appends, 4 partitions (1 null)
    change(table)
    plan = plan_partition_stats(table.refresh())
    second, read = compute()
    assert (plan.snapshot_id, plan.incremental_from, plan.manifests) == (
        second.snapshot_id, first.snapshot_id, read)
    assert plan.entries is not None and plan.entries > plan.manifests
    again = plan_partition_stats(table.refresh())
    assert again.existing_file == second.statistics_file.statistics_path
    assert (again.manifests, compute()[0].reused) == (0, True)


def test_rows_are_sorted_and_round_trip(table: Any) -> None:
    change(table)
    md = table.refresh().metadata
    stats = list(full(table).values())
    written = write_partition_stats(table.io, md, md.current_snapshot_id, stats)
    back = read_partition_stats(table.io, md, written)
    assert sorted(back, key=repr) == sorted(stats, key=repr)
    parts = [s.partition for s in back]
    keys = [tuple((0,) if v is None else (1, v) for v in p) for p in parts]
    assert keys == sorted(keys) and parts[0][0] is None  # by partition, nulls first


def test_existing_file_is_reused_and_bad_previous_file_means_full(table: Any) -> None:
    first = compute_partition_stats(table)
    again = compute_partition_stats(table)
    assert again.reused and again.statistics_file == first.statistics_file
    Path(first.statistics_file.statistics_path).write_bytes(b"not parquet")
    table.append(rows(range(60, 63)))
    third = compute_partition_stats(table)
    assert third.incremental_from is None and "computed in full" in third.warnings[0]
    md = table.refresh().metadata
    assert counters(read_partition_stats(table.io, md, third.statistics_file)) \
        == brute_force(table)


def test_unpartitioned_and_unknown_snapshot_are_refused(tmp_path: Path) -> None:
    cat = FileSystemCatalog("c", str(tmp_path / "wh"))
    t = cat.create_table("db.u", SCHEMA)
    t.append(rows(range(3)))
    with pytest.raises(ValidationError, match="not partitioned"):
        compute_partition_stats(t)
    p = cat.create_table("db.p", SCHEMA, spec=parse_partition_by("cat", SCHEMA))
    assert compute_partition_stats(p).statistics_file is None  # no snapshot yet
    p.append(rows(range(3)))
    with pytest.raises(Exception, match="does not exist"):
        compute_partition_stats(p, 12345)


def test_command_registers_the_file(table: Any) -> None:
    run = subprocess.run([sys.executable, "-m", "floe.cli", "compute-partition-stats",
                          table.metadata_location.rsplit("/metadata/", 1)[0], "--json",
                          "--show"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    md = table.refresh().metadata
    assert doc["committed"] and [p.to_json() for p in md.partition_statistics] \
        == [doc["statistics_file"]]
    by_cat = {r["partition"]["cat"]: r["data_record_count"] for r in doc["rows"]}
    assert by_cat == {None: 5, "c0": 8, "c1": 8, "c2": 9}
