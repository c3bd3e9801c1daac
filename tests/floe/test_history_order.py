"""Metadata whose history goes back in time is never written (Iceberg Java's ``TableMetadata``
rules, one minute of tolerance): the snapshot log and the metadata log sorted, last-updated-ms
not before either's last entry, a new snapshot not before its parent. A commit stamped by a
clock that is behind fails without retrying and leaves the table and its directory as they
were; tests/interop/test_java_loads_floe_history.py holds the same decisions against Java."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.clock import ManualClock, use_clock
from floe.errors import ValidationError
from floe.metadata import TableMetadata, check_history_order, new_table_metadata
from floe.partitioning import UNPARTITIONED
from floe.schema import Schema
from floe.snapshots import MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRefType
from floe.sorting import UNSORTED_SORT_ORDER
from floe.table.updates import AddSnapshot, SetProperties, SetSnapshotRef, apply_updates
from floe.types import LONG, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True))
T = 1_700_000_000_000
MINUTE = 60_000


def _md(last_updated: int, snapshot_log: Sequence[int] = (),
        metadata_log: Sequence[int] = ()) -> TableMetadata:
    with use_clock(ManualClock(last_updated)):
        md = new_table_metadata(SCHEMA, UNPARTITIONED, UNSORTED_SORT_ORDER, "/t")
    return dataclasses.replace(
        md,
        snapshot_log=tuple(SnapshotLogEntry(ts, i) for i, ts in enumerate(snapshot_log)),
        metadata_log=tuple(MetadataLogEntry(ts, f"/t/metadata/v{i}.metadata.json")
                           for i, ts in enumerate(metadata_log)))


@pytest.mark.parametrize(("last_updated", "snapshot_log", "metadata_log", "problem"), [
    (T, [T - 2 * MINUTE, T - MINUTE, T], [T - 3 * MINUTE, T - MINUTE], None),
    (T, [T, T - MINUTE + 1, T], [], None),  # within a minute: clock skew is tolerated
    (T, [], [T, T - MINUTE + 1], None),
    (T + 5 * MINUTE, [T, T - MINUTE - 1], [], "snapshot log goes back in time"),
    (T + 5 * MINUTE, [], [T, T - 2 * MINUTE], "metadata log goes back in time"),
    (T - MINUTE - 1, [T], [], "before the last snapshot log entry"),
    (T - MINUTE - 1, [], [T], "before the last metadata log entry"),
    (T - MINUTE, [T], [T], None),
], ids=["sorted", "snapshot-log-skew", "metadata-log-skew", "snapshot-log-back",
        "metadata-log-back", "updated-before-snapshot-log", "updated-before-metadata-log",
        "updated-a-minute-before"])
def test_history_order_rules(last_updated: int, snapshot_log: list[int],
                             metadata_log: list[int], problem: str | None) -> None:
    md = _md(last_updated, snapshot_log, metadata_log)
    if problem is None:
        check_history_order(md)
    else:
        with pytest.raises(ValidationError, match=problem):
            check_history_order(md)


def _snap(sid: int, parent: int | None, seq: int, ts: int) -> Snapshot:
    return Snapshot(sid, parent, seq, ts, f"/t/metadata/snap-{sid}.avro",
                    {"operation": "append"}, 0)


def test_a_snapshot_more_than_a_minute_before_its_parent_is_refused_on_any_branch() -> None:
    md = apply_updates(_md(T), [AddSnapshot(_snap(1, None, 1, T + 10 * MINUTE)),
                                SetSnapshotRef("main", 1)])
    # a branch commit adds no snapshot-log entry: the parent rule is what refuses it
    with pytest.raises(ValidationError, match="before its parent 1"):
        apply_updates(md, [AddSnapshot(_snap(2, 1, 2, T + 8 * MINUTE)),
                           SetSnapshotRef("dev", 2, SnapshotRefType.BRANCH)])
    ok = apply_updates(md, [AddSnapshot(_snap(2, 1, 2, T + 9 * MINUTE + 1)),
                            SetSnapshotRef("dev", 2, SnapshotRefType.BRANCH)])
    assert ok.refs["dev"].snapshot_id == 2


def test_every_fold_is_checked_even_from_a_broken_base() -> None:
    """A table another writer left out of order (Java would not load it) gets no new
    version from floe either: the result would still be refused by Java."""
    broken = _md(T + MINUTE, [T + MINUTE, T - 5 * MINUTE])
    with pytest.raises(ValidationError, match="snapshot log goes back in time"):
        apply_updates(broken, [SetProperties({"k": "v"})], "/t/metadata/v1.metadata.json",
                      now_ms=T + 2 * MINUTE)


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def test_a_commit_from_a_clock_behind_fails_and_leaves_everything_as_it_was(
        tmp_path: Path) -> None:
    catalog = FileSystemCatalog("c", str(tmp_path / "wh"))
    clock = ManualClock(T)
    with use_clock(clock):
        table = catalog.create_table("db.t", SCHEMA, properties={
            "commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "2"})
        clock.set(T + 10 * MINUTE)
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        before, location = _files(table.location), table.metadata_location

        clock.set(T + 8 * MINUTE)  # this committer's clock is two minutes behind
        for change in (lambda: table.append(pa.table({"id": pa.array([2], pa.int64())})),
                       lambda: table.new_transaction().set_properties({"k": "v"}).commit(),
                       lambda: table.manage_snapshots().create_tag("t", table.metadata
                                                                   .current_snapshot_id)
                       .commit()):
            with pytest.raises(ValidationError, match="clock"):
                change()
            assert catalog.load_table("db.t").metadata_location == location
            assert _files(table.location) == before

        clock.set(T + 9 * MINUTE + 30_000)  # 30 s behind: within Java's tolerance
        table.append(pa.table({"id": pa.array([2], pa.int64())}))
        md = catalog.load_table("db.t").metadata
        assert md.last_updated_ms == T + 9 * MINUTE + 30_000
        assert [e.timestamp_ms for e in md.snapshot_log] == [T + 10 * MINUTE,
                                                             T + 9 * MINUTE + 30_000]
