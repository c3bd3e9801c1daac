"""Incremental reads (floe.scan.incremental): appended rows between two snapshots and the
changelog, checked against a Python model of the table's rows after every commit.

The model knows only what each commit did to the rows; the expected changelog of a snapshot
is the multiset difference of the model's rows before and after it (what Spark's
create_changelog_view returns once carry-overs are removed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.cli import main
from floe.errors import NotFound, ValidationError
from floe.io.parquet import write_parquet
from floe.scan.readers import plan_to_table
from floe.manifest import DataFile, FileContent, FileFormat
from floe.partitioning import UNPARTITIONED, parse_partition_by
from floe.scan import plan_files
from floe.scan.delete_index import FILE_PATH_FIELD_ID, POS_FIELD_ID
from floe.scan.incremental import (
    CHANGE_ORDINAL,
    CHANGE_TYPE,
    COMMIT_SNAPSHOT_ID,
    changelog,
    changelog_arrow_schema,
    plan_appends,
    plan_changelog,
    remove_carryovers,
    snapshot_range,
)
from floe.schema import Schema
from floe.snapshots import Operation
from floe.table import Table
from floe.table.writer import write_data_files
from floe.types import LONG, STRING, NestedField, StructType

REPO = Path(__file__).resolve().parents[2]
SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                NestedField(3, "n", LONG))
POS_SCHEMA = Schema(NestedField(FILE_PATH_FIELD_ID, "file_path", STRING, required=True),
                    NestedField(POS_FIELD_ID, "pos", LONG, required=True))
Row = tuple[int, str | None, int | None]


def arrow(rows: list[Row]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                     "cat": pa.array([r[1] for r in rows], pa.string()),
                     "n": pa.array([r[2] for r in rows], pa.int64())})


class Model:
    """The rows of each snapshot as the test made them, independent of floe's reads."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.states: dict[int, Counter[Row]] = {}
        self.parents: dict[int, int | None] = {}
        self.ops: dict[int, str] = {}
        self.head: dict[str, int | None] = {"main": None}

    def rows(self, branch: str = "main") -> Counter[Row]:
        head = self.head.get(branch)
        return Counter() if head is None else Counter(self.states[head])

    def record(self, rows: Counter[Row], op: str, branch: str = "main") -> int:
        snap = self.table.metadata.snapshot_by_id(
            self.table.metadata.refs[branch].snapshot_id)
        assert snap is not None and str(snap.operation) == op
        parent = self.head.get(branch, self.head["main"])
        assert snap.parent_snapshot_id == parent
        self.states[snap.snapshot_id] = +rows
        self.parents[snap.snapshot_id] = parent
        self.ops[snap.snapshot_id] = op
        self.head[branch] = snap.snapshot_id
        return snap.snapshot_id

    def appended(self, start: int, end: int) -> Counter[Row]:
        out: Counter[Row] = Counter()
        for sid in self._range(start, end):
            if self.ops[sid] == "append":
                out += self.states[sid] - self.states[self.parents[sid]]  # type: ignore[index]
        return out

    def changes(self, start: int, end: int,
                keep: Callable[[Row], bool] = lambda r: True) -> Counter[tuple[Any, ...]]:
        out: Counter[tuple[Any, ...]] = Counter()
        ordinal = 0
        for sid in self._range(start, end):
            if self.ops[sid] == "replace":
                continue
            before = self.states[self.parents[sid]]  # type: ignore[index]
            after = self.states[sid]
            for kind, diff in (("DELETE", before - after), ("INSERT", after - before)):
                for row, k in diff.items():
                    if keep(row):
                        out[(*row, kind, ordinal, sid)] += k
            ordinal += 1
        return out

    def _range(self, start: int, end: int) -> list[int]:
        out = []
        sid: int | None = end
        while sid != start:
            assert sid is not None
            out.append(sid)
            sid = self.parents[sid]
        return out[::-1]


# -- building snapshots ------------------------------------------------------------------------


