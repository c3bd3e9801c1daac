"""Snapshot management on real file-system tables: rollback, set-current, cherry-pick, branches
and tags, commits to branches, write-audit-publish, and the conflicts between writers."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, NotFound, ValidationError
from floe.scan.readers import plan_to_table
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.snapshots import MAIN_BRANCH, SnapshotRefType
from floe.table import Table
from floe.table.manage_snapshots import PUBLISHED_WAP_ID, SOURCE_SNAPSHOT_ID
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i % 2}" for i in ids]})


def ids(t: Table, **kw: object) -> list[int]:
    plan = plan_files(t.io, t.metadata, **kw)  # type: ignore[arg-type]
    return sorted(plan_to_table(t.io, plan).column("id").to_pylist())


@pytest.fixture
def catalog(tmp_path: Path) -> FileSystemCatalog:
    return FileSystemCatalog("c", str(tmp_path))


@pytest.fixture
def table(catalog: FileSystemCatalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, properties=FAST)
    for batch in ((1, 2), (3,), (4,)):
        t.append(rows(*batch))
    return t


def history(t: Table) -> list[int]:
    return [s.snapshot_id for s in t.metadata.ancestors_of(t.metadata.current_snapshot_id)]


def metadata_files(t: Table) -> list[str]:
    return sorted(p.name for p in (Path(t.location) / "metadata").iterdir()
                  if p.name.endswith(".metadata.json"))


# -- rollback and set-current ---------------------------------------------------------------


def test_rollback_to_an_ancestor_and_set_current_back(table: Table) -> None:
    s1, s2, s3 = reversed(history(table))
    table.manage_snapshots().rollback_to(s2).commit()
    assert table.current_snapshot().snapshot_id == s2
    assert ids(table) == [1, 2, 3]
    assert table.metadata.snapshot_log[-1].snapshot_id == s2
    # s3 is no longer an ancestor: rollback refuses it, set-current takes it
    with pytest.raises(ValidationError, match="not an ancestor of the current snapshot"):
        table.manage_snapshots().rollback_to(s3)
    table.manage_snapshots().set_current(s3).commit()
    assert ids(table) == [1, 2, 3, 4]
    assert table.metadata.refs[MAIN_BRANCH].snapshot_id == s3


def test_rollback_to_time_takes_the_newest_ancestor_at_or_before(table: Table) -> None:
    snaps = list(reversed([table.snapshot_by_id(i) for i in history(table)]))
    # exactly at a snapshot's commit time: that snapshot (Java would take the one before)
    table.manage_snapshots().rollback_to_time(snaps[1].timestamp_ms).commit()
    assert table.current_snapshot().snapshot_id == snaps[1].snapshot_id
    with pytest.raises(NotFound, match="no ancestor"):
        table.manage_snapshots().rollback_to_time(snaps[0].timestamp_ms - 1)


@pytest.mark.parametrize("call", ["rollback_to", "set_current", "cherry_pick"])
def test_unknown_snapshot_is_refused(table: Table, call: str) -> None:
    before = metadata_files(table)
    with pytest.raises(NotFound, match="snapshot 42 does not exist"):
        getattr(table.manage_snapshots(), call)(42)
    assert metadata_files(table) == before


def test_rollback_fails_when_main_moved_since_it_was_decided(catalog: FileSystemCatalog,
                                                             table: Table) -> None:
    s1 = history(table)[-1]
    builder = table.manage_snapshots().rollback_to(s1)
    other = catalog.load_table("db.t")
    other.append(rows(5))  # a writer the rollback did not see
    with pytest.raises(CommitConflict, match="ref 'main'"):
        builder.commit()
    table.refresh()
    assert ids(table) == [1, 2, 3, 4, 5]  # the concurrent append is not dropped


# -- branches and tags ------------------------------------------------------------------------


def test_create_replace_rename_remove_refs(table: Table) -> None:
    s1, s2, s3 = reversed(history(table))
    table.manage_snapshots().create_branch(
        "dev", s2, min_snapshots_to_keep=2, max_snapshot_age_ms=1000, max_ref_age_ms=5000
    ).create_tag("v1", s1, max_ref_age_ms=9000).commit()
    dev = table.metadata.refs["dev"]
    assert (dev.snapshot_id, dev.ref_type, dev.min_snapshots_to_keep, dev.max_snapshot_age_ms,
            dev.max_ref_age_ms) == (s2, SnapshotRefType.BRANCH, 2, 1000, 5000)
    assert table.metadata.refs["v1"].ref_type is SnapshotRefType.TAG
    table.manage_snapshots().replace_branch("dev", s3).replace_tag("v1", s2).commit()
    assert table.metadata.refs["dev"].snapshot_id == s3
    assert table.metadata.refs["dev"].min_snapshots_to_keep == 2  # retention kept
    table.manage_snapshots().rename_branch("dev", "feature").commit()
    assert set(table.metadata.refs) == {"main", "feature", "v1"}
    table.manage_snapshots().set_retention("feature", min_snapshots_to_keep=7).commit()
    assert table.metadata.refs["feature"].min_snapshots_to_keep == 7
    assert table.metadata.refs["feature"].max_snapshot_age_ms == 1000
    table.manage_snapshots().remove_branch("feature").remove_tag("v1").commit()
    assert set(table.metadata.refs) == {"main"}


@pytest.mark.parametrize(("build", "error"), [
    (lambda b: b.create_branch("main"), "already exists"),
    (lambda b: b.remove_branch("main"), "cannot remove the main branch"),
    (lambda b: b.rename_branch("main", "x"), "cannot rename the main branch"),
    (lambda b: b.remove_tag("nope"), "no tag named 'nope'"),
    (lambda b: b.create_tag("t").remove_branch("t"), "'t' is a tag, not a branch"),
    (lambda b: b.create_tag("t2", min_snapshots_to_keep=3), "unexpected keyword"),
    (lambda b: b.create_branch(""), "must not be empty"),
])
def test_ref_mistakes_are_refused(table: Table, build: object, error: str) -> None:
    before = metadata_files(table)
    with pytest.raises((ValidationError, NotFound, TypeError), match=error):
        build(table.manage_snapshots())  # type: ignore[operator]
    assert metadata_files(table) == before


def test_tags_take_no_snapshot_retention(table: Table) -> None:
    table.manage_snapshots().create_tag("t").commit()
    with pytest.raises(ValidationError, match="tags cannot have min-snapshots-to-keep"):
        table.manage_snapshots().set_retention("t", min_snapshots_to_keep=2)


def test_commits_to_a_branch_leave_main_alone(table: Table) -> None:
    main_before = table.current_snapshot().snapshot_id
    table.manage_snapshots().create_branch("dev", min_snapshots_to_keep=3).commit()
    table.append(rows(10, 11), branch="dev")
    table.refresh()
    assert table.current_snapshot().snapshot_id == main_before
    assert ids(table) == [1, 2, 3, 4]
    assert ids(table, ref="dev") == [1, 2, 3, 4, 10, 11]
    dev = table.metadata.refs["dev"]
    assert dev.min_snapshots_to_keep == 3  # a commit keeps the branch's retention
    assert table.snapshot_by_id(dev.snapshot_id).parent_snapshot_id == main_before
    victim = plan_files(table.io, table.metadata, ref="dev", row_filter="id = 10").tasks[0]
    table.delete_files([victim.file_path], branch="dev")
    assert ids(table, ref="dev") == [1, 2, 3, 4]
    assert ids(table) == [1, 2, 3, 4]
    # a commit to a branch that does not exist creates it at the current snapshot
    table.append(rows(20), branch="new")
    assert ids(table, ref="new") == [1, 2, 3, 4, 20]


def test_commits_to_a_tag_are_refused(table: Table) -> None:
    table.manage_snapshots().create_tag("v1").commit()
    with pytest.raises(ValidationError, match="'v1': it is a tag"):
        table.append(rows(9), branch="v1")


def test_fast_forward(table: Table) -> None:
    s1 = history(table)[-1]
    table.manage_snapshots().create_branch("old", s1).create_branch("dev").commit()
    table.append(rows(7), branch="dev")
    table.manage_snapshots().fast_forward("main", "dev").commit()
    assert ids(table) == [1, 2, 3, 4, 7]
    table.append(rows(8))
    with pytest.raises(ValidationError, match="'dev' .* is not an ancestor of 'old'"):
        table.manage_snapshots().fast_forward("dev", "old")
    table.manage_snapshots().fast_forward("created", "main").commit()  # missing: created
    assert table.metadata.refs["created"].snapshot_id == table.current_snapshot().snapshot_id


def test_two_writers_creating_one_branch(catalog: FileSystemCatalog, table: Table) -> None:
    a = catalog.load_table("db.t").manage_snapshots().create_branch("b", history(table)[-1])
    catalog.load_table("db.t").manage_snapshots().create_branch("b").commit()
    with pytest.raises(CommitConflict, match="ref 'b' is at snapshot"):
        a.commit()


# -- cherry-pick and write-audit-publish -----------------------------------------------------


def test_cherry_pick_an_append_onto_a_diverged_main(table: Table) -> None:
    table.manage_snapshots().create_branch("dev").commit()
    table.append(rows(10), branch="dev")
    picked = table.metadata.refs["dev"].snapshot_id
    table.append(rows(5))  # main moves on: no fast-forward possible
    table.manage_snapshots().cherry_pick(picked).commit()
    current = table.current_snapshot()
    assert current.snapshot_id != picked
    assert current.summary[SOURCE_SNAPSHOT_ID] == str(picked)
    assert current.summary["operation"] == "append"
    assert current.summary["added-records"] == "1"
    assert ids(table) == [1, 2, 3, 4, 5, 10]
    with pytest.raises(CommitConflict, match=f"already cherry-picked as snapshot "
                       f"{current.snapshot_id}"):
        table.manage_snapshots().cherry_pick(picked)


def test_cherry_pick_fast_forwards_a_child_of_the_current_snapshot(table: Table) -> None:
    table.manage_snapshots().create_branch("dev").commit()
    table.delete_files([plan_files(table.io, table.metadata, row_filter="id = 4")
                        .tasks[0].file_path], branch="dev")
    picked = table.metadata.refs["dev"].snapshot_id
    table.manage_snapshots().cherry_pick(picked).commit()
    assert table.current_snapshot().snapshot_id == picked  # no new snapshot
    assert ids(table) == [1, 2, 3]
    with pytest.raises(CommitConflict, match="already an ancestor"):
        table.manage_snapshots().cherry_pick(picked)


def test_cherry_pick_of_a_delete_that_is_not_a_fast_forward_is_refused(table: Table) -> None:
    table.manage_snapshots().create_branch("dev").commit()
    table.delete_files([plan_files(table.io, table.metadata, row_filter="id = 4")
                        .tasks[0].file_path], branch="dev")
    picked = table.metadata.refs["dev"].snapshot_id
    table.append(rows(6))
    before = metadata_files(table)
    with pytest.raises(ValidationError, match="only appends, dynamic partition overwrites"):
        table.manage_snapshots().cherry_pick(picked)
    assert metadata_files(table) == before


def _dynamic_overwrite(t: Table, new: pa.Table, branch: str) -> None:
    from floe.table.writer import write_data_files

    files = write_data_files(t.io, t.metadata, new)
    parts = {f.partition for f in files}
    live = plan_files(t.io, t.metadata, ref=branch).tasks
    old = [task.file_path for task in live if task.data_file.partition in parts]
    t.new_transaction().overwrite(old, files, branch=branch, summary_properties={
        "replace-partitions": "true"}).commit()


def test_cherry_pick_a_dynamic_overwrite(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.p", SCHEMA, spec=parse_partition_by("s", SCHEMA),
                             properties=FAST)
    t.append(rows(1, 2, 3, 4))
    t.manage_snapshots().create_branch("dev").create_branch("dev2").commit()
    _dynamic_overwrite(t, rows(11), "dev")  # replaces partition s1 (ids 1, 3)
    picked = t.metadata.refs["dev"].snapshot_id
    t.append(rows(20))  # partition s0: not touched by the overwrite
    t.manage_snapshots().cherry_pick(picked).commit()
    assert ids(t) == [2, 4, 11, 20]
    assert t.current_snapshot().summary[SOURCE_SNAPSHOT_ID] == str(picked)
    # an overwrite whose partition changed since its parent is refused
    _dynamic_overwrite(t, rows(21), "dev2")
    picked2 = t.metadata.refs["dev2"].snapshot_id
    t.append(rows(31))  # partition s1 changes on main
    with pytest.raises(CommitConflict):
        t.manage_snapshots().cherry_pick(picked2).commit()


def test_write_audit_publish(catalog: FileSystemCatalog, table: Table) -> None:
    table.set_properties({"write.wap.enabled": "true"})
    table.append(rows(50), wap_id="job-1")
    staged = next(s for s in table.snapshots() if s.summary.get("wap.id") == "job-1")
    assert table.current_snapshot().snapshot_id != staged.snapshot_id
    assert ids(table) == [1, 2, 3, 4]
    assert ids(table, snapshot_id=staged.snapshot_id) == [1, 2, 3, 4, 50]
    table.append(rows(5))  # main moved: publishing makes a new snapshot
    table.manage_snapshots().publish_wap("job-1").commit()
    summary = table.current_snapshot().summary
    assert summary[PUBLISHED_WAP_ID] == "job-1"
    assert summary[SOURCE_SNAPSHOT_ID] == str(staged.snapshot_id)
    assert ids(table) == [1, 2, 3, 4, 5, 50]
    with pytest.raises(CommitConflict, match="wap.id 'job-1' was already published"):
        table.manage_snapshots().publish_wap("job-1")
    with pytest.raises(NotFound, match="no snapshot .* staged with wap.id 'nope'"):
        table.manage_snapshots().publish_wap("nope")


def test_cherry_pick_twice_concurrently(catalog: FileSystemCatalog, table: Table) -> None:
    table.manage_snapshots().create_branch("dev").commit()
    table.append(rows(10), branch="dev")
    picked = table.metadata.refs["dev"].snapshot_id
    table.append(rows(5))
    first = catalog.load_table("db.t").manage_snapshots().cherry_pick(picked)
    second = catalog.load_table("db.t").manage_snapshots().cherry_pick(picked)
    first.commit()
    with pytest.raises(CommitConflict, match="already cherry-picked"):
        second.commit()
    table.refresh()
    assert ids(table) == [1, 2, 3, 4, 5, 10]
    # the loser's manifest list and manifests were cleaned up
    listed = {p.name for p in (Path(table.location) / "metadata").iterdir()
              if p.name.startswith("snap-")}
    assert listed == {Path(s.manifest_list).name for s in table.snapshots()}
