"""Writing through the floe source: append, overwrite (dynamic, static), branches, the files
the tasks write (partitioned, sorted, sized, with metrics), schema checks, failed jobs and
concurrent writes."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, ValidationError
from floe.scan.readers import plan_to_table
from floe.manifest import FileContent
from floe.partitioning import parse_partition_by
from floe.scan.planning import plan_files
from floe.sorting import parse_sort_by
from floe.spark import SparkJobError, read, write
from floe.spark.writer import WRITE_ID
from floe.table import Table
from floe.types import NestedField
from tests.spark.spark_source_tables import (
    ALL_TYPES_SCHEMA,
    EVENTS_SCHEMA,
    all_types_rows,
    build_events,
    floe_rows,
    table_files,
)

ROWS_SCHEMA = "id long, cat string, v double"


def _table(tmp_path: Path, *, partition: str | None = "cat", sort: str | None = None,
           properties: dict[str, str] | None = None, name: str = "w") -> Table:
    cat = FileSystemCatalog("t", str(tmp_path))
    kwargs: dict[str, Any] = {"properties": properties or {}}
    if partition:
        kwargs["spec"] = parse_partition_by(partition, EVENTS_SCHEMA)
    if sort:
        kwargs["sort_order"] = parse_sort_by(sort, EVENTS_SCHEMA)
    return cat.create_table(f"db.{name}", EVENTS_SCHEMA, **kwargs)


def _rows(spark: SparkSession, lo: int, hi: int, cats: str = "abc") -> DataFrame:
    return spark.range(lo, hi, 1, 2).select(
        F.col("id"),
        F.element_at(F.array(*[F.lit(c) for c in cats]),
                     (F.col("id") % len(cats) + 1).cast("int")).alias("cat"),
        (F.col("id") * 1.5).alias("v"))


def _ids(table: Table, **plan: Any) -> list[int]:
    return sorted(r["id"] for r in floe_rows(table, **plan))


def test_append_then_read_back(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    sid = write(_rows(spark, 0, 100), table.location)
    table.refresh()
    assert sid == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    snap = table.current_snapshot()
    assert snap is not None and snap.summary["operation"] == "append"
    assert snap.summary[WRITE_ID] and snap.summary["added-records"] == "100"
    assert _ids(table) == list(range(100))
    rows = floe_rows(table)
    assert all(r["v"] == r["id"] * 1.5 and r["cat"] == "abc"[r["id"] % 3] for r in rows)
    assert rows[0]["ts"] is None  # a column the DataFrame lacks is null
    back = read(spark, table.location).toArrow().to_pylist()
    assert sorted(r["id"] for r in back) == list(range(100))


def test_files_are_partitioned_sorted_and_have_metrics(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    table = _table(tmp_path, sort="id desc")
    write(_rows(spark, 0, 300), table.location)
    table.refresh()
    tasks = plan_files(table.io, table.metadata).tasks
    assert {t.data_file.partition for t in tasks} == {("a",), ("b",), ("c",)}
    order_id = table.sort_order().order_id
    for t in tasks:
        df = t.data_file
        assert f"/data/cat={df.partition[0]}/" in df.file_path
        assert df.sort_order_id == order_id and df.spec_id == table.spec().spec_id
        assert df.lower_bounds and df.upper_bounds and df.value_counts and df.split_offsets
        ids = pq.read_table(df.file_path).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
        assert len(ids) == df.record_count
        assert df.file_size_in_bytes == Path(df.file_path).stat().st_size


def test_files_roll_at_the_target_size(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, partition=None)
    write(_rows(spark, 0, 20_000), table.location, target_file_size_bytes=40_000)
    table.refresh()
    sizes = [t.data_file.file_size_in_bytes for t in plan_files(table.io, table.metadata).tasks]
    assert len(sizes) >= 4  # two tasks of 10,000 rows, each about 1.5 target sizes
    assert 40_000 * 0.7 < max(sizes) < 40_000 * 1.2
    assert _ids(table) == list(range(20_000))


def test_dynamic_overwrite_replaces_the_partitions_written(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    table = _table(tmp_path)
    write(_rows(spark, 0, 30), table.location)
    sid = write(_rows(spark, 100, 110, cats="a"), table.location, mode="overwrite",
                overwrite_mode="dynamic")
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and sid == snap.snapshot_id
    assert snap.summary["replace-partitions"] == "true"
    rows = floe_rows(table)
    assert sorted(r["id"] for r in rows if r["cat"] == "a") == list(range(100, 110))
    assert sorted(r["id"] for r in rows if r["cat"] != "a") == [
        i for i in range(30) if i % 3 != 0]
    # nothing written: nothing committed
    assert write(_rows(spark, 0, 0), table.location, mode="overwrite",
                 overwrite_mode="dynamic") is None
    assert table.refresh().current_snapshot().snapshot_id == sid  # type: ignore[union-attr]


@pytest.mark.parametrize("row_filter,new_lo,new_hi,kept", [
    ("cat = 'b'", 200, 203, lambda i: i % 3 != 1),      # whole partition
    ("id >= 20", 20, 25, lambda i: i < 20),             # files matching partly are rewritten
    (None, 500, 505, lambda i: False),                   # everything
])
def test_static_overwrite_replaces_the_rows_matching_the_filter(
        spark: SparkSession, tmp_path: Path, row_filter: str | None, new_lo: int, new_hi: int,
        kept: Any) -> None:
    table = _table(tmp_path)
    write(_rows(spark, 0, 30), table.location)
    new = _rows(spark, new_lo, new_hi)
    if row_filter == "cat = 'b'":
        new = new.withColumn("cat", F.lit("b"))
    write(new, table.location, mode="overwrite", filter=row_filter)
    table.refresh()
    assert _ids(table) == sorted([i for i in range(30) if kept(i)] + list(range(new_lo, new_hi)))
    assert table.current_snapshot().summary["operation"] == "overwrite"  # type: ignore[union-attr]


def test_static_overwrite_refuses_rows_outside_its_filter(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    table = _table(tmp_path)
    write(_rows(spark, 0, 30), table.location)
    before = (table.refresh().metadata_location, table_files(table.location))
    with pytest.raises(ValidationError, match="do not match it") as info:
        write(_rows(spark, 0, 10), table.location, mode="overwrite", filter="id >= 5")
    assert "\n" not in str(info.value)
    assert (table.refresh().metadata_location, table_files(table.location)) == before


def test_writes_to_a_branch_leave_main_alone(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    write(_rows(spark, 0, 10), table.location)
    main = table.refresh().current_snapshot().snapshot_id  # type: ignore[union-attr]
    write(_rows(spark, 10, 20), table.location, branch="audit")
    write(_rows(spark, 20, 25), table.location, branch="audit")
    table.refresh()
    assert table.current_snapshot().snapshot_id == main  # type: ignore[union-attr]
    assert _ids(table) == list(range(10))
    assert _ids(table, ref="audit") == list(range(25))
    got = read(spark, table.location, branch="audit").toArrow().column("id").to_pylist()
    assert sorted(got) == list(range(25))
    table.manage_snapshots().create_tag("t1", main).commit()
    with pytest.raises(ValidationError, match="is a tag"):
        write(_rows(spark, 0, 1), table.location, branch="t1")


@pytest.mark.parametrize("schema,rows,text", [
    ("cat string, v double", [("a", 1.0)], "has no column 'id', which table"),
    ("id long, colour string", [(1, "red")], "column 'colour' of the DataFrame is not in"),
    ("ID long", [(1,)], "did you mean 'id'"),
    ("id string", [("1",)], "column 'id' is string in the DataFrame, which cannot be written"),
    ("id long, v string", [(1, "x")], "column 'v' is string in the DataFrame"),
    ("id long, dec decimal(12,2)", [(1, None)], "column 'dec' is decimal(12,2)"),
    ("id long, ts timestamp_ntz", [(1, None)], "column 'ts' is timestamp_ntz"),
])
def test_schema_mismatches_are_one_clear_line(spark: SparkSession, tmp_path: Path,
                                              schema: str, rows: list[Any], text: str) -> None:
    table = _table(tmp_path)
    with pytest.raises(ValidationError) as info:
        write(spark.createDataFrame(rows, schema), table.location)
    assert text in str(info.value)
    assert "\n" not in str(info.value)
    assert table.refresh().current_snapshot() is None


def test_widening_types_are_accepted(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    df = spark.createDataFrame([(1, "a", 2.5)], "id int, cat string, v float")
    write(df, table.location)
    assert floe_rows(table)[0] | {"ts": None} == {"id": 1, "cat": "a", "v": 2.5, "ts": None,
                                                   "dec": None}


def test_nulls_in_a_required_column_fail_the_write(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = table_files(table.location)
    df = spark.createDataFrame([(1, "a"), (None, "b")], "id long, cat string")
    with pytest.raises(ValidationError, match="column id is required but the DataFrame has 1"):
        write(df, table.location)
    assert table.refresh().current_snapshot() is None
    assert table_files(table.location) == before


def test_a_failed_job_leaves_no_snapshot_and_no_files(spark: SparkSession,
                                                      tmp_path: Path) -> None:
    table = _table(tmp_path, partition=None)
    write(_rows(spark, 0, 10), table.location)
    before = (table.refresh().metadata_location, table_files(table.location))

    @F.udf("double", useArrow=False)
    def boom(i: int) -> float:
        if i == 30_000:
            raise ValueError("boom on one partition")
        return float(i)

    # partition 0 writes (and rolls small files) while partition 1 fails part way
    df = spark.range(0, 40_000, 1, 2).select(F.col("id"), F.lit("x").alias("cat"),
                                             boom("id").alias("v"))
    with pytest.raises(SparkJobError, match="ValueError: boom on one partition") as info:
        write(df, table.location, target_file_size_bytes=20_000)
    assert "\n" not in str(info.value)
    assert (table.refresh().metadata_location, table_files(table.location)) == before


def test_concurrent_writes_both_land(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    errors: list[BaseException] = []

    def append(lo: int) -> None:
        try:
            write(_rows(spark, lo, lo + 50), table.location)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=append, args=(lo,)) for lo in (0, 1000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _ids(table) == list(range(50)) + list(range(1000, 1050))
    appends = [s for s in table.refresh().snapshots() if s.summary.get(WRITE_ID)]
    assert len(appends) == 2


def test_concurrent_conflicting_overwrites_lose_nothing(spark: SparkSession,
                                                        tmp_path: Path) -> None:
    """Two serializable overwrites of the same rows: one lands, the other fails with a
    conflict (and leaves no file behind), or both land one after the other; never a mix."""
    table = _table(tmp_path)
    write(_rows(spark, 0, 30), table.location)
    outcomes: dict[int, Any] = {}

    def overwrite(lo: int) -> None:
        try:
            outcomes[lo] = write(_rows(spark, lo, lo + 5).withColumn("cat", F.lit("a")),
                                 table.location, mode="overwrite", filter="cat = 'a'",
                                 isolation_level="serializable")
        except CommitConflict as e:
            outcomes[lo] = e

    threads = [threading.Thread(target=overwrite, args=(lo,)) for lo in (300, 400)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    landed = [lo for lo, o in outcomes.items() if isinstance(o, int)]
    assert landed, outcomes
    rows = floe_rows(table)
    a_ids = sorted(r["id"] for r in rows if r["cat"] == "a")
    assert a_ids in ([*range(300, 305)], [*range(400, 405)])
    assert sorted(r["id"] for r in rows if r["cat"] != "a") == [i for i in range(30)
                                                                if i % 3 != 0]
    # the loser's files are gone: every data file on disk belongs to a snapshot
    on_disk = {str(p) for p in Path(table.location, "data").rglob("*.parquet")}
    live = {t.data_file.file_path for s in table.refresh().snapshots()
            for t in plan_files(table.io, table.metadata, snapshot_id=s.snapshot_id).tasks}
    assert on_disk == live


def test_a_write_that_loses_a_conflict_leaves_no_files(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    """A serializable overwrite of ``cat = 'a'`` while another writer appends a row of
    ``cat = 'a'`` (from inside the job, so the order is fixed): the commit fails with a
    conflict, the other writer's row stays, and no file of the failed write is left."""
    table = _table(tmp_path)
    write(_rows(spark, 0, 30), table.location)
    location = table.location

    @F.udf("string", useArrow=False)
    def concurrent_append(i: int) -> str:
        if i == 300:  # once, on the executor, while the job runs
            import pyarrow as pa

            from floe.catalog.filesystem import directory_table

            from floe.io.parquet import schema_to_arrow

            other = directory_table(location)
            other.append(pa.Table.from_pylist([{"id": 999, "cat": "a"}],
                                              schema=schema_to_arrow(other.schema())))
        return "a"

    new = _rows(spark, 300, 305).withColumn("cat", concurrent_append("id"))
    with pytest.raises(CommitConflict) as info:
        write(new, location, mode="overwrite", filter="cat = 'a'",
              isolation_level="serializable")
    assert "\n" not in str(info.value)
    rows = floe_rows(table)
    assert sorted(r["id"] for r in rows) == sorted([*range(30), 999])
    assert not [s for s in table.refresh().snapshots() if s.summary.get(WRITE_ID)][1:]
    on_disk = {str(p) for p in Path(location, "data").rglob("*") if p.is_file()}
    live = {t.data_file.file_path for s in table.snapshots()
            for t in plan_files(table.io, table.metadata, snapshot_id=s.snapshot_id).tasks}
    assert on_disk == live


