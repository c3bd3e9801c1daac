"""floe's row-level deletes and overwrites against Spark + Iceberg Java's on twin tables.

Spark builds every table twice (``<name>_f`` and ``<name>_s``) with the same statements: v1
and v2, partitioned and not, ``write.delete.mode`` set per case, some v2 tables already
carrying merge-on-read position deletes and equality deletes. floe runs its operation on the
``_f`` copy and Spark its SQL twin on the ``_s`` copy; Spark must then read the same rows from
both, the new snapshots must have the same operation, and PyIceberg (no equality deletes) and
DuckDB must read floe's result with the same rows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog

pytestmark = pytest.mark.interop

COLUMNS = ("id", "s", "v")
ARROW = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.int64())])


@dataclass(frozen=True)
class Case:
    name: str
    version: int
    partitioned: bool
    mode: str = "copy-on-write"
    pre_deletes: bool = False  # Spark MoR position deletes + Java equality deletes first
    delete: str | None = None  # floe delete_where / Spark DELETE FROM ... WHERE
    overwrite: tuple[str, list[tuple[Any, ...]]] | None = None  # (filter / partition, rows)
    dynamic: list[tuple[Any, ...]] | None = None  # dynamic partition overwrite rows

    @property
    def has_equality_deletes(self) -> bool:
        return self.pre_deletes


CASES = [
    Case("rl_d1u", 1, False, delete="id < 7 OR v > 150"),
    Case("rl_d1p", 1, True, delete="v != 40"),
    Case("rl_d2uc", 2, False, delete="id >= 12 AND id < 18 OR v IS NULL"),
    Case("rl_d2um", 2, False, "merge-on-read", delete="id >= 12 AND id < 18 OR v IS NULL"),
    Case("rl_d2pc", 2, True, delete="s = 'p1' AND id > 10 OR id = 2"),
    Case("rl_d2pm", 2, True, "merge-on-read", delete="s = 'p1' AND id > 10 OR id = 2"),
    Case("rl_d2meta", 2, True, "merge-on-read", delete="s = 'p2'"),
    Case("rl_pre_uc", 2, False, pre_deletes=True, delete="id < 20 AND v > 40"),
    Case("rl_pre_um", 2, False, "merge-on-read", True, delete="id < 20 AND v > 40"),
    Case("rl_pre_pc", 2, True, pre_deletes=True, delete="id > 4 AND id < 25"),
    Case("rl_pre_pm", 2, True, "merge-on-read", True, delete="id > 4 AND id < 25"),
    Case("rl_ow_p", 2, True, overwrite=("s = 'p1'", [(100, "p1", 1000), (103, "p1", None)])),
    Case("rl_dyn_p", 2, True, dynamic=[(200, "p0", 1), (202, "p2", None)]),
    Case("rl_dyn_u", 2, False, dynamic=[(7, "p1", 70)]),
    # no row has v = 150: Java's strict metrics (NULL satisfies !=) prove every file matches,
    # so Spark deletes the NULL rows too; floe keeps them, as SQL and Spark's row-level
    # rewrite do
    Case("rl_nulls", 2, False, delete="v != 150"),
]
NULLS_DIFFER = {"rl_nulls"}
BY_NAME = {c.name: c for c in CASES}


def _values(lo: int, hi: int) -> str:
    return ", ".join(f"({i}, 'p{i % 3}', {'NULL' if i % 5 == 0 else i * 10})"
                     for i in range(lo, hi))


def _sql_rows(rows: list[tuple[Any, ...]], skip: int | None = None) -> str:
    def lit(v: Any) -> str:
        return "NULL" if v is None else f"'{v}'" if isinstance(v, str) else str(v)

    return ", ".join("(" + ", ".join(lit(v) for k, v in enumerate(r) if k != skip) + ")"
                     for r in rows)


def _build_sql(case: Case, table: str) -> list[str]:
    props = {"format-version": str(case.version),
             "write.delete.mode": "merge-on-read" if case.pre_deletes else case.mode}
    tbl = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    out = [f"CREATE TABLE {table} (id bigint, s string, v bigint) USING iceberg "
           f"{'PARTITIONED BY (s) ' if case.partitioned else ''}TBLPROPERTIES ({tbl})"]
    out += [f"INSERT INTO {table} VALUES {_values(lo, lo + 10)}" for lo in (0, 10, 20)]
    if case.pre_deletes:
        out += [f"DELETE FROM {table} WHERE id IN (1, 13)",
                f"ALTER TABLE {table} SET TBLPROPERTIES ('write.delete.mode'='{case.mode}')"]
    return out


def _spark_op(case: Case, table: str) -> list[str]:
    if case.delete is not None:
        return [f"DELETE FROM {table} WHERE {case.delete}"]
    if case.overwrite is not None:
        pred, rows = case.overwrite
        return [f"INSERT OVERWRITE {table} PARTITION ({pred}) VALUES {_sql_rows(rows, skip=1)}"]
    assert case.dynamic is not None
    return ["SET spark.sql.sources.partitionOverwriteMode=dynamic",
            f"INSERT OVERWRITE {table} VALUES {_sql_rows(case.dynamic)}",
            "SET spark.sql.sources.partitionOverwriteMode=static"]


def _floe_op(case: Case, table: Any) -> None:
    if case.delete is not None:
        table.delete_where(case.delete)  # the mode comes from write.delete.mode
    elif case.overwrite is not None:
        pred, rows = case.overwrite
        table.overwrite_by_filter(pred, pa.Table.from_pylist(
            [dict(zip(COLUMNS, r, strict=True)) for r in rows], schema=ARROW))
    else:
        assert case.dynamic is not None
        table.overwrite_partitions(pa.Table.from_pylist(
            [dict(zip(COLUMNS, r, strict=True)) for r in case.dynamic], schema=ARROW))


@pytest.fixture(scope="module")
def twins(oracle: Any) -> dict[str, Any]:
    """Every case built twice, operated on by floe and Spark, and read back."""
    ident = {c.name: (f"oracle.db.{c.name}_f", f"oracle.db.{c.name}_s") for c in CASES}
    oracle.sql([s for c in CASES for t in ident[c.name] for s in _build_sql(c, t)])
    for c in CASES:
        if c.pre_deletes:
            for t in ident[c.name]:
                oracle.equality_delete(t.removeprefix("oracle."), "id", [3, 22])
    catalog = FileSystemCatalog("twins", str(oracle.warehouse))
    metadata: dict[str, str] = {}
    for c in CASES:
        table = catalog.load_table(f"db.{c.name}_f")
        _floe_op(c, table)
        metadata[c.name] = table.metadata_location
    oracle.sql([s for c in CASES for s in _spark_op(c, ident[c.name][1])])
    reads = oracle.sql(
        [q for c in CASES for t in ident[c.name] for q in (
            f"SELECT id, s, v FROM {t}",
            f"SELECT operation, summary FROM {t}.snapshots ORDER BY committed_at")], all=True)
    spark: dict[str, Any] = {}
    for k, c in enumerate(CASES):
        f_rows, f_snaps, s_rows, s_snaps = reads[4 * k:4 * k + 4]
        spark[c.name] = {"floe": f_rows, "spark": s_rows, "floe_snapshots": f_snaps,
                         "spark_snapshots": s_snaps}
    duck = oracle.duckdb(" UNION ALL ".join(
        f"SELECT '{c.name}' AS t, id, s, v FROM iceberg_scan('{metadata[c.name]}')"
        for c in CASES))
    pyiceberg = {c.name: oracle.pyiceberg(metadata[c.name])["rows"]
                 for c in CASES if not c.has_equality_deletes}
    return {"spark": spark, "duckdb": duck, "pyiceberg": pyiceberg, "metadata": metadata}


def _bag(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[k] for k in COLUMNS) for r in rows)


NAMES = [c.name for c in CASES if c.name not in NULLS_DIFFER]


@pytest.mark.parametrize("name", NAMES)
def test_spark_reads_the_same_rows_from_both_twins(twins: Any, name: str) -> None:
    got = twins["spark"][name]
    assert _bag(got["floe"]) == _bag(got["spark"])


@pytest.mark.parametrize("name", NAMES)
def test_the_new_snapshots_have_the_same_operation(twins: Any, name: str) -> None:
    got = twins["spark"][name]
    f_snaps, s_snaps = got["floe_snapshots"], got["spark_snapshots"]
    assert len(f_snaps) == len(s_snaps)
    assert f_snaps[-1]["operation"] == s_snaps[-1]["operation"]
    if BY_NAME[name].dynamic is not None:
        assert f_snaps[-1]["summary"]["replace-partitions"] == "true"
        assert s_snaps[-1]["summary"]["replace-partitions"] == "true"


def test_spark_metadata_delete_drops_null_rows_floe_keeps_them(twins: Any) -> None:
    got = twins["spark"]["rl_nulls"]
    nulls = {(i, f"p{i % 3}", None) for i in range(0, 30, 5)}
    assert set(_bag(got["floe"])) == nulls and got["spark"] == []
    assert got["spark_snapshots"][-1]["operation"] == "delete"
    assert got["floe_snapshots"][-1]["operation"] == "overwrite"  # the files with NULLs rewritten


@pytest.mark.parametrize("name", NAMES)
def test_duckdb_reads_floes_result_like_spark(twins: Any, name: str) -> None:
    rows = [r for r in twins["duckdb"] if r["t"] == name]
    assert _bag(rows) == _bag(twins["spark"][name]["spark"])


@pytest.mark.parametrize("name", [n for n in NAMES if not BY_NAME[n].has_equality_deletes])
def test_pyiceberg_reads_floes_result_like_spark(twins: Any, name: str) -> None:
    assert _bag(twins["pyiceberg"][name]) == _bag(twins["spark"][name]["spark"])