def append(t: Table, m: Model, rows: list[Row], branch: str = "main") -> int:
    t.append(arrow(rows), branch=branch)
    return m.record(m.rows(branch) + Counter(rows), "append", branch)


def live_files(t: Table) -> list[DataFile]:
    return [task.data_file for task in plan_files(t.io, t.metadata).tasks]


def file_rows(df: DataFile) -> list[Row]:
    return [(r["id"], r["cat"], r["n"]) for r in pq.read_table(df.file_path).to_pylist()]


def rewrite(t: Table, m: Model, change: Callable[[Row], Row | None], op: str = "overwrite"
            ) -> int:
    """Copy-on-write: every file with a row ``change`` alters is rewritten (None drops it)."""
    gone, new_rows, model = [], [], m.rows()
    for df in live_files(t):
        rows = file_rows(df)
        out = [change(r) for r in rows]
        if out == rows:
            continue
        gone.append(df.file_path)
        new_rows += [r for r in out if r is not None]
        for before, after in zip(rows, out, strict=True):
            if before in model and model[before] > 0 and after != before:
                model[before] -= 1
                if after is not None:
                    model[after] += 1
    assert gone, "the rewrite changes nothing"
    added = write_data_files(t.io, t.metadata, arrow(new_rows)) if new_rows else []
    t.new_transaction().overwrite(gone, added, operation=Operation(op)).commit()
    return m.record(model, op)


def delete_file(t: Table, m: Model, df: DataFile, live: list[Row]) -> int:
    t.delete_files([df.file_path])
    return m.record(m.rows() - Counter(live), "delete")


def _delete_file(t: Table, rows: pa.Table, schema: Schema, content: FileContent,
                 partition: tuple[Any, ...], spec_id: int, name: str,
                 equality_ids: list[int] | None = None) -> DataFile:
    data, metrics = write_parquet(rows, schema)
    path = f"{t.location}/data/{name}.parquet"
    t.io.write(path, data)
    return DataFile(content, path, FileFormat.PARQUET, partition, rows.num_rows, len(data),
                    value_counts=metrics.value_counts,
                    null_value_counts=metrics.null_value_counts,
                    lower_bounds=metrics.lower_bounds, upper_bounds=metrics.upper_bounds,
                    equality_ids=equality_ids, spec_id=spec_id)


def position_delete(t: Table, m: Model, pred: Callable[[Row], bool], name: str) -> int:
    """Merge-on-read: a position delete file per data file holding matching rows, even rows
    an earlier delete removed already (they must not be reported twice)."""
    files, model = [], m.rows()
    for df in live_files(t):
        pos = [i for i, r in enumerate(file_rows(df)) if pred(r)]
        if pos:
            rows = pa.table({"file_path": [df.file_path] * len(pos),
                             "pos": pa.array(pos, pa.int64())})
            files.append(_delete_file(t, rows, POS_SCHEMA, FileContent.POSITION_DELETES,
                                      df.partition, df.spec_id, f"{name}-{len(files)}"))
    t.new_transaction().overwrite([], files, operation=Operation.DELETE).commit()
    return m.record(Counter({r: k for r, k in model.items() if not pred(r)}), "delete")


def equality_delete(t: Table, m: Model, ids: list[int], name: str) -> int:
    """A global equality delete on ``id`` (the table must be unpartitioned)."""
    rows = pa.table({"id": pa.array(ids, pa.int64())})
    df = _delete_file(t, rows, Schema(SCHEMA.fields[0]), FileContent.EQUALITY_DELETES, (),
                      0, name, equality_ids=[1])
    model = m.rows()
    t.new_transaction().overwrite([], [df], operation=Operation.DELETE).commit()
    return m.record(Counter({r: k for r, k in model.items() if r[0] not in ids}), "delete")


# -- reading -------------------------------------------------------------------------------------


def appended_rows(t: Table, start: int, end: int | None = None, **kw: Any) -> Counter[Row]:
    plan = plan_appends(t.io, t.metadata, start, end, **kw)
    return Counter((r["id"], r["cat"], r["n"]) for r in plan_to_table(t.io, plan).to_pylist())


