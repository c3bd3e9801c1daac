"""Rewrite manifests: clustered by partition, the same files and rows, one replace snapshot,
data and delete manifests kept apart, dry-run, conflicts and clean-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, ValidationError
from floe.inspect import file_rows
from floe.scan.readers import plan_to_table
from floe.maintenance import Cancelled, Progress
from floe.maintenance.rewrite_manifests import rewrite_manifests
from floe.manifest import ManifestContent, ManifestEntryStatus, read_manifest, read_manifest_list
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.table import Table
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
PROPS = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5",
         "commit.manifest-merge.enabled": "false"}


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"p{i % 4}" for i in ids]})


def live(t: Table) -> list[tuple[Any, ...]]:
    return sorted((r["file_path"], r["record_count"])
                  for r in file_rows(t.io, t.metadata, t.current_snapshot()))


def ids(t: Table) -> list[int]:
    return sorted(plan_to_table(t.io, plan_files(t.io, t.metadata)).column("id").to_pylist())


def manifests(t: Table) -> list[Any]:
    return read_manifest_list(t.io, t.current_snapshot().manifest_list)


@pytest.fixture(params=[1, 2])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    t = FileSystemCatalog("c", str(tmp_path)).create_table(
        "db.t", SCHEMA, spec=parse_partition_by("s", SCHEMA), properties=PROPS,
        format_version=request.param)
    for i in range(12):
        t.append(rows(i, i + 1, i + 2))
    return t


def test_rewrite_clusters_by_partition_and_keeps_files(table: Table) -> None:
    before_files, before_ids = live(table), ids(table)
    seq_before = {e.data_file.file_path: (e.snapshot_id, e.sequence_number)
                  for m in manifests(table) for e in read_manifest(table.io, m)}
    assert len(manifests(table)) == 12
    third = sum(m.manifest_length for m in manifests(table)) // 3
    result = rewrite_manifests(table, target_size_bytes=third)
    table.refresh()
    after = manifests(table)
    assert len(after) in (3, 4)
    assert live(table) == before_files
    assert ids(table) == before_ids
    snap = table.current_snapshot()
    assert snap.summary["operation"] == "replace"
    assert snap.summary["manifests-replaced"] == "12"
    assert snap.summary["manifests-created"] == str(len(after))
    assert snap.summary["total-records"] == str(36)
    assert result.snapshot_id == snap.snapshot_id
    # clustered: each partition value in as few manifests as possible, sorted across them
    lowers = []
    for m in after:
        entries = read_manifest(table.io, m)
        assert {e.status for e in entries} == {ManifestEntryStatus.EXISTING}
        parts = [e.data_file.partition[0] for e in entries]
        assert parts == sorted(parts)
        lowers.append(parts[0])
        for e in entries:  # snapshot ids and sequence numbers are kept
            assert (e.snapshot_id, e.sequence_number) == seq_before[e.data_file.file_path]
    assert lowers == sorted(lowers)


def test_dry_run_writes_nothing(table: Table) -> None:
    location = table.metadata_location
    files = set((Path(table.location) / "metadata").iterdir())
    result = rewrite_manifests(table, dry_run=True)
    assert result.dry_run and result.snapshot_id is None
    assert len(result.rewritten_manifests) == 12
    assert result.planned == {"data": 1}
    assert set((Path(table.location) / "metadata").iterdir()) == files
    assert table.refresh().metadata_location == location


def test_dry_run_counts_what_the_run_then_does(table: Table) -> None:
    table.delete_where("id = 0")  # a manifest with a deleted entry: not counted
    before = len(manifests(table))
    third = sum(m.manifest_length for m in manifests(table)) // 3
    dry = rewrite_manifests(table, target_size_bytes=third, dry_run=True)
    done = rewrite_manifests(table, target_size_bytes=third)
    assert (dry.entries, dry.planned, dry.kept_manifests) == (
        done.entries, done.planned, done.kept_manifests)
    assert dry.entries == 35 and dry.planned["data"] == len(done.added_manifests)
    assert dry.kept_manifests + len(dry.rewritten_manifests) == before
    assert len(manifests(table.refresh())) == dry.kept_manifests + dry.planned["data"]


def test_delete_manifests_are_rewritten_apart(tmp_path: Path) -> None:
    t = FileSystemCatalog("c", str(tmp_path)).create_table("db.t", SCHEMA, properties=PROPS)
    for i in range(4):
        t.append(rows(i * 10, i * 10 + 1))
        t.delete_where(f"id = {i * 10}", mode="merge-on-read")
    before = ids(t)
    assert sum(m.content == ManifestContent.DELETES for m in manifests(t)) == 4
    rewrite_manifests(t)
    t.refresh()
    contents = sorted(m.content for m in manifests(t))
    assert contents == [ManifestContent.DATA, ManifestContent.DELETES]
    assert ids(t) == before


def test_nothing_to_do_commits_nothing(tmp_path: Path) -> None:
    t = FileSystemCatalog("c", str(tmp_path)).create_table("db.t", SCHEMA, properties=PROPS)
    t.append(rows(1))
    location = t.metadata_location
    result = rewrite_manifests(t)
    assert result.snapshot_id is None and not result.rewritten_manifests
    assert t.refresh().metadata_location == location


def third(t: Table) -> int:
    return sum(m.manifest_length for m in manifests(t)) // 3


def test_sort_by_and_bad_input(table: Table) -> None:
    with pytest.raises(ValidationError, match="cannot cluster manifests by 'nope'"):
        rewrite_manifests(table, sort_by=["nope"])
    with pytest.raises(ValidationError, match="no partition spec 7"):
        rewrite_manifests(table, spec_id=7)
    rewrite_manifests(table, sort_by=["s"], target_size_bytes=third(table))
    assert ids(table.refresh()) == sorted(i + k for i in range(12) for k in range(3))


def test_empty_table_is_refused(tmp_path: Path) -> None:
    t = FileSystemCatalog("c", str(tmp_path)).create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError, match="has no snapshot"):
        rewrite_manifests(t)


def test_concurrent_append_is_kept_and_concurrent_rewrite_conflicts(table: Table,
                                                                    tmp_path: Path) -> None:
    catalog = FileSystemCatalog("c", str(tmp_path))
    seen: list[Progress] = []
    other = catalog.load_table("db.t")

    def append_once(p: Progress) -> None:  # a writer slips in while the rewrite runs
        seen.append(p)
        if p.stage == "committing":
            other.append(rows(1000))

    rewrite_manifests(table, on_progress=append_once, target_size_bytes=third(table))
    table.refresh()
    assert 1000 in ids(table)
    stale = catalog.load_table("db.t")
    rewrite_manifests(catalog.load_table("db.t"), target_size_bytes=100_000)

    def listed() -> set[str]:
        return {p.name for p in (Path(table.location) / "metadata").iterdir()}

    before = listed()
    with pytest.raises(CommitConflict, match="no longer in snapshot"):
        rewrite_manifests(stale, target_size_bytes=100_000)
    assert listed() == before  # the loser's manifests and manifest list were deleted


def test_cancel_leaves_nothing_behind(table: Table) -> None:
    before = set((Path(table.location) / "metadata").iterdir())

    def cancel(p: Progress) -> None:
        if p.stage == "writing data manifests":
            raise Cancelled("stop")

    with pytest.raises(Cancelled):
        rewrite_manifests(table, on_progress=cancel, target_size_bytes=third(table))
    assert set((Path(table.location) / "metadata").iterdir()) == before
