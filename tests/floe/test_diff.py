"""Schema history, spec history and snapshot diffs over a real table written by floe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.factories import write_history_table
from floe import inspect
from floe.catalog.filesystem import FileSystemCatalog
from floe.diff import schema_changes, schema_history, snapshot_diff, spec_history
from floe.manifest import ManifestFile, read_manifest, read_manifest_list
from floe.schema import Schema
from floe.table import Table
from floe.types import INT, LONG, STRING, NestedField


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    root = tmp_path_factory.mktemp("wh")
    write_history_table(root)
    return FileSystemCatalog("local", str(root)).load_table("shop.orders")


def _changes(rows: list[dict[str, Any]]) -> set[tuple[str, int, Any, Any]]:
    return {(c["change"], c["field_id"], c["old"], c["new"]) for c in rows}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (Schema(NestedField(1, "a", INT)), Schema(NestedField(1, "a", LONG)), {("promoted", 1, "int", "long")}),
        (Schema(NestedField(1, "a", INT)), Schema(NestedField(1, "b", INT)), {("renamed", 1, "a", "b")}),
        (Schema(NestedField(1, "a", INT)), Schema(), {("dropped", 1, "int", None)}),
        (Schema(), Schema(NestedField(2, "s", STRING)), {("added", 2, None, "string")}),
        (Schema(NestedField(1, "a", INT)), Schema(NestedField(1, "a", INT, required=True)),
         {("made-required", 1, False, True)}),
        (Schema(NestedField(1, "a", INT, doc="x")), Schema(NestedField(1, "a", INT, doc="y")),
         {("doc-changed", 1, "x", "y")}),
        (Schema(NestedField(1, "a", INT)), Schema(NestedField(1, "a", INT)), set()),
    ],
)
def test_schema_changes_match_fields_by_id(old: Schema, new: Schema, expected: set[Any]) -> None:
    assert _changes(schema_changes(old, new)) == expected


def test_schema_history_lists_changes_between_consecutive_ids(table: Table) -> None:
    rows = schema_history(table.metadata)
    assert [r["schema_id"] for r in rows] == [0, 1]
    assert rows[1]["is_current"] and not rows[0]["is_current"]
    assert _changes(rows[1]["changes"]) == {
        ("renamed", 3, "name", "label"), ("promoted", 4, "int", "long"),
        ("dropped", 5, "string", None), ("added", 6, None, "string"),
    }


def test_spec_history_shows_the_added_partition_field(table: Table) -> None:
    rows = spec_history(table.metadata)
    assert [r["spec_id"] for r in rows] == [0, 1]
    assert rows[1]["is_default"]
    assert rows[1]["added"] == ["id_bucket = bucket[2](id)"] and rows[1]["removed"] == []


def _diff(table: Table, a: int, b: int, reads: list[str] | None = None) -> dict[str, Any]:
    md = table.metadata

    def read(m: ManifestFile) -> Any:
        if reads is not None:
            reads.append(m.manifest_path)
        return read_manifest(table.io, m)

    return snapshot_diff(
        md, md.snapshots[a], md.snapshots[b],
        list_manifests=lambda s: read_manifest_list(table.io, s.manifest_list or ""), read_entries=read,
    )


def test_snapshot_diff_equals_the_difference_of_live_file_lists(table: Table) -> None:
    md = table.metadata
    for a, b in [(0, 4), (4, 0), (1, 3), (3, 4)]:
        before = {r["file_path"]: r for r in inspect.file_rows(table.io, md, md.snapshots[a])}
        after = {r["file_path"]: r for r in inspect.file_rows(table.io, md, md.snapshots[b])}
        diff = _diff(table, a, b)
        assert [f["file_path"] for f in diff["added_files"]] == sorted(set(after) - set(before))
        assert [f["file_path"] for f in diff["removed_files"]] == sorted(set(before) - set(after))
        assert diff["added_rows"] == sum(after[p]["record_count"] for p in set(after) - set(before))
        assert diff["removed_rows"] == sum(before[p]["record_count"] for p in set(before) - set(after))
        for f in diff["added_files"]:
            assert f == after[f["file_path"]]


def test_snapshot_diff_reports_schema_and_spec_changes(table: Table) -> None:
    diff = _diff(table, 0, 3)
    assert (diff["from_schema_id"], diff["to_schema_id"]) == (0, 1)
    assert {c["change"] for c in diff["schema_changes"]} == {"renamed", "promoted", "dropped", "added"}
    assert diff["from_spec_ids"] == [0] and diff["to_spec_ids"] == [0, 1]


def test_snapshot_diff_does_not_read_manifests_both_snapshots_share(table: Table) -> None:
    reads: list[str] = []
    diff = _diff(table, 2, 3, reads)
    assert diff["manifests_shared"] >= 1
    assert len(reads) == diff["manifests_read"] == 1  # only the new append's manifest
    assert diff["added_rows"] == 6 and diff["removed_files"] == []


def test_same_snapshot_diff_is_empty(table: Table, tmp_path: Path) -> None:
    diff = _diff(table, 2, 2)
    assert diff["added_files"] == diff["removed_files"] == [] and diff["schema_changes"] == []