def changelog_rows(t: Table, start: int, end: int | None = None, **kw: Any
                   ) -> Counter[tuple[Any, ...]]:
    batches = changelog(t.io, t.metadata, start, end, **kw)
    return Counter(tuple(r.values()) for b in batches for r in b.to_pylist())


@pytest.fixture
def catalog(tmp_path: Path) -> FileSystemCatalog:
    return FileSystemCatalog("fs", str(tmp_path / "wh"))


@pytest.fixture
def table(catalog: FileSystemCatalog) -> Table:
    return catalog.create_table("db.t", SCHEMA, spec=UNPARTITIONED)


@pytest.fixture
def parted(catalog: FileSystemCatalog) -> Table:
    return catalog.create_table("db.p", SCHEMA, spec=parse_partition_by("cat", SCHEMA))


# -- appends -------------------------------------------------------------------------------------


def test_appends_between_snapshots(parted: Table) -> None:
    m = Model(parted)
    s1 = append(parted, m, [(1, "a", 1), (2, "b", 2)])
    s2 = append(parted, m, [(3, "a", 3)])
    s3 = append(parted, m, [(4, "b", 4), (5, "c", None)])
    s4 = append(parted, m, [(6, "c", 6)])
    for start, end in [(s1, s4), (s1, s2), (s2, s3), (s1, None), (s3, s4)]:
        assert appended_rows(parted, start, end) == m.appended(start, end or s4)
    assert appended_rows(parted, s4) == Counter()  # an empty range


def test_appends_prune_and_filter(parted: Table) -> None:
    m = Model(parted)
    s1 = append(parted, m, [(1, "a", 1)])
    append(parted, m, [(2, "a", 2), (3, "b", 3)])
    append(parted, m, [(4, "c", 4), (5, "c", 5)])
    plan = plan_appends(parted.io, parted.metadata, s1, row_filter="cat = 'c' AND id > 4")
    assert [t.data_file.partition for t in plan.tasks] == [("c",)]  # other files pruned
    assert plan.funnel.data_files_total == 3 and plan.funnel.tasks == 1
    assert appended_rows(parted, s1, row_filter="cat = 'c' AND id > 4") == \
        Counter({(5, "c", 5): 1})


def test_appends_refuse_an_overwrite_in_the_range(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1), (2, "b", 2)])
    s2 = rewrite(table, m, lambda r: None if r[0] == 2 else r)
    s3 = append(table, m, [(3, "c", 3)])
    with pytest.raises(ValidationError, match=f"snapshot {s2} \\(overwrite\\).*--changelog"):
        plan_appends(table.io, table.metadata, s1)
    assert appended_rows(table, s2, s3) == Counter({(3, "c", 3): 1})


def test_appends_refuse_a_delete_in_the_range(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1)])
    (df,) = live_files(table)
    s2 = delete_file(table, m, df, [(1, "a", 1)])
    with pytest.raises(ValidationError, match=f"snapshot {s2} \\(delete\\)"):
        plan_appends(table.io, table.metadata, s1)


def test_replace_snapshots_are_skipped(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1)])
    s2 = append(table, m, [(2, "b", 2)])
    s3 = compact(table, m)
    s4 = append(table, m, [(3, "c", 3)])
    assert appended_rows(table, s1, s4) == Counter({(2, "b", 2): 1, (3, "c", 3): 1})
    got = changelog_rows(table, s1, s4)
    assert got == m.changes(s1, s4)
    assert {(k[3], k[4], k[5]) for k in got} == {("INSERT", 0, s2), ("INSERT", 1, s4)}
    assert changelog_rows(table, s2, s3) == Counter()  # only the replace: nothing changed


def compact(t: Table, m: Model) -> int:
    """A replace snapshot: every data file rewritten into one, the rows unchanged."""
    files = live_files(t)
    rows = [r for df in files for r in file_rows(df)]
    added = write_data_files(t.io, t.metadata, arrow(rows))
    t.new_transaction().overwrite([f.file_path for f in files], added,
                                  operation=Operation.REPLACE).commit()
    return m.record(m.rows(), "replace")


