"""floe.diff.metadata_changes: what one commit did, in words, from the metadata file before it
and the one it wrote: the audit trail's sentences for every engine's commits."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.diff import metadata_changes, snapshot_words
from floe.maintenance.compaction import compact
from floe.maintenance.expire import expire_snapshots
from floe.metadata import TableMetadata, parse_metadata
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.snapshots import Operation, Snapshot
from floe.table import Table
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "kind", STRING))


def _rows(first: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + n), pa.int64()),
                     "kind": pa.array([("a", "b")[i % 2] for i in range(first, first + n)])})


def _versions(table: Table) -> list[TableMetadata]:
    md = table.metadata
    files = [e.metadata_file for e in md.metadata_log] + [table.metadata_location]
    return [parse_metadata(table.io.read(f), f) for f in files]


def _words(table: Table, since: int) -> list[list[str]]:
    """The words of every commit after the first ``since`` versions."""
    versions = _versions(table)
    return [metadata_changes(versions[i - 1], versions[i])
            for i in range(max(1, since), len(versions))]


@pytest.fixture
def table(tmp_path: Path) -> Table:
    catalog = FileSystemCatalog("local", str(tmp_path))
    catalog.create_namespace(("ns",))
    return catalog.create_table("ns.t", SCHEMA, parse_partition_by("kind", SCHEMA),
                                properties={"commit.manifest-merge.enabled": "false"})


def test_creation_and_appends(table: Table) -> None:
    table.append(_rows(0, 10))
    table.append(_rows(10, 1))
    first, second = (s.snapshot_id for s in table.snapshots())
    versions = _versions(table)
    assert metadata_changes(None, versions[0]) == [
        "table created (format v2, 2 columns, partitioned by kind = identity(kind))"]
    assert _words(table, 1) == [
        [f"snapshot {first} on main: appended 10 rows in 2 data files"],
        [f"snapshot {second} on main: appended 1 row in 1 data file"]]


def test_refs_rollback_and_fast_forward(table: Table) -> None:
    for i in range(3):
        table.append(_rows(i * 10, 10))
    a, b, c = (s.snapshot_id for s in table.snapshots())
    start = len(_versions(table))
    table.manage_snapshots().create_tag("v1", b).commit()
    table.manage_snapshots().create_branch("dev", a).commit()
    table.manage_snapshots().rollback_to(b).commit()
    table.manage_snapshots().fast_forward("dev", "main").commit()
    table.manage_snapshots().rename_branch("dev", "work").commit()
    table.manage_snapshots().replace_tag("v1", c).commit()
    table.manage_snapshots().set_retention("work", min_snapshots_to_keep=3).commit()
    table.manage_snapshots().remove_tag("v1").commit()
    assert _words(table, start) == [
        [f"tag v1 created on {b}"],
        [f"branch dev created on {a}"],
        [f"rolled back main from {c} to {b}"],
        [f"fast-forwarded dev from {a} to {b}"],
        ["branch dev renamed to work"],
        [f"tag v1 moved from {b} to {c}"],
        ["retention of branch work changed"],
        [f"tag v1 removed (it was on {c})"]]


def test_schema_spec_sort_order_and_properties(table: Table) -> None:
    start = len(_versions(table))
    table.update_schema().add_column("referrer", "string").rename_column(
        "kind", "category").commit()
    table.update_spec().add_field("bucket(4, id)").commit()
    table.replace_sort_order().desc("id").asc("referrer").commit()
    table.set_properties({"write.format.default": "parquet", "owner": "web"})
    table.new_transaction().remove_properties(["owner"]).commit()
    words = _words(table, start)
    assert words[0] == ["schema 0 → 1: renamed kind to category, added referrer"]
    assert words[1] == ["partition spec 0 → 1: added id_bucket_4 = bucket[4](id)"]
    assert words[2] == ["sort order 0 → 1: id desc nulls last, referrer asc nulls first"]
    assert words[3] == ["set owner=web, write.format.default=parquet"]
    assert words[4] == ["removed owner"]


def test_branch_writes_deletes_compaction_and_expiry(table: Table) -> None:
    for i in range(4):
        table.append(_rows(i * 10, 10))
    table.manage_snapshots().create_branch("dev").commit()
    start = len(_versions(table))
    table.append(_rows(100, 3), branch="dev")
    table.delete_where("id < 5", mode="merge-on-read")
    result = compact(table, options={"min-input-files": "2"})
    assert result.rewritten_data_files_count == 8 and result.added_data_files_count == 2
    expire_snapshots(table, snapshot_ids=[table.snapshots()[0].snapshot_id])
    dev = table.metadata.refs["dev"].snapshot_id
    compacted = table.current_snapshot().snapshot_id
    deleted = table.current_snapshot().parent_snapshot_id
    words = _words(table, start)
    assert words[0] == [f"snapshot {dev} on dev: appended 3 rows in 2 data files"]
    assert words[1] == [f"snapshot {deleted} on main: delete: added 2 delete files "
                        "(5 position deletes)"]
    assert words[2] == [f"snapshot {compacted} on main: compacted 8 data files into 2, "
                        "removed 2 delete files"]
    assert words[3] == ["expired 1 snapshot"]


@pytest.mark.parametrize(("operation", "summary", "words"), [
    (Operation.REPLACE, {"manifests-created": "1", "manifests-replaced": "4"},
     "rewrote 4 manifests into 1"),
    (Operation.OVERWRITE, {"added-data-files": "2", "added-records": "1500",
                           "deleted-data-files": "1", "deleted-records": "1000"},
     "overwrite: added 1,500 rows in 2 data files, removed 1 data file (1,000 rows)"),
    (Operation.DELETE, {"deleted-data-files": "3", "deleted-records": "30"},
     "delete: removed 3 data files (30 rows)"),
    (Operation.DELETE, {"added-delete-files": "1", "added-equality-deletes": "2"},
     "delete: added 1 delete file (2 equality deletes)"),
])
def test_snapshot_words_from_java_summary_keys(operation: Operation, summary: dict[str, str],
                                               words: str) -> None:
    snap = Snapshot(snapshot_id=1, parent_snapshot_id=None, sequence_number=1, timestamp_ms=0,
                    manifest_list="x", summary={"operation": str(operation), **summary})
    assert snapshot_words(snap) == words