def test_every_type_round_trips(spark: SparkSession, tmp_path: Path) -> None:
    from tests.spark.spark_source_tables import build_all_types

    source = build_all_types(tmp_path, "source")
    target = FileSystemCatalog("t", str(tmp_path)).create_table(
        "db.target", ALL_TYPES_SCHEMA, spec=parse_partition_by("truncate(2, s)",
                                                                ALL_TYPES_SCHEMA))
    write(read(spark, source.location), target.location)
    got = plan_to_table(target.io, plan_files(target.io, target.refresh().metadata))
    expected = all_types_rows()
    key = repr
    assert sorted(map(key, got.to_pylist())) == sorted(map(key, expected.to_pylist()))


def test_an_empty_append_commits_an_empty_snapshot(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path)
    sid = write(_rows(spark, 0, 0), table.location)
    snap = table.refresh().current_snapshot()
    assert snap is not None and snap.snapshot_id == sid
    assert snap.summary.get("added-records") is None


def test_writes_after_deletes_keep_the_deletes(spark: SparkSession, tmp_path: Path) -> None:
    h = build_events(tmp_path, "events_w")
    before = _ids(h.table)
    write(spark.createDataFrame([(1000, "a")], "id long, cat string"), h.location)
    assert _ids(h.table) == sorted([*before, 1000])
    contents = {d.content for t in plan_files(h.table.io, h.table.metadata).tasks
                for d in t.delete_files}
    assert FileContent.POSITION_DELETES in contents


