"""floe's compaction against Spark + Iceberg Java's ``rewrite_data_files`` (and
``rewrite_position_delete_files``) on twin tables.

Spark builds every table twice (``<name>_f`` and ``<name>_s``) with the same statements:
v1 and v2, partitioned and not, many small files from several INSERTs, merge-on-read position
deletes and Java-API equality deletes, schema and partition evolution. floe compacts the
``_f`` copy, Spark's procedure the ``_s`` copy with the same options (strategy, sort order,
``where``). Then Spark, PyIceberg (no equality deletes) and DuckDB must read floe's result
with the rows the table had before and the rows of Spark's twin; both must have rewritten the
same data files (counts and records per replace snapshot, files left per partition); and no
position delete may still apply to a file floe wrote.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.maintenance.compaction import compact
from floe.maintenance.rewrite_deletes import rewrite_position_deletes
from floe.manifest import FileContent
from floe.scan.planning import plan_files

pytestmark = pytest.mark.interop

COLUMNS = ("id", "s", "v")


@dataclass(frozen=True)
class Case:
    name: str
    version: int = 2
    partitioned: bool = True
    position_deletes: bool = False
    equality_deletes: bool = False
    evolve: bool = False
    strategy: str | None = None
    sort_order: str | None = None
    where: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    rewrite_deletes: bool = False  # rewrite_position_delete_files instead of data files


CASES = [
    Case("cp_v1u", 1, False),
    Case("cp_v1p", 1, True),
    Case("cp_v2u", 2, False, position_deletes=True),
    Case("cp_v2p", 2, True, position_deletes=True),
    Case("cp_v2p_eq", 2, True, position_deletes=True, equality_deletes=True,
         options={"remove-dangling-deletes": "true"}),
    Case("cp_v2u_eq", 2, False, equality_deletes=True),
    Case("cp_evolve", 2, False, position_deletes=True, evolve=True),
    Case("cp_sort", 2, True, position_deletes=True, strategy="sort",
         sort_order="id DESC NULLS LAST"),
    Case("cp_where", 2, True, where="s = 'p1'"),
    Case("cp_opts", 2, True, options={"min-input-files": "3", "partial-progress.enabled":
                                      "true", "partial-progress.max-commits": "2"}),
    Case("cp_posdel", 2, True, position_deletes=True, rewrite_deletes=True),
]
BY_NAME = {c.name: c for c in CASES}
DATA_CASES = [c.name for c in CASES if not c.rewrite_deletes]


def _values(lo: int, hi: int) -> str:
    return ", ".join(f"({i}, 'p{i % 3}', {'NULL' if i % 7 == 0 else i * 10})"
                     for i in range(lo, hi))


def _build_sql(c: Case, t: str) -> list[str]:
    props = {"format-version": str(c.version), "write.delete.mode": "merge-on-read"}
    tbl = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    out = [f"CREATE TABLE {t} (id bigint, s string, v bigint) USING iceberg "
           f"{'PARTITIONED BY (s) ' if c.partitioned else ''}TBLPROPERTIES ({tbl})"]
    out += [f"INSERT INTO {t} VALUES {_values(lo, lo + 9)}" for lo in range(0, 54, 9)]
    if c.evolve:
        out += [f"ALTER TABLE {t} ADD COLUMN w string",
                f"ALTER TABLE {t} ADD PARTITION FIELD s"]
        out += [f"INSERT INTO {t} VALUES " + ", ".join(
            f"({i}, 'p{i % 3}', {i * 10}, 'w{i}')" for i in range(lo, lo + 6))
            for lo in range(100, 130, 6)]
    if c.position_deletes:
        deletes = range(1, 50, 8) if c.rewrite_deletes else (2, 11)
        out += [f"DELETE FROM {t} WHERE id = {i} OR id = {i + 1}" for i in deletes]
    return out


def _files_sql(c: Case, t: str) -> str:
    """Live files per content and partition (an unpartitioned table has no partition
    column in its ``files`` table)."""
    part = "partition" if c.partitioned or c.evolve else "CAST(NULL AS string)"
    return (f"SELECT content, {part} AS partition, COUNT(*) AS n, "
            f"SUM(record_count) AS records FROM {t}.files GROUP BY 1, 2")


def _floe_op(c: Case, table: Any) -> Any:
    if c.rewrite_deletes:
        return rewrite_position_deletes(table, c.options)
    return compact(table, c.options, filter=c.where, strategy=c.strategy,
                   sort_order=c.sort_order.lower() if c.sort_order else None)


def _spark_op(c: Case, t: str) -> str:
    ident = t.removeprefix("oracle.")
    args = [f"table => '{ident}'"]
    if c.options:
        opts = ", ".join(f"'{k}', '{v}'" for k, v in c.options.items())
        args.append(f"options => map({opts})")
    if c.rewrite_deletes:
        return f"CALL oracle.system.rewrite_position_delete_files({', '.join(args)})"
    if c.strategy:
        args.append(f"strategy => '{c.strategy}'")
    if c.sort_order:
        args.append(f"sort_order => '{c.sort_order}'")
    if c.where:
        args.append(f"where => \"{c.where}\"")
    return f"CALL oracle.system.rewrite_data_files({', '.join(args)})"


@pytest.fixture(scope="module")
def twins(oracle: Any) -> dict[str, Any]:
    """Every case built twice, compacted by floe and by Spark, and read back."""
    ident = {c.name: (f"oracle.db.{c.name}_f", f"oracle.db.{c.name}_s") for c in CASES}
    oracle.sql([s for c in CASES for t in ident[c.name] for s in _build_sql(c, t)])
    for c in CASES:
        if c.equality_deletes:
            for t in ident[c.name]:
                oracle.equality_delete(t.removeprefix("oracle."), "id", [4, 30, 31])
    before_sql = [q for c in CASES for q in (
        f"SELECT id, s, v FROM {ident[c.name][1]}",
        _files_sql(c, ident[c.name][1]))]
    before = oracle.sql(before_sql, all=True)
    catalog = FileSystemCatalog("twins", str(oracle.warehouse))
    floe: dict[str, Any] = {}
    for c in CASES:
        table = catalog.load_table(f"db.{c.name}_f")
        result = _floe_op(c, table)
        floe[c.name] = {"result": result, "metadata": table.metadata_location,
                        "table": table}
    calls = oracle.sql([_spark_op(c, ident[c.name][1]) for c in CASES], all=True)
    after = oracle.sql([q for c in CASES for t in ident[c.name] for q in (
        f"SELECT id, s, v FROM {t}",
        _files_sql(c, t),
        f"SELECT operation, summary FROM {t}.snapshots ORDER BY committed_at")], all=True)
    duck = oracle.duckdb(" UNION ALL ".join(
        f"SELECT '{c.name}' AS t, id, s, v FROM iceberg_scan('{floe[c.name]['metadata']}')"
        for c in CASES))
    pyiceberg = {c.name: oracle.pyiceberg(floe[c.name]["metadata"])["rows"]
                 for c in CASES if not c.equality_deletes}
    out: dict[str, Any] = {"duckdb": duck, "pyiceberg": pyiceberg}
    for k, c in enumerate(CASES):
        f_rows, f_files, f_snaps, s_rows, s_files, s_snaps = after[6 * k:6 * k + 6]
        out[c.name] = {
            "before_rows": before[2 * k], "before_files": before[2 * k + 1],
            "floe_rows": f_rows, "floe_files": f_files, "floe_snapshots": f_snaps,
            "spark_rows": s_rows, "spark_files": s_files, "spark_snapshots": s_snaps,
            "spark_call": calls[k][0] if calls[k] else {}, **floe[c.name]}
    return out


def _bag(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[k] for k in COLUMNS) for r in rows)


def _counts(files: list[dict[str, Any]], content: int, what: str = "n") -> dict[str, int]:
    return {json.dumps(r["partition"], sort_keys=True): r[what] for r in files
            if r["content"] == content}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_spark_reads_the_same_rows_as_before_and_as_sparks_twin(twins: Any, name: str) -> None:
    got = twins[name]
    assert _bag(got["floe_rows"]) == _bag(got["before_rows"])
    assert _bag(got["spark_rows"]) == _bag(got["before_rows"])


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_duckdb_reads_floes_result(twins: Any, name: str) -> None:
    rows = [r for r in twins["duckdb"] if r["t"] == name]
    assert _bag(rows) == _bag(twins[name]["before_rows"])


@pytest.mark.parametrize("name", [c.name for c in CASES if not c.equality_deletes])
def test_pyiceberg_reads_floes_result(twins: Any, name: str) -> None:
    assert _bag(twins["pyiceberg"][name]) == _bag(twins[name]["before_rows"])


def _replace_summaries(snaps: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [s["summary"] for s in snaps if s["operation"] == "replace"]


@pytest.mark.parametrize("name", DATA_CASES)
def test_floe_rewrote_the_files_spark_rewrote(twins: Any, name: str) -> None:
    got = twins[name]
    call, result = got["spark_call"], got["result"]
    assert result.rewritten_data_files_count == call["rewritten_data_files_count"] > 0
    assert result.failed_data_files_count == call["failed_data_files_count"] == 0
    # the same data files per partition are left (both twins had the same files before)
    assert _counts(got["floe_files"], 0) == _counts(got["spark_files"], 0)
    # before the compactions neither twin had a replace snapshot
    key = ("deleted-data-files", "deleted-records", "changed-partition-count")
    f_sum = [{k: s.get(k) for k in key} for s in _replace_summaries(got["floe_snapshots"])]
    s_sum = [{k: s.get(k) for k in key} for s in _replace_summaries(got["spark_snapshots"])]
    assert f_sum and sorted(map(str, f_sum)) == sorted(map(str, s_sum))


@pytest.mark.parametrize("name", DATA_CASES)
def test_fewer_data_files_per_partition(twins: Any, name: str) -> None:
    got = twins[name]
    before, after = _counts(got["before_files"], 0), _counts(got["floe_files"], 0)
    assert sum(after.values()) < sum(before.values())
    assert all(after.get(p, 0) <= n for p, n in before.items())


@pytest.mark.parametrize("name", DATA_CASES)
def test_no_position_delete_applies_to_a_file_floe_wrote(twins: Any, name: str) -> None:
    got = twins[name]
    table = got["table"].refresh()
    added = {p for g in got["result"].groups for p in g.added_files}
    assert added
    tasks = [t for t in plan_files(table.io, table.metadata).tasks if t.file_path in added]
    assert len(tasks) == len(added)
    for t in tasks:
        assert [d.path for d in t.delete_files
                if d.content == FileContent.POSITION_DELETES] == [], t.file_path


def test_sort_strategy_files_are_sorted(twins: Any) -> None:
    got = twins["cp_sort"]
    for path in (p for g in got["result"].groups for p in g.added_files):
        ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)


def test_where_filter_rewrote_one_partition_like_spark(twins: Any) -> None:
    got = twins["cp_where"]
    assert {dict(g.partition)["s"] for g in got["result"].groups} == {"p1"}
    assert got["spark_call"]["rewritten_data_files_count"] == 6


def test_evolved_table_lands_in_the_current_spec(twins: Any) -> None:
    table = twins["cp_evolve"]["table"].refresh()
    added = {p for g in twins["cp_evolve"]["result"].groups for p in g.added_files}
    specs = {t.spec_id for t in plan_files(table.io, table.metadata).tasks
             if t.file_path in added}
    assert specs == {table.metadata.default_spec_id}


def test_position_delete_rewrite_like_spark(twins: Any) -> None:
    got = twins["cp_posdel"]
    result, call = got["result"], got["spark_call"]
    assert result.rewritten_delete_files_count == call["rewritten_delete_files_count"] > 0
    # Spark's semi-join with the data files shuffles the deletes by file path, so it writes
    # one file per data file referenced; floe writes the planned number of files per group
    assert 0 < result.added_delete_files_count <= call["added_delete_files_count"]
    assert _counts(got["floe_files"], 1, "records") == _counts(got["spark_files"], 1, "records")
    before = sum(_counts(got["before_files"], 1).values())
    assert sum(_counts(got["floe_files"], 1).values()) < before


def test_remove_dangling_deletes_like_spark(twins: Any) -> None:
    got = twins["cp_v2p_eq"]
    result, call = got["result"], got["spark_call"]
    assert result.removed_dangling_delete_files
    # floe removes the position deletes of the rewritten files in the rewrite commit (and
    # counts them); Java's commit drops every delete file older than the oldest live data
    # (MergingSnapshotProducer) without counting it: the same files go either way
    assert result.removed_delete_files_count >= call["removed_delete_files_count"] > 0
    for content in (1, 2):
        assert _counts(got["floe_files"], content) == _counts(got["spark_files"], content)