# -- changelog -----------------------------------------------------------------------------------


def test_changelog_of_appends_has_ordinals_in_commit_order(table: Table) -> None:
    m = Model(table)
    s0 = append(table, m, [(0, "z", 0)])
    s1 = append(table, m, [(1, "a", 1), (1, "a", 1)])
    s2 = append(table, m, [(2, "b", None)])
    batches = list(changelog(table.io, table.metadata, s0))
    assert batches[0].schema == changelog_arrow_schema(table.metadata)
    rows = [r for b in batches for r in b.to_pylist()]
    assert [(r["id"], r[CHANGE_TYPE], r[CHANGE_ORDINAL], r[COMMIT_SNAPSHOT_ID]) for r in rows] \
        == [(1, "INSERT", 0, s1), (1, "INSERT", 0, s1), (2, "INSERT", 1, s2)]


def test_copy_on_write_rewrite_reports_only_the_changed_rows(parted: Table) -> None:
    m = Model(parted)
    s1 = append(parted, m, [(1, "a", 1), (2, "a", 2), (3, "b", 3), (4, "b", 4)])
    s2 = rewrite(parted, m, lambda r: None if r[0] == 2 else r)  # CoW delete
    s3 = rewrite(parted, m, lambda r: (r[0], r[1], 40) if r[0] == 4 else r)  # CoW update
    changes = list(plan_changelog(parted.io, parted.metadata, s1))
    # the rewrite of partition a reads the removed and the added file: carry-over (1, a)
    assert [(len(c.deleted), len(c.inserted)) for c in changes] == [(1, 1), (1, 1)]
    assert changelog_rows(parted, s1, s3) == m.changes(s1, s3) == Counter({
        (2, "a", 2, "DELETE", 0, s2): 1, (4, "b", 4, "DELETE", 1, s3): 1,
        (4, "b", 40, "INSERT", 1, s3): 1})


def test_carry_overs_cancel_as_multisets(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1), (1, "a", 1), (1, "a", 1), (2, "b", None)])
    seen: list[Row] = []

    def drop_one_duplicate(r: Row) -> Row | None:
        if r == (1, "a", 1) and r not in seen:
            seen.append(r)
            return None
        return r

    s2 = rewrite(table, m, drop_one_duplicate)
    assert changelog_rows(table, s1, s2) == m.changes(s1, s2) == Counter(
        {(1, "a", 1, "DELETE", 0, s2): 1})


@pytest.mark.parametrize(("deleted", "inserted", "left_deleted", "left_inserted"), [
    ([1, 1, 1], [1], [1, 1], []),
    ([1], [1, 1, 1], [], [1, 1]),
    ([1, 2], [2, 1], [], []),
    ([1, 2, 2], [3, 2], [1, 2], [3]),
    ([None, None], [None], [None], []),
    ([], [1], [], [1]),
])
def test_remove_carryovers(deleted: list[int | None], inserted: list[int | None],
                           left_deleted: list[int | None], left_inserted: list[int | None]
                           ) -> None:
    def t(values: list[int | None]) -> pa.Table:
        return pa.table({"x": pa.array(values, pa.int64()),
                         "s": pa.array([{"a": v} for v in values],
                                       pa.struct([("a", pa.int64())]))})

    gone, new = remove_carryovers(t(deleted), t(inserted))
    assert sorted(gone.column("x").to_pylist(), key=str) == sorted(left_deleted, key=str)
    assert sorted(new.column("x").to_pylist(), key=str) == sorted(left_inserted, key=str)


@pytest.mark.parametrize(("a", "b", "cancel"), [
    (float("nan"), float("nan"), True),
    (0.0, -0.0, False),
    ([1, 2], [1, 2], True),
    ([1, 2], [2, 1], False),
    ({"k": None}, {"k": None}, True),
])
def test_carryover_equality_is_javas(a: Any, b: Any, cancel: bool) -> None:
    gone, new = remove_carryovers(pa.table({"v": [a]}), pa.table({"v": [b]}))
    assert (gone.num_rows, new.num_rows) == ((0, 0) if cancel else (1, 1))


