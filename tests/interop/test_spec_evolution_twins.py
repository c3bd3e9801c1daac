"""Spec evolution twins: the same Spark-created table evolved by floe's ``UpdateSpec`` /
``ReplaceSortOrder`` and by Spark's ``ALTER TABLE ... ADD / DROP / REPLACE PARTITION FIELD``
and ``WRITE [LOCALLY] ORDERED BY`` / ``WRITE UNORDERED`` ends with identical
``partition-specs``, ``default-spec-id``, ``last-partition-id``, ``sort-orders`` and
``default-sort-order-id``; Spark then writes both alike, reads the same rows, and its
``files`` table reports the new spec id and partition values of files floe wrote.

Iceberg 1.10.2's Spark SQL has no ``RENAME PARTITION FIELD``: the rename case compares floe's
result with the spec Java's ``renameField`` yields, written out here, and checks that Spark
writes into the renamed spec.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.inspect import file_rows
from floe.metadata import metadata_to_json
from floe.table.table import Table

pytestmark = pytest.mark.interop

COLUMNS = "id bigint, data string, category string, ts timestamp"
COMPARED = ("partition-specs", "default-spec-id", "last-partition-id", "sort-orders",
            "default-sort-order-id")


@dataclass(frozen=True)
class Case:
    name: str
    # Spark DDL; empty for an unpartitioned table, which must gain a field (Spark's files
    # table has no partition column while no spec is partitioned)
    partitioned_by: str
    spark: tuple[str, ...]  # ALTER TABLE clauses, run in order (each one commit)
    floe: Callable[[Table], Any]  # floe's equivalent, on the floe twin
    floe_appends: bool = False  # floe's Table.append also writes into the floe twin
    # partition evolution differs between v1 and v2; sort orders do not, so each sort case
    # runs on one version (the module stays quick)
    versions: tuple[int, ...] = (1, 2)


def _steps(*changes: Callable[[Table], Any]) -> Callable[[Table], Any]:
    def run(t: Table) -> None:
        for change in changes:
            change(t)
    return run


CASES = [
    Case("add_bucket_truncate", "",
         ("ADD PARTITION FIELD bucket(16, id)", "ADD PARTITION FIELD truncate(4, data)"),
         _steps(lambda t: t.update_spec().add_field("bucket(16, id)").commit(),
                lambda t: t.update_spec().add_field("truncate(4, data)").commit())),
    Case("add_day_identity", "bucket(4, id)",
         ("ADD PARTITION FIELD days(ts)", "ADD PARTITION FIELD category"),
         _steps(lambda t: t.update_spec().add_field("day(ts)").commit(),
                lambda t: t.update_spec().add_identity("category").commit())),
    Case("add_named", "category", ("ADD PARTITION FIELD bucket(8, id) AS shard",),
         lambda t: t.update_spec().add_field("bucket(8, id)", "shard").commit(),
         floe_appends=True),
    # Spark drops by term, or by name when the name is not a column
    Case("drop", "bucket(16, id), days(ts), category",
         ("DROP PARTITION FIELD bucket(16, id)", "DROP PARTITION FIELD ts_day"),
         _steps(lambda t: t.update_spec().remove_field("bucket(16, id)").commit(),
                lambda t: t.update_spec().remove_field("ts_day").commit())),
    Case("drop_readd", "bucket(16, id), category",
         ("DROP PARTITION FIELD id_bucket", "ADD PARTITION FIELD bucket(16, id)"),
         _steps(lambda t: t.update_spec().remove_field("id_bucket").commit(),
                lambda t: t.update_spec().add_field("bucket(16, id)").commit())),
    Case("reuse_name", "bucket(16, id)",
         ("DROP PARTITION FIELD id_bucket", "ADD PARTITION FIELD bucket(8, id) AS id_bucket"),
         _steps(lambda t: t.update_spec().remove_field("id_bucket").commit(),
                lambda t: t.update_spec().add_field("bucket(8, id)", "id_bucket").commit())),
    Case("replace", "days(ts)", ("REPLACE PARTITION FIELD ts_day WITH hours(ts)",),
         lambda t: t.update_spec().remove_field("ts_day").add_field("hour(ts)").commit()),
    Case("replace_named", "bucket(16, id)",
         ("REPLACE PARTITION FIELD bucket(16, id) WITH bucket(32, id) AS id_bucket",),
         lambda t: t.update_spec().remove_field("bucket(16, id)")
         .add_field("bucket(32, id)", "id_bucket").commit()),
    Case("steps", "",
         ("ADD PARTITION FIELD bucket(16, id)", "ADD PARTITION FIELD days(ts)",
          "DROP PARTITION FIELD id_bucket_16", "ADD PARTITION FIELD truncate(4, data) AS t4",
          "REPLACE PARTITION FIELD days(ts) WITH months(ts)",
          "ADD PARTITION FIELD bucket(16, id)"),
         _steps(lambda t: t.update_spec().add_field("bucket(16, id)").commit(),
                lambda t: t.update_spec().add_field("day(ts)").commit(),
                lambda t: t.update_spec().remove_field("id_bucket_16").commit(),
                lambda t: t.update_spec().add_field("truncate(4, data)", "t4").commit(),
                lambda t: t.update_spec().remove_field("day(ts)").add_field("month(ts)").commit(),
                lambda t: t.update_spec().add_field("bucket(16, id)").commit()),
         floe_appends=True),
    Case("rename", "bucket(16, id), days(ts)", (),
         lambda t: t.update_spec().rename_field("id_bucket", "shard").commit()),
    Case("sort_desc", "bucket(4, id)", ("WRITE ORDERED BY id DESC NULLS LAST",),
         lambda t: t.replace_sort_order().desc("id", nulls_first=False).commit(),
         versions=(1,)),
    Case("sort_local", "days(ts)",
         ("WRITE LOCALLY ORDERED BY category, days(ts) DESC, bucket(4, id) ASC NULLS LAST",),
         lambda t: t.replace_sort_order().asc("category").desc("day(ts)")
         .asc("bucket(4, id)", nulls_first=False).commit(), versions=(2,)),
    Case("sort_unordered", "category", ("WRITE ORDERED BY id", "WRITE UNORDERED"),
         _steps(lambda t: t.replace_sort_order().asc("id").commit(),
                lambda t: t.replace_sort_order().unsorted().commit()), versions=(2,)),
    Case("sort_reuse", "days(ts)",
         ("WRITE ORDERED BY id", "WRITE ORDERED BY data DESC", "WRITE ORDERED BY id"),
         _steps(lambda t: t.replace_sort_order().from_text("id").commit(),
                lambda t: t.replace_sort_order().from_text("data desc").commit(),
                lambda t: t.replace_sort_order().from_text("id").commit()), versions=(1,)),
]
BY_NAME = {c.name: c for c in CASES}
KEYS = [f"{c.name}_v{v}" for c in CASES for v in c.versions]
# Java cannot build the files table of these (on either twin): its unified partition type
# refuses two field ids under one name ("multiple fields for name partition.id_bucket"), which
# a v2 table gets when a dropped field's name is given to a new field.
NO_FILES_TABLE = {"reuse_name_v2", "replace_named_v2"}

#: Java's renameField result for the rename case (no Spark SQL statement does it).
RENAMED_SPECS = [
    {"spec-id": 0, "fields": [
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000},
        {"name": "ts_day", "transform": "day", "source-id": 4, "field-id": 1001}]},
    {"spec-id": 1, "fields": [
        {"name": "shard", "transform": "bucket[16]", "source-id": 1, "field-id": 1000},
        {"name": "ts_day", "transform": "day", "source-id": 4, "field-id": 1001}]},
]

FIRST_ROWS = [(1, "alpha", "c1", "2024-01-01 10:00:00"), (2, "beta", "c2", "2024-01-02 11:00:00"),
              (3, "gamma", "c1", "2024-02-03 12:00:00"), (4, None, None, None)]
LATER_ROWS = [(5, "delta", "c3", "2024-03-04 13:00:00"),
              (6, "epsilon", "c1", "2024-03-05 14:00:00"), (7, "zeta", None, "2023-12-31 23:59:59")]
FLOE_ROWS = [(100, "floe1", "c9", "2024-05-06 07:08:09"), (101, "floe2", "c9", None)]


def _values(rows: list[tuple[Any, ...]]) -> str:
    def lit(v: Any, ts: bool = False) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, int):
            return str(v)
        return f"TIMESTAMP '{v}'" if ts else f"'{v}'"

    return ", ".join(
        f"({lit(i)}, {lit(d)}, {lit(c)}, {lit(t, ts=True)})" for i, d, c, t in rows)


def _arrow(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({
        "id": pa.array([r[0] for r in rows], pa.int64()),
        "data": pa.array([r[1] for r in rows], pa.string()),
        "category": pa.array([r[2] for r in rows], pa.string()),
        "ts": pa.array([None if r[3] is None else dt.datetime.fromisoformat(r[3]).replace(
            tzinfo=dt.timezone.utc) for r in rows], pa.timestamp("us", tz="UTC")),
    })


def _ident(key: str, twin: str) -> str:
    return f"oracle.db.sp_{key}_{twin}"


@dataclass
class Twins:
    catalog: FileSystemCatalog
    # floe's metadata JSON of both twins right after the evolution, before any later write
    floe_json: dict[str, dict[str, Any]]
    spark_json: dict[str, dict[str, Any]]
    rows: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]
    files: dict[str, list[dict[str, Any]]]
    floe_written: dict[str, set[str]]


@pytest.fixture(scope="module")
def twins(oracle: Any) -> Twins:
    catalog = FileSystemCatalog("sp", str(oracle.warehouse))
    create: list[str] = []
    for key in KEYS:
        case, version = BY_NAME[key.rsplit("_v", 1)[0]], int(key.rsplit("_v", 1)[1])
        part = f" PARTITIONED BY ({case.partitioned_by})" if case.partitioned_by else ""
        for twin in ("floe", "spark"):
            ident = _ident(key, twin)
            create += [  # the session's warehouse is new: no table to drop first
                f"CREATE TABLE {ident} ({COLUMNS}) USING iceberg{part} "
                f"TBLPROPERTIES ('format-version'='{version}')",
                f"INSERT INTO {ident} VALUES {_values(FIRST_ROWS)}",
            ]
    oracle.sql(create, all=True)

    alter: list[str] = []
    for key in KEYS:
        case = BY_NAME[key.rsplit("_v", 1)[0]]
        case.floe(catalog.load_table(f"db.sp_{key}_floe"))
        alter += [f"ALTER TABLE {_ident(key, 'spark')} {clause}" for clause in case.spark]
    if alter:
        oracle.sql(alter, all=True)

    def snapshot_json(twin: str) -> dict[str, dict[str, Any]]:
        return {key: metadata_to_json(catalog.load_table(f"db.sp_{key}_{twin}").metadata)
                for key in KEYS}

    floe_json, spark_json = snapshot_json("floe"), snapshot_json("spark")

    floe_written: dict[str, set[str]] = {}
    for key in KEYS:
        if BY_NAME[key.rsplit("_v", 1)[0]].floe_appends:
            t = catalog.load_table(f"db.sp_{key}_floe")
            before = {f["file_path"] for f in file_rows(t.io, t.metadata, t.current_snapshot())}
            t.append(_arrow(FLOE_ROWS))
            after = {f["file_path"] for f in file_rows(t.io, t.metadata, t.current_snapshot())}
            floe_written[key] = after - before

    later: list[str] = []
    reads: list[str] = []
    for key in KEYS:
        for twin in ("floe", "spark"):
            later.append(f"INSERT INTO {_ident(key, twin)} VALUES {_values(LATER_ROWS)}")
            reads.append(f"SELECT id, data, category, ts FROM {_ident(key, twin)}")
        if key in floe_written:
            later.append(f"INSERT INTO {_ident(key, 'spark')} VALUES {_values(FLOE_ROWS)}")
        if key not in NO_FILES_TABLE:
            reads.append(f"SELECT file_path, spec_id, partition, record_count "
                         f"FROM {_ident(key, 'floe')}.files")
    oracle.sql(later, all=True)
    results = iter(oracle.sql(reads, all=True))
    rows, files = {}, {}
    for key in KEYS:
        rows[key] = (next(results), next(results))
        if key not in NO_FILES_TABLE:
            files[key] = next(results)
    return Twins(catalog, floe_json, spark_json, rows, files, floe_written)


@pytest.mark.parametrize("key", KEYS)
def test_evolved_metadata_is_identical(twins: Twins, key: str) -> None:
    ours, theirs = twins.floe_json[key], twins.spark_json[key]
    if key.startswith("rename_"):
        assert ours["partition-specs"] == RENAMED_SPECS
        assert (ours["default-spec-id"], ours["last-partition-id"]) == (1, 1001)
        theirs = {**theirs, "partition-specs": RENAMED_SPECS, "default-spec-id": 1,
                  "partition-spec": RENAMED_SPECS[-1]["fields"]}
    for field in COMPARED:
        assert ours[field] == theirs[field], field
    if key.endswith("_v1"):
        assert ours["partition-spec"] == theirs["partition-spec"]


@pytest.mark.parametrize("key", KEYS)
def test_spark_reads_the_same_rows_from_both_twins(twins: Twins, key: str) -> None:
    floe_rows, spark_rows = twins.rows[key]
    expected = FIRST_ROWS + LATER_ROWS + (FLOE_ROWS if key in twins.floe_written else [])
    assert Counter(r["id"] for r in floe_rows) == Counter(r[0] for r in expected)
    def multiset(rows: list[dict[str, Any]]) -> Counter[tuple[tuple[str, Any], ...]]:
        return Counter(tuple(sorted(r.items())) for r in rows)

    assert multiset(floe_rows) == multiset(spark_rows)


@pytest.mark.parametrize("key", [k for k in KEYS if k not in NO_FILES_TABLE])
def test_spark_files_report_the_new_spec(twins: Twins, key: str) -> None:
    t = twins.catalog.load_table(f"db.sp_{key}_floe")
    md = t.metadata
    ours = {f["file_path"]: f for f in file_rows(t.io, md, t.current_snapshot())}
    theirs = {f["file_path"]: f for f in twins.files[key]}
    assert set(ours) == set(theirs)
    # the files table shows each partition field under its newest name (Java's unified type)
    newest: dict[int, str] = {}
    for spec in md.partition_specs:
        for pf in spec.fields:
            newest[pf.field_id] = pf.name
    for path, spark_file in theirs.items():
        assert spark_file["spec_id"] == ours[path]["spec_id"], path
        spec = md.spec_by_id(ours[path]["spec_id"])
        assert spec is not None
        for pf in spec.fields:
            value = ours[path]["partition"][pf.name]
            if str(pf.transform) != "void":
                assert spark_file["partition"][newest[pf.field_id]] == value, (path, pf.name)
    # files written after the evolution, by Spark's INSERT and floe's append, use the new spec
    current = t.current_snapshot()
    assert current is not None
    assert {f["spec_id"] for f in ours.values() if f["snapshot_id"] == current.snapshot_id} == {
        md.default_spec_id}
    for path in twins.floe_written.get(key, ()):
        assert theirs[path]["spec_id"] == md.default_spec_id
        assert md.default_spec_id > 0
