"""Reading through the floe source: every kind of table state against floe's own
``plan_files`` + ``plan_to_table``, pushed and unpushed filters, projections, deletes, types,
splits and bins, and one-line errors."""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import datasource as sds

from floe.errors import NotFound, ValidationError
from floe.scan import readers
from floe.scan.readers import plan_to_table
from floe.manifest import DataFile, FileContent
from floe.scan.incremental import plan_appends
from floe.scan.planning import FileScanTask, ScanPlan, plan_files
from floe.spark import read, spark_errors
from floe.spark.reader import plan_partitions, split_tasks, translate_filter
from tests.spark.spark_source_tables import (
    EVENTS_SCHEMA,
    History,
    all_types_rows,
    build_all_types,
    build_events,
    floe_rows,
)


def _norm(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, bytes) and len(v) == 16:
        return v  # uuids are compared as strings by the callers that have them
    return v


def canon(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted((k, _norm(v)) for k, v in r.items())) for r in rows)


def spark_rows(df: DataFrame) -> list[dict[str, Any]]:
    with spark_errors():
        return df.toArrow().to_pylist()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_events(tmp_path_factory.mktemp("read"))


STATES = {
    "current": ({}, {}),
    "snapshot-id": ({"snapshot_id": 0}, {"snapshot_id": 0}),
    "as-of": ({"as_of_timestamp": "as_of"}, {"as_of_ms": "as_of"}),
    "branch": ({"branch": "dev"}, {"ref": "dev"}),
    "tag": ({"tag": "first"}, {"ref": "first"}),
    "main": ({"branch": "main"}, {"ref": "main"}),
}


def _resolve(options: dict[str, Any], h: History) -> dict[str, Any]:
    out = {}
    for k, v in options.items():
        out[k] = h.snapshots[v] if k == "snapshot_id" else h.info[v] if v == "as_of" else v
    return out


@pytest.mark.parametrize("state", list(STATES))
def test_table_states_match_floe(spark: Any, events: History, state: str) -> None:
    ours, theirs = (_resolve(o, events) for o in STATES[state])
    got = spark_rows(read(spark, events.location, **ours))
    assert canon(got) == canon(floe_rows(events.table, **theirs))
    assert got  # every state has rows


@pytest.mark.parametrize("start,end,count", [(0, 1, 10), (0, None, 20), (1, 1, 0)])
def test_incremental_reads_match_plan_appends(spark: Any, tmp_path: Path, start: int,
                                              end: int | None, count: int) -> None:
    from floe.catalog.filesystem import FileSystemCatalog
    from tests.spark.spark_source_tables import events_rows

    table = FileSystemCatalog("t", str(tmp_path)).create_table("db.inc", EVENTS_SCHEMA)
    ids = []
    for lo in (0, 10, 20):
        table.append(events_rows(lo, lo + 10))
        ids.append(table.refresh().current_snapshot().snapshot_id)  # type: ignore[union-attr]
    options = {"start_snapshot_id": ids[start]}
    if end is not None:
        options["end_snapshot_id"] = ids[end]
    got = spark_rows(read(spark, table.location, **options))
    plan = plan_appends(table.io, table.metadata, ids[start], options.get("end_snapshot_id"))
    expected = plan_to_table(table.io, plan).to_pylist()
    assert canon(got) == canon(expected)
    assert len(got) == count


@pytest.mark.parametrize("options,error,text", [
    ({"end_snapshot_id": 1}, ValidationError, "only specify option end-snapshot-id"),
    ({"start_snapshot_id": 1, "snapshot_id": 2}, ValidationError, "incremental"),
    ({"branch": "dev", "tag": "first"}, ValidationError, "not both"),
    ({"tag": "dev"}, ValidationError, "is a branch"),
    ({"snapshot_id": 42}, NotFound, "snapshot 42 does not exist"),
    ({"filter": "nope = 1"}, ValidationError, "unknown column 'nope'"),
])
def test_bad_read_options_are_one_line_errors(spark: Any, events: History,
                                              options: dict[str, Any], error: type,
                                              text: str) -> None:
    with pytest.raises(error) as info:
        read(spark, events.location, **options)
    assert text in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("option", ["split_size", "batch_size"])
