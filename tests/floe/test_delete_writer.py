"""Position and equality delete files as Java writes them: schema and field ids, sort order,
metrics, referenced data file, names and places; and floe's reader applying them."""

from __future__ import annotations

import re
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.conversions import to_bytes
from floe.errors import ValidationError
from floe.table.delete_writer import (
    POSITION_DELETE_SCHEMA,
    delete_file_location,
    equality_delete_schema,
    write_equality_deletes,
    write_position_deletes,
)
from floe.scan.readers import ROW_POSITION, ReadOptions, plan_to_table, read_task
from floe.manifest import FileContent
from floe.partitioning import parse_partition_by
from floe.scan import _expr
from floe.scan.planning import plan_files
from floe.schema import Schema
from floe.types import LONG, STRING, ListType, NestedField, StructType

# ids as a catalog assigns them (breadth first, like Java)
SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "s", STRING),
    NestedField(3, "st", StructType(NestedField(5, "a", LONG), NestedField(6, "b", STRING))),
    NestedField(4, "tags", ListType(7, STRING)),
)
PATH_ID, POS_ID = 2147483546, 2147483545


@pytest.fixture
def table(tmp_path):
    catalog = FileSystemCatalog("fs", str(tmp_path / "wh"))
    return catalog.create_table("db.t", SCHEMA, spec=parse_partition_by("identity(s)", SCHEMA))


def _meta(path):
    return {f.name: (f.metadata[b"PARQUET:field_id"].decode(), f.nullable)
            for f in pq.read_schema(path)}


def test_position_deletes_are_sorted_deduplicated_with_java_schema_and_metrics(table):
    df = write_position_deletes(table.io, table.metadata, 0, ("x",), {
        "/d/b.parquet": [5, 1, 1], "/d/a.parquet": pa.array([3, 2], pa.int64())})
    rows = pq.read_table(df.file_path)
    assert rows.to_pylist() == [
        {"file_path": "/d/a.parquet", "pos": 2}, {"file_path": "/d/a.parquet", "pos": 3},
        {"file_path": "/d/b.parquet", "pos": 1}, {"file_path": "/d/b.parquet", "pos": 5}]
    assert _meta(df.file_path) == {"file_path": (str(PATH_ID), False),
                                   "pos": (str(POS_ID), False)}
    assert [(f.field_id, f.required) for f in POSITION_DELETE_SCHEMA.fields] == [
        (PATH_ID, True), (POS_ID, True)]
    assert df.content == FileContent.POSITION_DELETES and df.record_count == 4
    assert df.partition == ("x",) and df.spec_id == 0 and df.sort_order_id is None
    # two data files: Java drops counts and bounds of both columns, keeps column sizes
    assert df.referenced_data_file is None
    assert df.value_counts is None and df.null_value_counts is None
    assert df.lower_bounds is None and df.upper_bounds is None
    assert set(df.column_sizes) == {PATH_ID, POS_ID}


def test_one_referenced_data_file_keeps_full_bounds(table):
    long_path = "/d/" + "x" * 40 + ".parquet"  # longer than the default truncate(16)
    df = write_position_deletes(table.io, table.metadata, 0, ("x",), {long_path: [7, 3]})
    assert df.referenced_data_file == long_path
    assert df.lower_bounds == {PATH_ID: long_path.encode(), POS_ID: to_bytes(LONG, 3)}
    assert df.upper_bounds == {PATH_ID: long_path.encode(), POS_ID: to_bytes(LONG, 7)}
    assert df.value_counts is None


def test_delete_files_are_named_and_placed_like_java(table):
    df = write_position_deletes(table.io, table.metadata, 0, ("a b",), {"/d/a.parquet": [0]},
                                operation_id="op", task_id=3)
    assert df.file_path == f"{table.location}/data/s=a+b/00000-3-op-00001-deletes.parquet"
    name = re.compile(r"00000-0-[0-9a-f-]{36}-00001-deletes\.parquet$")
    assert name.search(delete_file_location(table.metadata, 0, (None,), operation_id=uuid.uuid4()))
    assert pq.ParquetFile(df.file_path).metadata.row_group(0).column(0).compression == "ZSTD"