def test_whole_file_delete_applies_the_deletes_live_before(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1), (2, "a", 2), (3, "a", 3)])
    (df,) = live_files(table)
    s2 = position_delete(table, m, lambda r: r[0] == 2, "pd1")
    s3 = delete_file(table, m, df, [(1, "a", 1), (3, "a", 3)])
    assert changelog_rows(table, s1, s3) == m.changes(s1, s3) == Counter({
        (2, "a", 2, "DELETE", 0, s2): 1, (1, "a", 1, "DELETE", 1, s3): 1,
        (3, "a", 3, "DELETE", 1, s3): 1})


def test_position_deletes_report_rows_live_before(parted: Table) -> None:
    m = Model(parted)
    s1 = append(parted, m, [(1, "a", 1), (2, "a", 2), (3, "b", 3)])
    append(parted, m, [(4, "c", 4)])
    s3 = position_delete(parted, m, lambda r: r[0] == 1, "pd1")
    s4 = position_delete(parted, m, lambda r: r[0] in (1, 2), "pd2")  # 1 already gone
    changes = list(plan_changelog(parted.io, parted.metadata, s3))
    (c,) = changes
    # only the file of partition a is touched, read with the old and the new deletes
    assert [t.data_file.partition for t in c.deleted] == [("a",)]
    assert [len(t.delete_files) for t in c.deleted + c.inserted] == [1, 2]
    assert changelog_rows(parted, s1, s4) == m.changes(s1, s4)
    assert changelog_rows(parted, s3, s4) == Counter({(2, "a", 2, "DELETE", 0, s4): 1})


def test_equality_deletes_report_rows_live_before(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1), (2, "b", 2)])
    append(table, m, [(1, "c", 3), (3, "c", 3)])
    s3 = position_delete(table, m, lambda r: r == (1, "c", 3), "pd1")
    s4 = equality_delete(table, m, [1, 3], "eq1")
    s5 = append(table, m, [(1, "d", 5)])  # a later insert of a deleted key is not deleted
    assert changelog_rows(table, s1, s5) == m.changes(s1, s5)
    # (1, c) was already deleted by the position delete: s4 deletes only (1, a) and (3, c)
    assert Counter(k[:4] for k, v in changelog_rows(table, s3, s5).items() for _ in range(v)) \
        == Counter({(1, "a", 1, "DELETE"): 1, (3, "c", 3, "DELETE"): 1,
                    (1, "d", 5, "INSERT"): 1})


def test_removing_a_delete_file_reinserts_its_rows(table: Table) -> None:
    m = Model(table)
    append(table, m, [(1, "a", 1), (2, "a", 2)])
    s2 = position_delete(table, m, lambda r: r[0] == 2, "pd1")
    (pd,) = [e.data_file for e in _delete_entries(table)]
    table.delete_files([pd.file_path])
    s3 = m.record(m.rows() + Counter({(2, "a", 2): 1}), "delete")
    assert changelog_rows(table, s2, s3) == Counter({(2, "a", 2, "INSERT", 0, s3): 1})


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_row_level_deletes_of_floe(parted: Table, mode: str) -> None:
    """Table.delete_where (both modes; a whole partition is a metadata-only delete) and
    Table.delete_equal, each a snapshot whose changelog is the model's difference."""
    m = Model(parted)
    s1 = append(parted, m, [(1, "a", 1), (2, "a", 2), (2, "a", 2), (3, "b", None),
                            (4, "c", 4)])
    append(parted, m, [(5, "a", 5), (6, "b", 6)])

    def delete(row_filter: str, pred: Callable[[Row], bool]) -> int:
        op_rows = m.rows()
        parted.delete_where(row_filter, mode=mode)
        snap = parted.current_snapshot()
        assert snap is not None
        return m.record(Counter({r: k for r, k in op_rows.items() if not pred(r)}),
                        str(snap.operation))

    s3 = delete("id = 2", lambda r: r[0] == 2)
    summary = parted.metadata.snapshot_by_id(s3).summary  # type: ignore[union-attr]
    assert ("added-position-delete-files" in summary) == (mode == "merge-on-read")
    delete("cat = 'c'", lambda r: r[1] == "c")
    delete("n IS NULL OR id = 6", lambda r: r[2] is None or r[0] == 6)
    model = m.rows()
    parted.delete_equal(["id"], pa.table({"id": pa.array([1, 5], pa.int64())}))
    end = m.record(Counter({r: k for r, k in model.items() if r[0] not in (1, 5)}), "delete")
    assert changelog_rows(parted, s1, end) == m.changes(s1, end)
    assert not m.rows()