def test_a_zero_size_option_is_refused(spark: Any, events: History, option: str) -> None:
    with pytest.raises(ValidationError, match="must be positive"):
        with spark_errors():
            read(spark, events.location, **{option: 0}).collect()


def test_an_unknown_table_is_not_found(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no such file or directory"):
        read(spark, str(tmp_path / "missing"))


# -- filters -----------------------------------------------------------------------------------

FILTERS = [
    "id > 40", "id <> 7", "NOT (id = 7)", "id IN (1, 2, 44, 1000)", "id IN (1, NULL)",
    "NOT (id IN (1, NULL))", "id BETWEEN 10 AND 20", "cat = 'a'", "cat IS NULL",
    "cat <=> NULL", "NOT (cat <=> 'b')", "cat LIKE 'a%'", "cat LIKE '%b'",
    "NOT (cat LIKE 'a%')", "cat > 'a'", "v > 10", "v = 0.0", "isnan(v)", "NOT (v > 10)",
    "ts < TIMESTAMP '2024-01-01 05:00:00'", "dec = 2.50", "dec IS NULL",
    "id > 5 AND cat = 'b'", "id < 3 OR cat = 'c'", "id % 2 = 0",
]


@pytest.fixture(scope="module")
def materialised(spark: Any, events: History) -> DataFrame:
    """The table's rows held by Spark: a filter on them is evaluated by Spark alone."""
    return read(spark, events.location).localCheckpoint()


@pytest.mark.parametrize("where", FILTERS)
def test_pushed_and_unpushed_filters_give_the_same_rows(spark: Any, events: History,
                                                        materialised: DataFrame,
                                                        where: str) -> None:
    pushed = spark_rows(read(spark, events.location, pushdown=True).filter(where))
    unpushed = spark_rows(materialised.filter(where))
    assert canon(pushed) == canon(unpushed)


@pytest.mark.skipif(tuple(int(x) for x in __import__("pyspark").__version__.split(".")[:2])
                    > (4, 3), reason="the Spark behaviour this documents is in PySpark <= 4.3")
def test_why_pushdown_is_opt_in_on_this_spark(spark: Any, events: History) -> None:
    """The reason ``pushdown`` is off by default here: with it on, PySpark 4.3 answers a later
    unfiltered query of the same DataFrame with the earlier filter's rows."""
    df = read(spark, events.location, pushdown=True)
    everything = len(floe_rows(events.table))
    filtered = df.filter("cat = 'a'").count()
    assert filtered < everything
    assert df.count() == filtered  # wrong: Spark reused the pushed plan


def test_without_pushdown_a_dataframe_serves_many_queries(spark: Any, events: History) -> None:
    """Spark 4.3 reuses a pushdown's plan for the next query of the DataFrame that pushes no
    filter; by default nothing floe plans depends on pushed filters."""
    df = read(spark, events.location)
    everything = len(floe_rows(events.table))
    assert df.filter("cat = 'a'").count() < everything
    assert df.count() == everything
    assert df.filter("id > 40").count() < everything
    assert len(spark_rows(df)) == everything


def test_a_pushed_partition_filter_prunes_files(spark: Any, events: History) -> None:
    df = read(spark, events.location, split_size=1, pushdown=True)  # a partition per file
    everything = df.rdd.getNumPartitions()
    only_a = df.filter("cat = 'a'").rdd.getNumPartitions()
    assert 0 < only_a < everything


SCHEMA = EVENTS_SCHEMA


@pytest.mark.parametrize("spark_filter,exact", [
    (sds.EqualTo(("id",), 3), "id = 3"),
    (sds.GreaterThan(("cat",), "a"), "cat > 'a'"),
    (sds.In(("id",), (1, 2, None)), "id IN (1, 2)"),
    (sds.Not(sds.In(("id",), (1, None))), "false"),
    (sds.Not(sds.EqualNullSafe(("cat",), "a")), "cat IS NULL OR cat != 'a'"),
    (sds.EqualNullSafe(("cat",), None), "cat IS NULL"),
    (sds.StringStartsWith(("cat",), "a"), "cat STARTS WITH 'a'"),
    (sds.Not(sds.StringStartsWith(("cat",), "a")), "cat NOT STARTS WITH 'a'"),
    (sds.IsNotNull(("v",)), "v IS NOT NULL"),
    (sds.GreaterThan(("v",), 1.0), None),  # NaN and -0.0: Spark's order is not Iceberg's
    (sds.EqualTo(("v",), 0.0), None),
    (sds.StringEndsWith(("cat",), "a"), None),
    (sds.StringContains(("cat",), "a"), None),
    (sds.EqualTo(("nope",), 1), None),
    (sds.EqualTo(("cat",), [1, 2]), None),
    (sds.EqualTo(("id",), "not a number"), None),
])
def test_translated_filters(spark_filter: sds.Filter, exact: str | None) -> None:
    got = translate_filter(spark_filter, SCHEMA)
    assert (None if got is None else str(got).lower()) == (
        None if exact is None else exact.lower())


# -- projections, deletes, types ---------------------------------------------------------------

def test_a_narrower_schema_is_a_projection(spark: Any, events: History) -> None:
    df = spark.read.format("floe").schema("dec decimal(9,2), id long").load(events.location)
    got = spark_rows(df)
    assert list(got[0]) == ["dec", "id"]
    expected = [{"dec": r["dec"], "id": r["id"]} for r in floe_rows(events.table)]
    assert canon(got) == canon(expected)


@pytest.mark.parametrize("schema,text", [
    ("id int", "reads as bigint"),
    ("idd long", "column 'idd' of the given schema is not in table"),
])
def test_a_bad_projection_is_refused(spark: Any, events: History, schema: str,
                                     text: str) -> None:
    with pytest.raises(ValidationError, match=text):
        with spark_errors():
            spark.read.format("floe").schema(schema).load(events.location).collect()


def test_position_and_equality_deletes_are_applied(spark: Any, events: History) -> None:
    ids = {r["id"] for r in spark_rows(read(spark, events.location))}
    assert not ids & {3, 13, 33, 34, 5, 35}
    assert {4, 36, 89} <= ids
    # the files with deletes are really there
    events.table.refresh()
    tasks = plan_files(events.table.io, events.table.metadata).tasks
    contents = {d.content for t in tasks for d in t.delete_files}
    assert contents == {FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES}


def test_every_type_reads_as_spark_types(spark: Any, tmp_path: Path) -> None:
    table = build_all_types(tmp_path)
    got = spark_rows(read(spark, table.location))
    expected = all_types_rows().to_pylist()
    for row in expected:
        row["u"] = None if row["u"] is None else str(uuid.UUID(bytes=row["u"]))
    assert canon(got) == canon(expected)
    df = read(spark, table.location)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {
        "i": "int", "l": "bigint", "f": "float", "x": "double", "dec": "decimal(12,3)",
        "d": "date", "ntz": "timestamp_ntz", "tz": "timestamp", "s": "string", "u": "string",
        "fx": "binary", "bin": "binary", "bo": "boolean", "st": "struct<a:int,b:string>",
        "arr": "array<bigint>", "m": "map<string,double>"}
    assert not df.schema["i"].nullable and df.schema["l"].nullable


def test_time_columns_read_and_write_as_spark_time(spark: Any, tmp_path: Path) -> None:
    import datetime as dt

    import pyarrow as pa

    from floe.catalog.filesystem import FileSystemCatalog
    from floe.schema import Schema
    from floe.spark import write
    from floe.types import LongType, NestedField, TimeType

    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "t", TimeType()))
    catalog = FileSystemCatalog("t", str(tmp_path))
    source = catalog.create_table("db.times", schema)
    source.append(pa.table({"id": pa.array([1, 2], pa.int64()),
                            "t": pa.array([dt.time(1, 2, 3, 4), None], pa.time64("us"))}))
    df = read(spark, source.location)
    assert df.schema["t"].dataType.simpleString() == "time(6)"
    target = catalog.create_table("db.times_copy", schema)
    write(df, target.location)
    assert floe_rows(target) == floe_rows(source) == [
        {"id": 1, "t": dt.time(1, 2, 3, 4)}, {"id": 2, "t": None}]