def test_equality_deletes_keep_nested_structs_and_ids(table):
    keys = pa.table({"a": pa.array([1, None], pa.int64()), "id": [2, 3]})
    assert table.schema() == SCHEMA
    df = write_equality_deletes(table.io, table.metadata, 0, (None,), [5, 1], keys)
    assert df.content == FileContent.EQUALITY_DELETES and df.equality_ids == [5, 1]
    assert df.sort_order_id == 0 and df.record_count == 2
    got = pq.read_table(df.file_path)
    assert got.column_names == ["id", "st"]
    assert got.to_pylist() == [{"id": 2, "st": {"a": 1}}, {"id": 3, "st": {"a": None}}]
    assert df.null_value_counts == {1: 0, 5: 1}
    assert df.file_path.startswith(f"{table.location}/data/s=null/")


@pytest.mark.parametrize("ids, message", [
    ([7], "inside a list"),
    ([4], "only primitive"),
    ([3], "only primitive"),
    ([99], "not in the table schema"),
    ([1, 1], "repeat"),
    ([], "at least one"),
])
def test_equality_columns_must_be_primitive_outside_lists(ids, message):
    with pytest.raises(ValidationError, match=message):
        equality_delete_schema(SCHEMA, ids)


def test_delete_files_need_format_version_2(tmp_path):
    catalog = FileSystemCatalog("fs", str(tmp_path / "wh"))
    v1 = catalog.create_table("db.v1", SCHEMA, format_version=1)
    with pytest.raises(ValidationError, match="format version 1"):
        write_position_deletes(v1.io, v1.metadata, 0, (), {"/d/a.parquet": [0]})
    with pytest.raises(ValidationError, match="format version 1"):
        write_equality_deletes(v1.io, v1.metadata, 0, (), [1], pa.table({"id": [1]}))


def _committed(table, files):
    table.new_transaction().overwrite((), files).commit()


def _rows(n, s):
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [s] * n,
                     "st": [{"a": i % 3, "b": None} for i in range(n)], "tags": [[]] * n})


def test_floe_reads_what_it_wrote_and_positions_count_before_deletes(table):
    table.append(_rows(10, "x"))
    (task,) = plan_files(table.io, table.metadata).tasks
    path = task.file_path
    pos = write_position_deletes(table.io, table.metadata, 0, ("x",), {path: [0, 1, 2]})
    eq = write_equality_deletes(table.io, table.metadata, 0, ("x",), [5],
                                pa.table({"a": [2]}))  # ids 5 and 8
    _committed(table, [pos, eq])
    plan = plan_files(table.io, table.metadata, row_filter="id >= 4")
    assert sorted(plan_to_table(table.io, plan).column("id").to_pylist()) == [4, 6, 7, 9]
    (task,) = plan.tasks
    options = ReadOptions(table.metadata, plan.schema, ["id"])
    residual = _expr.arrow_residual(task.residual, plan.schema, True)
    batches = list(read_task(table.io, task, options, residual, positions=True))
    got = pa.Table.from_batches(batches)
    assert got.column_names == ["id", ROW_POSITION]
    assert got.column(ROW_POSITION).to_pylist() == [4, 6, 7, 9]  # id == position here


def test_positions_line_up_across_batches(table):
    table.append(_rows(10, "x"))
    (task,) = plan_files(table.io, table.metadata).tasks
    _committed(table, [write_position_deletes(table.io, table.metadata, 0, ("x",),
                                              {task.file_path: [1, 4, 5]})])
    (task,) = plan_files(table.io, table.metadata).tasks
    options = ReadOptions(table.metadata, table.schema(), ["id"], batch_size=3)
    got = pa.Table.from_batches(list(read_task(table.io, task, options, positions=True)))
    assert got.column("id").to_pylist() == got.column(ROW_POSITION).to_pylist() == [
        0, 2, 3, 6, 7, 8, 9]