def _delete_entries(t: Table) -> list[Any]:
    from floe.manifest import ManifestContent, read_manifest, read_manifest_list

    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    return [e for mf in read_manifest_list(t.io, snap.manifest_list)
            if mf.content == ManifestContent.DELETES for e in read_manifest(t.io, mf)]


def test_changelog_filter_and_columns(parted: Table) -> None:
    m = Model(parted)
    s1 = append(parted, m, [(1, "a", 1), (2, "b", 2)])
    append(parted, m, [(3, "a", 3), (4, "b", 4)])
    rewrite(parted, m, lambda r: None if r[0] in (1, 2) else r)
    s4 = position_delete(parted, m, lambda r: r[0] == 4, "pd1")
    keep = lambda r: r[1] == "b"  # noqa: E731
    assert changelog_rows(parted, s1, s4, row_filter="cat = 'b'") == m.changes(s1, s4, keep)
    got = changelog_rows(parted, s1, s4, row_filter="cat = 'b'", columns=["id"])
    assert got == Counter({(k[0], *k[3:]): v for k, v in m.changes(s1, s4, keep).items()})
    schema = changelog_arrow_schema(parted.metadata, ["id"])
    assert schema.names == ["id", CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID]


def test_changelog_columns_inside_a_struct(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.nested", Schema(
        NestedField(1, "id", LONG, required=True),
        NestedField(2, "st", StructType(NestedField(3, "a", LONG), NestedField(4, "b", STRING)))))
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "st": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, None]})
    t.append(rows)
    s1 = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    t.delete_where("id = 2", mode="copy-on-write")
    s2 = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    (change,) = plan_changelog(t.io, t.metadata, s1)
    assert (len(change.deleted), len(change.inserted)) == (1, 1)  # a partial rewrite
    got = [r for b in changelog(t.io, t.metadata, s1, columns=["st.a"]) for r in b.to_pylist()]
    assert got == [{"st": {"a": 2}, CHANGE_TYPE: "DELETE", CHANGE_ORDINAL: 0,
                    COMMIT_SNAPSHOT_ID: s2}]


def test_changelog_reads_with_the_current_schema(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1)])
    s2 = append(table, m, [(2, "b", 2)])
    table.update_schema().add_column("extra", "string").commit()
    rows = [r for b in changelog(table.io, table.metadata, s1, s2) for r in b.to_pylist()]
    assert rows == [{"id": 2, "cat": "b", "n": 2, "extra": None, CHANGE_TYPE: "INSERT",
                     CHANGE_ORDINAL: 0, COMMIT_SNAPSHOT_ID: s2}]


def test_a_range_on_a_branch(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1)])
    m.head["dev"] = s1
    d1 = append(table, m, [(2, "dev", 2)], branch="dev")
    d2 = rewrite_branch(table, m)
    s2 = append(table, m, [(3, "main", 3)])
    assert appended_rows(table, s1, d1) == Counter({(2, "dev", 2): 1})
    assert changelog_rows(table, s1, d2) == m.changes(s1, d2)
    assert appended_rows(table, s1) == Counter({(3, "main", 3): 1})  # default: current
    with pytest.raises(ValidationError, match=f"snapshot {d1} is not an ancestor of "
                                              f"snapshot {s2}"):
        changelog(table.io, table.metadata, d1, s2)