def test_the_filter_option_is_applied_exactly(spark: Any, events: History) -> None:
    got = spark_rows(read(spark, events.location, filter="id >= 80 AND cat = 'b'"))
    assert canon(got) == canon(floe_rows(events.table, row_filter="id >= 80 AND cat = 'b'"))
    assert got and all(r["id"] >= 80 and r["cat"] == "b" for r in got)


def test_an_empty_table_reads_no_rows(spark: Any, tmp_path: Path) -> None:
    from floe.catalog.filesystem import FileSystemCatalog

    table = FileSystemCatalog("t", str(tmp_path)).create_table("db.empty", EVENTS_SCHEMA)
    assert spark_rows(read(spark, table.location)) == []


def test_a_catalog_table_reads_through_its_catalog(spark: Any, events: History,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = str(Path(events.location).parents[1])
    monkeypatch.setenv("FLOE_WAREHOUSE", warehouse)
    monkeypatch.setenv("FLOE_CATALOGS", str(Path(warehouse) / "none.toml"))
    (Path(warehouse) / "none.toml").write_text("")
    got = spark_rows(read(spark, "local:db.events"))
    assert canon(got) == canon(floe_rows(events.table))


# -- splits and bins ---------------------------------------------------------------------------

def _task(size: int, offsets: list[int] | None) -> FileScanTask:
    df = DataFile(FileContent.DATA, f"/t/{size}.parquet", "PARQUET", (), 100, size,
                  split_offsets=offsets)
    return FileScanTask(df, (), None, 0, 1)


@pytest.mark.parametrize("size,offsets,target,ranges", [
    # row groups of 296, 300, 300 and 100 bytes, combined while the range fits the target
    (1000, [4, 300, 600, 900], 650, [(4, 596), (600, 400)]),
    (1000, [4, 300, 600, 900], 350, [(4, 296), (300, 300), (600, 300), (900, 100)]),
    (1000, [4, 300, 600, 900], 100, [(4, 296), (300, 300), (600, 300), (900, 100)]),
    (1000, [4, 900], 950, [(4, 896), (900, 100)]),      # row groups of 896 + 100 > 950
    (1000, [4, 900], 1000, [(0, None)]),                # not larger than the target: whole
    (1000, [4], 300, [(0, None)]),                      # one row group
    (1000, None, 300, [(0, None)]),                     # no offsets
    (1000, [4, 600, 300], 300, [(0, None)]),            # offsets out of order: ignored
    (1000, [4, 300, 1000], 300, [(0, None)]),           # an offset past the data: ignored
])
def test_files_are_split_at_their_offsets(size: int, offsets: list[int] | None, target: int,
                                          ranges: list[tuple[int, int | None]]) -> None:
    task = _task(size, offsets)
    pieces = split_tasks([task], target, splittable=True)
    assert [(p.start, p.length) for p in pieces] == ranges
    assert all(p.data_file == task.data_file for p in pieces)
    if len(pieces) > 1:  # the ranges cover the file from its first row group, in order
        assert pieces[0].start == offsets[0]  # type: ignore[index]
        assert all(a.start + a.length == b.start for a, b in zip(pieces, pieces[1:]))
        assert pieces[-1].start + pieces[-1].length == size
    # without a reader of byte ranges every file is read whole
    assert split_tasks([task], target, splittable=False) == [task]


def test_small_files_are_bin_packed_into_partitions() -> None:
    plan = ScanPlan(None, None, EVENTS_SCHEMA, None,  # type: ignore[arg-type]
                    tasks=[_task(100, None) for _ in range(10)])
    parts = plan_partitions(plan, split_size=450, open_cost=10)
    assert [len(p.tasks) for p in parts] == [4, 4, 2]
    parts = plan_partitions(plan, split_size=450, open_cost=200)  # each file weighs 200
    assert [len(p.tasks) for p in parts] == [2, 2, 2, 2, 2]


def test_input_partitions_follow_read_split_target_size(spark: Any, tmp_path: Path) -> None:
    """One file scan task per file, bin-packed by the table's ``read.split.target-size``
    (each file weighing at least the open cost); the ``split-size`` option overrides it.
    Every partition count reads every row once."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.properties import SPLIT_SIZE
    from tests.spark.spark_source_tables import events_rows

    table = FileSystemCatalog("t", str(tmp_path)).create_table("db.splits", EVENTS_SCHEMA)
    for lo in range(0, 60, 10):
        table.append(events_rows(lo, lo + 10))
    sizes = [t.data_file.file_size_in_bytes
             for t in plan_files(table.io, table.refresh().metadata).tasks]
    assert len(sizes) == 6
    # the default (128 MiB) holds all six files, 4 MiB open cost each
    counts = {"default": read(spark, table.location).rdd.getNumPartitions()}
    table.set_properties({SPLIT_SIZE: str(2 * max(sizes))})
    counts["two files"] = read(spark, table.location, file_open_cost=0).rdd.getNumPartitions()
    table.set_properties({SPLIT_SIZE: "1"})
    counts["one file"] = read(spark, table.location).rdd.getNumPartitions()
    counts["option"] = read(spark, table.location, split_size=str(10 ** 9)
                            ).rdd.getNumPartitions()
    assert counts == {"default": 1, "two files": 3, "one file": 6, "option": 1}
    ids = sorted(r["id"] for r in spark_rows(read(spark, table.location)))
    assert ids == list(range(60))


def test_partition_tasks_travel_without_metrics() -> None:
    from floe.spark.reader import ship_task

    task = _task(100, None)
    task = task._replace(data_file=task.data_file._replace(lower_bounds={1: b"x"}))
    assert ship_task(task).data_file.lower_bounds is None


@pytest.mark.skipif(not getattr(readers, "READS_SPLITS", False),
                    reason="floe's reader reads whole files (no byte ranges) yet")
def test_a_large_file_is_read_in_splits(spark: Any, tmp_path: Path) -> None:
    """One file of eight row groups, split at its offsets into several partitions, read with
    its position deletes: every row once."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.io.parquet import write_parquet
    from floe.table.writer import write_data_files
    from tests.spark.spark_source_tables import events_rows

    table = FileSystemCatalog("t", str(tmp_path)).create_table("db.big", EVENTS_SCHEMA)
    rows = events_rows(0, 5000)
    files = write_data_files(table.io, table.metadata, rows)
    data, metrics = write_parquet(rows, EVENTS_SCHEMA, row_group_size=700)
    table.io.write(files[0].file_path, data, overwrite=True)
    big = files[0]._replace(file_size_in_bytes=len(data), split_offsets=metrics.split_offsets)
    table.new_transaction().fast_append([big]).commit()
    table.delete_where("id IN (3, 701, 702, 4999)", mode="merge-on-read")
    df = read(spark, table.location, split_size=8000)
    assert df.rdd.getNumPartitions() > 1
    got = sorted(r["id"] for r in spark_rows(df))
    assert got == sorted(set(range(5000)) - {3, 701, 702, 4999})