def test_a_catalog_table_is_written_through_its_catalog(spark: SparkSession, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    table = _table(tmp_path, name="cat_w")
    (tmp_path / "none.toml").write_text("")
    monkeypatch.setenv("FLOE_CATALOGS", str(tmp_path / "none.toml"))
    monkeypatch.setenv("FLOE_WAREHOUSE", str(tmp_path))
    write(_rows(spark, 0, 5), "local:db.cat_w")
    assert _ids(table) == list(range(5))


def test_written_files_carry_the_write_id(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, partition=None)
    write(_rows(spark, 0, 5), table.location)
    snap = table.refresh().current_snapshot()
    assert snap is not None
    write_id = snap.summary[WRITE_ID]
    uuid.UUID(write_id)
    for t in plan_files(table.io, table.metadata).tasks:
        assert write_id in t.data_file.file_path



def test_required_fields_may_be_null_under_a_null_parent() -> None:
    """Spark's batches → the table's types: a required struct field is checked only where
    its struct is there."""
    import pyarrow as pa

    from floe.schema import Schema
    from floe.spark.types import WriteConverter
    from floe.types import IntegerType, StructType

    schema = Schema(NestedField(1, "st", StructType(NestedField(2, "a", IntegerType(),
                                                                required=True))))
    convert = WriteConverter(schema)
    struct = pa.struct([pa.field("a", pa.int32())])
    ok = pa.record_batch([pa.array([{"a": 1}, None], struct)], names=["st"])
    assert convert(ok).column(0).to_pylist() == [{"a": 1}, None]
    bad = pa.record_batch([pa.array([{"a": 1}, {"a": None}], struct)], names=["st"])
    with pytest.raises(ValidationError, match="column st.a is required but the DataFrame has 1"):
        convert(bad)
