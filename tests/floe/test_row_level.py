"""Row-level deletes and overwrites (floe.table.row_level) on real file-system tables: the
rows left compared with a plain Python model, the files and snapshots written, and the
validation of concurrent commits per isolation level as Spark + Iceberg Java validate them."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, ValidationError
from floe.scan.readers import plan_to_table
from floe.manifest import FileContent
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.scan.planning import plan_files
from floe.schema import Schema
from floe.table.row_level import plan_delete
from floe.types import LONG, STRING, ListType, NestedField, StructType

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "s", STRING),
    NestedField(3, "v", LONG),
)
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}
PARTS = ("p0", "p1", "p2")


def row(i: int) -> dict[str, Any]:
    """Row ``i``: partition ``s`` cycles p0/p1/p2, ``v`` is NULL for every fifth row."""
    return {"id": i, "s": PARTS[i % 3], "v": None if i % 5 == 0 else i * 10}


def rows(ids: Any) -> pa.Table:
    return pa.Table.from_pylist([row(i) for i in ids], schema=pa.schema(
        [("id", pa.int64()), ("s", pa.string()), ("v", pa.int64())]))


def make(catalog: FileSystemCatalog, name: str, *, partitioned: bool = True, version: int = 2,
         props: dict[str, str] | None = None, batches: Any = ((0, 10), (10, 20), (20, 30))
         ) -> Any:
    spec = parse_partition_by("identity(s)", SCHEMA) if partitioned else UNPARTITIONED
    t = catalog.create_table(f"db.{name}", SCHEMA, spec=spec, format_version=version,
                             properties={**FAST, **(props or {})})
    for lo, hi in batches:
        t.append(rows(range(lo, hi)))
    return t


def ids(table: Any, ref: str | None = None) -> list[int]:
    plan = plan_files(table.io, table.refresh().metadata, ref=ref)
    return sorted(plan_to_table(table.io, plan).column("id").to_pylist())


def live(table: Any, content: FileContent | None = None) -> list[Any]:
    from floe.inspect import live_entries

    return [e.data_file for _, e in live_entries(table.io, table.refresh().current_snapshot())
            if content is None or e.data_file.content == content]


def all_files(root: Any) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture
def catalog(tmp_path):
    return FileSystemCatalog("fs", str(tmp_path / "wh"))


# -- deletes: the rows left -----------------------------------------------------------------------

FILTERS = [
    # (filter, which rows it deletes in the model; SQL: NULL is not deleted)
    ("id >= 5 AND id < 12", lambda r: 5 <= r["id"] < 12),
    ("s = 'p1'", lambda r: r["s"] == "p1"),
    ("v > 100 OR s = 'p2'", lambda r: (r["v"] is not None and r["v"] > 100) or r["s"] == "p2"),
    ("v != 40", lambda r: r["v"] is not None and r["v"] != 40),
    ("NOT (v IN (10, 20, 30))", lambda r: r["v"] is not None and r["v"] not in (10, 20, 30)),
    ("v IS NULL", lambda r: r["v"] is None),
    ("id < 0", lambda r: False),
]
CASES = [(v, p, m) for v in (1, 2) for p in (False, True)
         for m in (("copy-on-write",) if v == 1 else ("copy-on-write", "merge-on-read"))]


@pytest.mark.parametrize("version, partitioned, mode", CASES)
@pytest.mark.parametrize("text, deleted", FILTERS, ids=[f for f, _ in FILTERS])
def test_delete_leaves_the_rows_sql_keeps(catalog, version, partitioned, mode, text, deleted):
    t = make(catalog, "t", partitioned=partitioned, version=version)
    t.delete_where(text, mode=mode)
    assert ids(t) == [i for i in range(30) if not deleted(row(i))]
    snap = t.current_snapshot()
    assert snap.summary["total-records"] == str(
        sum(f.record_count for f in live(t, FileContent.DATA)))
    if mode == "merge-on-read":
        assert all(f.content != FileContent.EQUALITY_DELETES for f in live(t))


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_mode_and_isolation_default_to_the_table_properties(catalog, mode):
    t = make(catalog, "t", props={"write.delete.mode": mode})
    t.delete_where("id = 3")
    kinds = {f.content for f in live(t)}
    assert (FileContent.POSITION_DELETES in kinds) == (mode == "merge-on-read")
    with pytest.raises(ValidationError, match="write.delete.isolation-level"):
        make(catalog, "u", props={"write.delete.isolation-level": "linear"}).delete_where(
            "id = 3")


def test_operations_and_summaries_as_java_writes_them(catalog):
    t = make(catalog, "cow", partitioned=False)
    t.delete_where("id = 3", mode="copy-on-write")
    s = t.current_snapshot().summary
    assert (s["operation"], s["deleted-data-files"], s["added-data-files"],
            s["deleted-records"], s["added-records"]) == ("overwrite", "1", "1", "10", "9")
    t.delete_where("id < 10", mode="copy-on-write")  # the rewritten file matches entirely now
    s = t.current_snapshot().summary
    assert (s["operation"], s["deleted-data-files"], s.get("added-data-files")) == (
        "delete", "1", None)
    m = make(catalog, "mor", partitioned=False)
    m.delete_where("id = 3 OR id = 13", mode="merge-on-read")
    s = m.current_snapshot().summary
    assert (s["operation"], s["added-position-delete-files"], s["added-position-deletes"],
            s["total-records"]) == ("delete", "1", "2", "30")


def test_files_matching_entirely_are_removed_without_being_read(catalog):
    for mode in ("copy-on-write", "merge-on-read"):
        t = make(catalog, f"t_{mode[0]}")
        plan = plan_delete(t.io, t.metadata, "s = 'p1' OR id = 5", mode=mode)
        whole = {x.file_path for x in plan.removed}
        assert len(whole) == 3 and all("/s=p1/" in p for p in whole)
        # id 5 may be in the first file of p0 and of p2 (by their bounds)
        assert len(plan.partial) == 2 and not any("/s=p1/" in x.file_path for x in plan.partial)
        for path in whole:  # reading any of them now would fail
            os.remove(path)
        t.delete_where("s = 'p1' OR id = 5", mode=mode)
        assert not whole & {f.file_path for f in live(t)}
        assert ids(t) == [i for i in range(30) if row(i)["s"] != "p1" and i != 5]


def test_plan_delete_previews_without_writing(catalog, tmp_path):
    t = make(catalog, "t")
    before = all_files(tmp_path)
    plan = plan_delete(t.io, t.metadata, "s = 'p0' OR v = 110")
    assert all_files(tmp_path) == before
    assert plan.mode == "copy-on-write" and plan.snapshot_id == t.current_snapshot().snapshot_id
    assert plan.rows_in_removed_files == 10 and not plan.metadata_only
    assert plan.rows_in_removed_files <= plan.estimated_deleted_rows <= (
        plan.rows_in_removed_files + plan.rows_in_partial_files)
    assert plan.to_json()["removed_files"] == [x.file_path for x in plan.removed]


def test_deletes_on_a_table_that_already_has_position_and_equality_deletes(catalog):
    for mode in ("copy-on-write", "merge-on-read"):
        t = make(catalog, f"t_{mode[0]}", partitioned=False)
        t.delete_where("id IN (1, 2, 11)", mode="merge-on-read")
        t.delete_equal(["v"], pa.table({"v": pa.array([30, None, 250], pa.int64())}))
        gone = {1, 2, 11, 3, 25} | {i for i in range(30) if i % 5 == 0}
        assert ids(t) == [i for i in range(30) if i not in gone]
        old = {f.file_path for f in live(t, FileContent.POSITION_DELETES)}
        t.delete_where("id < 5 OR id = 12", mode=mode)
        assert ids(t) == [i for i in range(30) if i not in gone | {0, 1, 2, 3, 4, 12}]
        if mode == "merge-on-read":  # only positions of the rows still live: ids 4 and 12
            (new,) = [f for f in live(t, FileContent.POSITION_DELETES)
                      if f.file_path not in old]
            got = [(r["file_path"], r["pos"]) for r in pq.read_table(new.file_path).to_pylist()]
            expected = sorted(
                (f.file_path, pq.read_table(f.file_path).column("id").to_pylist().index(i))
                for f in live(t, FileContent.DATA) for i in (4, 12)
                if i in pq.read_table(f.file_path).column("id").to_pylist())
            assert got == expected and len(got) == 2


def test_position_delete_files_one_per_partition_sorted_with_referenced_file(catalog):
    t = make(catalog, "t", batches=((0, 12), (12, 24)))  # two files in each partition
    t.delete_where("id IN (0, 3, 15, 21, 4)", mode="merge-on-read")  # p0: both files, p1: one
    files = live(t, FileContent.POSITION_DELETES)
    by_part = {f.partition: f for f in files}
    assert sorted(by_part) == [("p0",), ("p1",)] and len(files) == 2
    p0 = pq.read_table(by_part[("p0",)].file_path).to_pylist()
    assert [r["file_path"] for r in p0] == sorted(r["file_path"] for r in p0)
    assert len({r["file_path"] for r in p0}) == 2 and by_part[("p0",)].referenced_data_file is None
    p1 = by_part[("p1",)]
    assert p1.referenced_data_file and p1.record_count == 1
    assert pq.read_table(p1.file_path).column("file_path").to_pylist() == [
        p1.referenced_data_file]
    assert "/data/s=p1/" in p1.file_path and p1.file_path.endswith("-deletes.parquet")
    assert ids(t) == [i for i in range(24) if i not in (0, 3, 15, 21, 4)]


def test_a_filter_that_matches_no_row_commits_what_spark_commits(catalog):
    t = make(catalog, "t", partitioned=False)
    n = len(t.snapshots())
    t.delete_where("id = 3 AND v = 31", mode="merge-on-read")  # a candidate file, no row
    assert t.current_snapshot().summary["operation"] == "overwrite"
    assert t.current_snapshot().summary["changed-partition-count"] == "0"
    t.delete_where("id > 1000")  # no candidate file: Spark's empty metadata delete
    assert t.current_snapshot().summary["operation"] == "delete"
    t.delete_where("false")  # always false: Spark skips the command
    assert len(t.refresh().snapshots()) == n + 2
    assert ids(t) == list(range(30))


def test_merge_on_read_on_v1_and_unknown_columns_are_refused(catalog):
    t = make(catalog, "v1", version=1)
    with pytest.raises(ValidationError, match="format version 1 has no delete files"):
        t.delete_where("id = 1", mode="merge-on-read")
    with pytest.raises(ValidationError, match="unknown column 'idd'; did you mean 'id'"):
        t.delete_where("idd = 1")
    with pytest.raises(ValidationError, match="give a filter"):
        t.delete_where("")
    with pytest.raises(ValidationError, match="unknown delete mode"):
        t.delete_where("id = 1", mode="rewrite")


# -- branches -------------------------------------------------------------------------------------


def test_deletes_and_overwrites_on_a_branch_leave_main_untouched(catalog):
    t = make(catalog, "t")
    main_id = t.current_snapshot().snapshot_id
    t.new_transaction().set_ref("b", main_id).commit()
    t.delete_where("id < 4", mode="merge-on-read", branch="b")
    t.delete_where("s = 'p2'", branch="b")
    t.overwrite_by_filter("s = 'p1'", rows([100, 103]), branch="b")
    t.delete_equal(["id"], pa.table({"id": [5, 6]}), branch="b")
    t.overwrite_partitions(rows([99]), branch="b")  # p0
    assert t.refresh().current_snapshot().snapshot_id == main_id
    assert ids(t) == list(range(30))
    assert ids(t, ref="b") == [99, 100, 103]


# -- equality deletes -----------------------------------------------------------------------------


def test_equality_deletes_auto_partition_scoped_by_bounds(catalog):
    t = make(catalog, "t")
    # s prunes to p1; id 4 is within the bounds of the first p1 file only, 1000 of none
    t.delete_equal(["id", "s"], pa.table({"id": [4, 1000], "s": ["p1", "p1"]}))
    (f,) = live(t, FileContent.EQUALITY_DELETES)
    assert f.partition == ("p1",) and f.equality_ids == [1, 2]
    assert t.current_snapshot().summary["operation"] == "delete"
    assert ids(t) == [i for i in range(30) if i != 4]
    n = len(t.snapshots())
    t.delete_equal(["id"], pa.table({"id": [1000]}))  # no file can hold it: nothing staged
    assert len(t.refresh().snapshots()) == n


def test_equality_deletes_null_matches_null_and_scopes(catalog):
    u = make(catalog, "u", partitioned=False)
    u.delete_equal(["s", "v"], pa.table({"s": ["p0", "p1"], "v": pa.array([None, 10], pa.int64())}))
    (f,) = live(u, FileContent.EQUALITY_DELETES)
    assert f.partition == () and f.equality_ids == [2, 3]
    assert ids(u) == [i for i in range(30) if not (row(i)["s"] == "p0" and row(i)["v"] is None)
                      and i != 1]
    with pytest.raises(ValidationError, match="unpartitioned: use equality delete scope"):
        u.delete_equal(["id"], pa.table({"id": [1]}), scope="partition")
    p = make(catalog, "p")
    with pytest.raises(ValidationError, match="never had an unpartitioned spec"):
        p.delete_equal(["id"], pa.table({"id": [1]}), scope="global")
    # a table that was unpartitioned once takes a global delete in its old spec
    u.new_transaction().set_spec(parse_partition_by("identity(s)", u.schema())).commit()
    u.append(rows([40, 41]))
    u.delete_equal(["id"], pa.table({"id": [2, 41]}), scope="global")
    glob = [f for f in live(u, FileContent.EQUALITY_DELETES) if f.equality_ids == [1]]
    assert [(f.spec_id, f.partition) for f in glob] == [(0, ())]
    assert 2 not in ids(u) and 41 not in ids(u) and 40 in ids(u)


def test_equality_deletes_on_nested_columns_and_refusals(catalog, tmp_path):
    schema = Schema(NestedField(1, "id", LONG, required=True),
                    NestedField(2, "st", StructType(NestedField(4, "a", LONG))),
                    NestedField(3, "tags", ListType(5, STRING)))
    t = catalog.create_table("db.n", schema)
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                       "st": [{"a": 1}, {"a": None}, None], "tags": [[], [], []]}))
    t.delete_equal(["st.a"], pa.table({"st.a": pa.array([None], pa.int64())}))
    assert ids(t) == [1]  # a null parent struct makes st.a null too
    with pytest.raises(ValidationError, match="inside a list or map"):
        t.delete_equal(["tags.element"], pa.table({"x": ["a"]}))
    with pytest.raises(ValidationError, match="from table db.n: .*'nope'"):
        t.delete_equal(["nope"], pa.table({"nope": [1]}))
    v1 = make(catalog, "v1", version=1)
    with pytest.raises(ValidationError, match="format version 1 has no delete files"):
        v1.delete_equal(["id"], pa.table({"id": [1]}))


# -- overwrites -----------------------------------------------------------------------------------


def test_overwrite_by_filter_replaces_matching_rows_in_one_snapshot(catalog):
    t = make(catalog, "t")
    n = len(t.snapshots())
    t.overwrite_by_filter("id < 5 OR id >= 100", rows([3, 100, 101]))
    assert len(t.refresh().snapshots()) == n + 1
    assert t.current_snapshot().summary["operation"] == "overwrite"
    assert ids(t) == [3] + list(range(5, 30)) + [100, 101]
    t.overwrite_by_filter("s = 'p1'", rows([]))  # whole files, nothing added: a delete
    assert t.current_snapshot().summary["operation"] == "delete"
    assert ids(t) == [i for i in [3, *range(5, 30), 100, 101] if row(i)["s"] != "p1"]


def test_overwrite_by_filter_refuses_rows_outside_the_filter(catalog, tmp_path):
    t = make(catalog, "t")
    before = all_files(tmp_path)
    with pytest.raises(ValidationError, match=r"1 of the 2 new rows do not match it.*'id': 7"):
        t.overwrite_by_filter("id < 5", rows([1, 7]))
    with pytest.raises(ValidationError, match="do not match"):
        t.overwrite_by_filter("v > 0", rows([0]))  # v is NULL: it does not match
    assert all_files(tmp_path) == before


def test_dynamic_overwrite_replaces_the_partitions_written(catalog):
    t = make(catalog, "t")
    t.delete_where("id = 1", mode="merge-on-read")  # a delete file in p1, dropped with it
    t.overwrite_partitions(rows([100, 103]))  # p1 only
    s = t.current_snapshot().summary
    assert s["operation"] == "overwrite" and s["replace-partitions"] == "true"
    assert s["removed-position-delete-files"] == "1"
    assert ids(t) == sorted([i for i in range(30) if row(i)["s"] != "p1"] + [100, 103])
    u = make(catalog, "u", partitioned=False)
    u.overwrite_partitions(rows([7, 8]))
    assert ids(u) == [7, 8]
    n = len(u.refresh().snapshots())
    u.overwrite_partitions(rows([]))  # Spark skips an empty dynamic overwrite
    assert len(u.refresh().snapshots()) == n


# -- validation of concurrent commits -------------------------------------------------------------


def _concurrent(kind: str, other: Any) -> None:
    if kind == "append-matching":
        other.append(rows([50, 51]))  # may match "id >= 38"
    elif kind == "append-elsewhere":
        other.append(rows([20]))  # its bounds rule the filter out
    elif kind == "pos-delete":
        other.delete_where("id = 2", mode="merge-on-read")
    elif kind == "eq-delete":
        other.delete_equal(["v"], pa.table({"v": pa.array([20], pa.int64())}))  # id 2
    elif kind == "cow-delete":
        other.delete_where("id = 2", mode="copy-on-write")
    elif kind == "file-delete":  # a whole-file delete of the file holding id 2
        task = plan_files(other.io, other.metadata, row_filter="id = 2").tasks[0]
        other.delete_files([task.file_path])
    else:
        raise AssertionError(kind)


# (mode, isolation, concurrent commit, conflict?) as Spark + Java decide
VALIDATION = [
    ("copy-on-write", "serializable", "append-matching", True),
    ("copy-on-write", "snapshot", "append-matching", False),
    ("copy-on-write", "serializable", "append-elsewhere", False),
    ("copy-on-write", "snapshot", "pos-delete", True),
    ("copy-on-write", "snapshot", "eq-delete", True),
    ("copy-on-write", "snapshot", "cow-delete", True),
    ("merge-on-read", "serializable", "append-matching", True),
    ("merge-on-read", "snapshot", "append-matching", False),
    ("merge-on-read", "serializable", "pos-delete", False),
    ("merge-on-read", "serializable", "eq-delete", False),
    ("merge-on-read", "snapshot", "cow-delete", True),
    # the rows a concurrent DELETE removed are gone either way: Java skips it for a DELETE
    ("merge-on-read", "serializable", "file-delete", False),
    ("copy-on-write", "serializable", "file-delete", True),
]


@pytest.mark.parametrize("mode, level, kind, conflict", VALIDATION,
                         ids=["-".join(map(str, c)) for c in VALIDATION])
def test_concurrent_commits_per_isolation_level(catalog, tmp_path, mode, level, kind, conflict):
    t = make(catalog, "t", partitioned=False, batches=((0, 10), (30, 40)))
    stale = catalog.load_table("db.t")
    txn = stale.new_transaction().delete_where("id < 5 OR id >= 38", mode=mode,
                                               isolation_level=level)
    staged = set(txn.operations[-1].owned_files)
    assert staged and staged <= all_files(tmp_path)
    _concurrent(kind, t)
    location = catalog.metadata_location("db.t")
    before = all_files(tmp_path)
    # rows committed meanwhile are not the delete's to remove
    expected_left = [i for i in ids(t) if not (i < 5 or i in (38, 39))]
    if conflict:
        with pytest.raises(CommitConflict):
            txn.commit()
        assert catalog.metadata_location("db.t") == location
        assert all_files(tmp_path) == before - staged
    else:
        txn.commit()
        assert ids(t) == expected_left


def test_metadata_only_delete_removes_files_appended_meanwhile(catalog):
    t = make(catalog, "t")
    stale = catalog.load_table("db.t")
    txn = stale.new_transaction().delete_where("s = 'p1'")
    t.append(rows([31, 34]))  # both in p1: removed too, as Java's row-filter delete does
    txn.commit()
    assert t.refresh().current_snapshot().summary["operation"] == "delete"
    assert ids(t) == [i for i in range(30) if row(i)["s"] != "p1"]


def test_overwrites_validate_only_with_an_isolation_level(catalog):
    t = make(catalog, "t")
    stale = catalog.load_table("db.t")
    txn = stale.new_transaction().overwrite_by_filter("s = 'p1'", rows([100]),
                                                      isolation_level="serializable")
    t.append(rows([31]))
    with pytest.raises(CommitConflict, match="added by snapshot"):
        txn.commit()
    stale = catalog.load_table("db.t")
    txn = stale.new_transaction().overwrite_partitions(rows([100]))  # no level: Java's way
    t.refresh().append(rows([34]))
    txn.commit()
    assert [i for i in ids(t) if row(i)["s"] == "p1"] == [100]


class Racing(FileSystemCatalog):
    """Lets ``rival`` commit once, right before our first pointer swap."""

    rival: Any = None

    def _commit(self, ident: Any, base_location: Any, new_metadata: Any) -> Any:
        if base_location is not None and self.rival is not None:
            rival, self.rival = self.rival, None
            rival()
        return super()._commit(ident, base_location, new_metadata)


@pytest.mark.parametrize("operation", ["metadata-delete", "dynamic-overwrite"])
def test_a_retry_removes_what_a_rival_added_and_cleans_up_the_first_attempt(tmp_path, operation):
    racing = Racing("race", str(tmp_path / "wh"))
    t = make(racing, "t")
    other = FileSystemCatalog("fs", str(tmp_path / "wh")).load_table("db.t")
    racing.rival = lambda: other.append(rows([31]))  # p1, after our first attempt was built
    txn = t.new_transaction()
    if operation == "metadata-delete":
        txn.delete_where("s = 'p1'")
    else:
        txn.overwrite_partitions(rows([100]))  # p1
    op = txn.operations[-1]
    txn.commit()
    assert txn.attempts == 2
    assert [i for i in ids(t) if row(i)["s"] == "p1"] == ([] if operation == "metadata-delete"
                                                            else [100])
    first, final = op._retired[0], op.producer
    assert first is not final and final.committed_snapshot is not None
    leftovers = first.manifest_lists + first.written_manifests
    assert leftovers and not any(os.path.exists(p) for p in leftovers)
    assert all(os.path.exists(p) for p in op.owned_files)
