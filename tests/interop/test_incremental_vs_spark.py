"""floe's incremental reads against Spark + Iceberg Java 1.10.2 on Spark-written tables.

* The changelog of copy-on-write tables (appends, deletes that rewrite part of a file with
  duplicate rows, an update leaving a null unchanged, a whole-file delete, a MERGE) equals
  ``create_changelog_view``'s rows for several ranges (carry-overs removed by Spark's
  ``RemoveCarryoverIterator``), with and without a filter.
* Spark 1.10.2 refuses changelogs over snapshots with delete files; on the merge-on-read
  table (position deletes, an update, equality deletes) floe's changelog is checked instead
  against the differences between Spark's reads of consecutive snapshots.
* Appended rows equal Spark's incremental read (``start-snapshot-id`` / ``end-snapshot-id``)
  on append-only ranges, including one with a ``rewrite_data_files`` (replace) snapshot.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from oracle_client import OracleRequestError
from oracle_server import _jsonable

from floe.catalog.filesystem import load_table_metadata
from floe.errors import ValidationError
from floe.io import FileIO
from floe.scan.readers import plan_to_table
from floe.metadata import TableMetadata
from floe.scan.incremental import changelog, plan_appends

NS = "db"
COW, MOR, APP = "incr_cow", "incr_mor", "incr_app"


def _table(name: str, fv: int, props: str = "", part: str = "") -> str:
    by = f" PARTITIONED BY ({part})" if part else ""
    extra = f", {props}" if props else ""
    return (f"CREATE TABLE oracle.{NS}.{name} (id bigint, cat string, v double) USING iceberg"
            f"{by} TBLPROPERTIES ('format-version'='{fv}'{extra})")


def _one_file(name: str, values: str) -> str:
    """An insert whose rows of a partition land in one file (so deletes rewrite part of it)."""
    return (f"INSERT INTO oracle.{NS}.{name} SELECT /*+ REPARTITION(1) */ * FROM VALUES "
            f"{values} AS v(id, cat, v)")


_COW_MODES = ("'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
              "'write.merge.mode'='copy-on-write'")
_MOR_MODES = _COW_MODES.replace("copy-on-write", "merge-on-read")

STATEMENTS = [
    _table(COW, 2, _COW_MODES, "cat"),
    _one_file(COW, "(1L, 'a', 1.0D), (2L, 'a', 2.0D), (3L, 'b', 3.0D), (4L, 'b', NULL), "
                   "(5L, NULL, 5.0D), (10L, 'a', 10.0D), (10L, 'a', 10.0D)"),
    f"INSERT INTO oracle.{NS}.{COW} VALUES (6, 'a', 6.0), (7, 'c', 7.0)",
    f"DELETE FROM oracle.{NS}.{COW} WHERE id = 2",
    f"UPDATE oracle.{NS}.{COW} SET v = v * 10 WHERE cat = 'b'",
    f"DELETE FROM oracle.{NS}.{COW} WHERE cat = 'c'",
    f"MERGE INTO oracle.{NS}.{COW} t USING (SELECT 1L AS id, 'a' AS cat, -1.0D AS v UNION ALL "
    "SELECT 9L, 'd', 9.0D) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    f"INSERT INTO oracle.{NS}.{COW} VALUES (11, 'd', NULL), (11, 'd', NULL)",

    _table(MOR, 2, _MOR_MODES, "cat"),
    _one_file(MOR, "(1L, 'a', 1.0D), (2L, 'a', 2.0D), (3L, 'b', 3.0D), (4L, 'b', 4.0D), "
                   "(5L, 'a', 5.0D), (5L, 'a', 5.0D)"),
    f"INSERT INTO oracle.{NS}.{MOR} VALUES (6, 'a', 6.0), (7, 'c', 7.0)",
    f"DELETE FROM oracle.{NS}.{MOR} WHERE id = 2",
    f"UPDATE oracle.{NS}.{MOR} SET v = -v WHERE cat = 'b'",
    f"DELETE FROM oracle.{NS}.{MOR} WHERE id = 1",

    _table(APP, 1),
    f"INSERT INTO oracle.{NS}.{APP} VALUES (1, 'x', 1.0)",
    f"INSERT INTO oracle.{NS}.{APP} VALUES (2, 'y', 2.0), (2, 'y', 2.0)",
    f"INSERT INTO oracle.{NS}.{APP} VALUES (3, 'z', NULL)",
    f"CALL oracle.system.rewrite_data_files(table => '{NS}.{APP}', "
    "options => map('min-input-files', '2', 'rewrite-all', 'true'))",
    f"INSERT INTO oracle.{NS}.{APP} VALUES (4, 'w', 4.0)",
]


@dataclass
class Built:
    location: dict[str, str]
    lineage: dict[str, list[int]]  # snapshot ids of main, oldest first
    spark_changelog: list[list[dict[str, Any]]]
    spark_states: dict[int, list[dict[str, Any]]]
    refusal: str

    def md(self, name: str) -> TableMetadata:
        return load_table_metadata(FileIO(), self.location[name])[1]


# (table, index of the start snapshot, index of the end snapshot, filter)
CHANGELOG_CASES = [
    *[(COW, i, i + 1, None) for i in range(6)],
    (COW, 0, 6, None), (COW, 1, 4, None), (COW, 2, 5, None),
    (COW, 0, 6, "cat = 'a'"), (COW, 0, 6, "v IS NULL"),
    (MOR, 0, 1, None),
    (APP, 0, 4, None), (APP, 2, 4, None),
]


def _lineage(md: TableMetadata) -> list[int]:
    snap = md.current_snapshot()
    assert snap is not None
    return [s.snapshot_id for s in md.ancestors_of(snap.snapshot_id)][::-1]


@pytest.fixture(scope="module")
def built(oracle: Any) -> Built:
    oracle.sql(STATEMENTS)
    oracle.equality_delete(f"{NS}.{MOR}", "id", [1, 5, 6])  # 1 is already deleted
    location = {n: str(oracle.warehouse / NS / n) for n in (COW, MOR, APP)}
    io = FileIO()
    lineage = {n: _lineage(load_table_metadata(io, loc)[1]) for n, loc in location.items()}
    stmts = []
    for k, (name, a, b, where) in enumerate(CHANGELOG_CASES):
        ids = lineage[name]
        stmts += [
            f"CALL oracle.system.create_changelog_view(table => '{NS}.{name}', options => "
            f"map('start-snapshot-id', '{ids[a]}', 'end-snapshot-id', '{ids[b]}'), "
            f"changelog_view => 'incr_v{k}')",
            f"SELECT * FROM incr_v{k}" + (f" WHERE {where}" if where else ""),
        ]
    results = oracle.sql(stmts, all=True)
    mor = lineage[MOR]
    states = oracle.sql([f"SELECT * FROM oracle.{NS}.{MOR} VERSION AS OF {s}" for s in mor],
                        all=True)
    try:
        oracle.sql([
            f"CALL oracle.system.create_changelog_view(table => '{NS}.{MOR}', options => "
            f"map('start-snapshot-id', '{mor[1]}', 'end-snapshot-id', '{mor[2]}'), "
            "changelog_view => 'incr_refused')",
            "SELECT * FROM incr_refused"])
        refusal = ""
    except OracleRequestError as e:
        refusal = str(e)
    return Built(location, lineage, results[1::2], dict(zip(mor, states, strict=True)),
                 refusal)


def _key(row: dict[str, Any]) -> str:
    return json.dumps({k: _jsonable(v) for k, v in row.items()}, sort_keys=True)


def _floe_changelog(built: Built, name: str, start: int, end: int, where: str | None
                    ) -> Counter[str]:
    md = built.md(name)
    return Counter(_key(r) for b in changelog(FileIO(), md, start, end, row_filter=where)
                   for r in b.to_pylist())


@pytest.mark.parametrize("case", range(len(CHANGELOG_CASES)),
                         ids=[f"{n}[{a}..{b}]" + (f" {w}" if w else "")
                              for n, a, b, w in CHANGELOG_CASES])
def test_changelog_matches_spark(built: Built, case: int) -> None:
    name, a, b, where = CHANGELOG_CASES[case]
    ids = built.lineage[name]
    spark = Counter(_key(r) for r in built.spark_changelog[case])
    assert spark  # every case changes rows
    assert _floe_changelog(built, name, ids[a], ids[b], where) == spark


def _operations(built: Built, name: str) -> list[str]:
    snapshots = {s.snapshot_id: s for s in built.md(name).snapshots}
    return [str(snapshots[i].operation) for i in built.lineage[name]]


def test_cow_table_has_the_intended_history(built: Built) -> None:
    """The cases above only mean something if Spark wrote what the module says."""
    assert _operations(built, COW) == ["append", "append", "overwrite", "overwrite", "delete",
                                       "overwrite", "append"]
    full = CHANGELOG_CASES.index((COW, 0, 6, None))
    kinds = Counter((r["id"], r["_change_type"]) for r in built.spark_changelog[full])
    assert kinds[(4, "DELETE")] == 0  # (4, b, NULL) is an update carry-over
    assert kinds[(10, "DELETE")] == 0  # duplicates rewritten unchanged: carry-overs


def test_spark_refuses_changelogs_over_delete_files(built: Built) -> None:
    assert "Delete files are currently not supported in changelog scans" in built.refusal


def test_mor_changelog_matches_spark_snapshot_differences(built: Built) -> None:
    """Per snapshot of the merge-on-read table: deleted = rows before minus rows after,
    inserted = after minus before (Spark's reads), ordinals from the range's start."""
    ids = built.lineage[MOR]
    assert _operations(built, MOR) == [
        "append", "append", "delete", "overwrite", "delete", "delete"]
    md = built.md(MOR)
    summaries = [md.snapshot_by_id(i).summary for i in ids]  # type: ignore[union-attr]
    assert all("added-position-delete-files" in summaries[i] for i in (2, 3, 4))
    assert "added-equality-delete-files" in summaries[5]
    for start in range(len(ids) - 1):
        expected: Counter[str] = Counter()
        for ordinal, (before, after) in enumerate(zip(ids[start:], ids[start + 1:])):
            old = Counter(_key(r) for r in built.spark_states[before])
            new = Counter(_key(r) for r in built.spark_states[after])
            for kind, diff in (("DELETE", old - new), ("INSERT", new - old)):
                for row, n in diff.items():
                    full = {**json.loads(row), "_change_type": kind,
                            "_change_ordinal": ordinal, "_commit_snapshot_id": after}
                    expected[_key(full)] += n
        assert _floe_changelog(built, MOR, ids[start], ids[-1], None) == expected, start


# (table, start index, end index or None for the current snapshot)
APPEND_CASES = [(APP, 0, None), (APP, 0, 2), (COW, 0, 1), (MOR, 0, 1)]


@pytest.fixture(scope="module")
def spark_appends(oracle: Any, built: Built) -> list[list[dict[str, Any]]]:
    out = []
    for name, a, b in APPEND_CASES:
        ids = built.lineage[name]
        options = {"start-snapshot-id": str(ids[a])}
        if b is not None:
            options["end-snapshot-id"] = str(ids[b])
        out.append(oracle.read(f"oracle.{NS}.{name}", options))
    return out


@pytest.mark.parametrize("case", range(len(APPEND_CASES)),
                         ids=[f"{n}[{a}..{b}]" for n, a, b in APPEND_CASES])
def test_appends_match_spark_incremental_read(built: Built, spark_appends: list[Any],
                                              case: int) -> None:
    name, a, b = APPEND_CASES[case]
    ids = built.lineage[name]
    md = built.md(name)
    plan = plan_appends(FileIO(), md, ids[a], ids[b] if b is not None else None)
    ours = Counter(_key(r) for r in plan_to_table(FileIO(), plan).to_pylist())
    assert ours == Counter(_key(r) for r in spark_appends[case])
    assert ours  # every case appends rows


def test_appends_refuse_what_spark_skips(built: Built) -> None:
    """Spark's incremental read skips the overwrite silently; floe refuses it."""
    ids = built.lineage[COW]
    with pytest.raises(ValidationError, match=f"snapshot {ids[2]} \\(overwrite\\)"):
        plan_appends(FileIO(), built.md(COW), ids[0])