def rewrite_branch(t: Table, m: Model) -> int:
    """Remove the dev file of the branch (a delete snapshot on the branch)."""
    dev = t.metadata.snapshot_by_id(t.metadata.refs["dev"].snapshot_id)
    assert dev is not None
    (task,) = [x for x in plan_files(t.io, t.metadata, ref="dev").tasks
               if file_rows(x.data_file) == [(2, "dev", 2)]]
    t.delete_files([task.data_file.file_path], branch="dev")
    return m.record(m.rows("dev") - Counter({(2, "dev", 2): 1}), "delete", "dev")


def test_bad_ranges(table: Table) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1)])
    s2 = append(table, m, [(2, "b", 2)])
    md, io = table.metadata, table.io
    with pytest.raises(NotFound, match="snapshot 42 does not exist"):
        plan_appends(io, md, 42)
    with pytest.raises(NotFound, match="snapshot 43 does not exist"):
        changelog(io, md, s1, 43)
    with pytest.raises(ValidationError, match=f"reversed: snapshot {s1} is older than "
                                              f"snapshot {s2}"):
        plan_appends(io, md, s2, s1)
    with pytest.raises(ValidationError, match="unknown column 'idd'"):
        changelog(io, md, s1, row_filter="idd = 1")
    assert snapshot_range(md, s1, s1) == []
    assert [s.snapshot_id for s in snapshot_range(md, s1)] == [s2]


# -- the command line ----------------------------------------------------------------------------


def test_cli_changelog_json_lines(table: Table, capsys: pytest.CaptureFixture[str]) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1), (2, "b", 2)])
    s2 = rewrite(table, m, lambda r: None if r[0] == 1 else r)
    assert main(["scan", table.location, "--from-snapshot", str(s1), "--changelog",
                 "--columns", "id", "--output", "-"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [{"id": 1, CHANGE_TYPE: "DELETE", CHANGE_ORDINAL: 0,
                     COMMIT_SNAPSHOT_ID: s2}]


def test_cli_appends_to_parquet(table: Table, tmp_path: Path) -> None:
    m = Model(table)
    s1 = append(table, m, [(1, "a", 1)])
    s2 = append(table, m, [(2, "b", 2)])
    append(table, m, [(3, "c", 3)])
    out = tmp_path / "out.parquet"
    assert main(["scan", table.location, "--from-snapshot", str(s1), "--to-snapshot", str(s2),
                 "--filter", "id > 0", "--output", str(out)]) == 0
    assert pq.read_table(out).to_pylist() == [{"id": 2, "cat": "b", "n": 2}]
    empty = tmp_path / "empty.parquet"
    assert main(["scan", table.location, "--from-snapshot", str(s1), "--to-snapshot", str(s1),
                 "--changelog", "--output", str(empty)]) == 0
    assert pq.read_table(empty).schema.names == ["id", "cat", "n", CHANGE_TYPE, CHANGE_ORDINAL,
                                                 COMMIT_SNAPSHOT_ID]


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--to-snapshot", "1"], 1, "floe: --to-snapshot needs --from-snapshot"),
    (["--changelog"], 1, "floe: --changelog needs --from-snapshot"),
    (["--from-snapshot", "7"], 1, "floe: snapshot 7 does not exist in table"),
    (["--from-snapshot", "7", "--snapshot", "8"], 2, "not allowed with argument"),
])
def test_cli_errors(table: Table, args: list[str], code: int, message: str) -> None:
    m = Model(table)
    append(table, m, [(1, "a", 1)])
    run = subprocess.run([sys.executable, "-m", "floe.cli", "scan", table.location, *args,
                          "--output", "-"], capture_output=True, text=True, cwd=REPO,
                         check=False)
    assert run.returncode == code
    assert message in run.stderr
    if code == 1:
        assert len(run.stderr.strip().splitlines()) == 1
