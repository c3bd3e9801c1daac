"""Reading data files by field id, with position and equality deletes applied."""

from __future__ import annotations

import json
import struct
import zlib
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.errors import FloeError, NotFound, ValidationError
from floe.io import FileIO
from floe.scan.readers import (
    NAME_MAPPING_PROPERTY,
    ROW_POSITION,
    ReadOptions,
    file_schema_with_ids,
    read_task,
    roaring64_positions,
)
from floe.manifest import DataFile, FileContent
from floe.scan import DeleteFile, FileScanTask
from floe.schema import Schema
from floe.types import (
    DOUBLE, INT, LONG, STRING, DecimalType, ListType, MapType, NestedField, StructType,
)

ID = b"PARQUET:field_id"


def _f(name: str, t: pa.DataType, fid: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, metadata={ID: str(fid).encode()})


def _write(path: Path, table: pa.Table) -> str:
    pq.write_table(table, path)
    return str(path)


def _task(path: str, n: int, deletes: tuple[DeleteFile, ...] = (),
          partition: tuple[Any, ...] = (), spec_id: int = 0) -> FileScanTask:
    df = DataFile(FileContent.DATA, path, "PARQUET", partition, n, 1)
    return FileScanTask(df, deletes, None, spec_id, 1)


def _read(schema: Schema, task: FileScanTask, md: Any = None, batch_size: int = 1024,
          columns: list[str] | None = None) -> list[dict[str, Any]]:
    opts = ReadOptions(md, schema, columns, batch_size=batch_size)
    return [r for b in read_task(FileIO(), task, opts) for r in b.to_pylist()]


# -- projection --------------------------------------------------------------------------------


@pytest.fixture
def flat_file(tmp_path: Path) -> str:
    schema = pa.schema([_f("b_old", pa.string(), 2), _f("a", pa.int32(), 1),
                        _f("f", pa.float32(), 3), _f("dec", pa.decimal128(5, 2), 4),
                        _f("x", pa.string(), 6)])
    table = pa.table([pa.array(["p", "q", None]), pa.array([1, 2, 3], pa.int32()),
                      pa.array([1.5, None, -2.0], pa.float32()),
                      pa.array([Decimal("1.25"), None, Decimal("-3.10")], pa.decimal128(5, 2)),
                      pa.array(["old1", "old2", "old3"])], schema=schema)
    return _write(tmp_path / "flat.parquet", table)


PROJECTIONS = [
    pytest.param([NestedField(2, "b", STRING)], {"b": ["p", "q", None]}, id="rename"),
    pytest.param([NestedField(1, "a", LONG), NestedField(2, "b", STRING)],
                 {"a": [1, 2, 3], "b": ["p", "q", None]}, id="reorder + promote int->long"),
    pytest.param([NestedField(3, "f", DOUBLE)], {"f": [1.5, None, -2.0]},
                 id="promote float->double"),
    pytest.param([NestedField(4, "dec", DecimalType(10, 2))],
                 {"dec": [Decimal("1.25"), None, Decimal("-3.10")]}, id="widen decimal"),
    pytest.param([NestedField(1, "a", LONG), NestedField(5, "new", STRING)],
                 {"a": [1, 2, 3], "new": [None, None, None]}, id="missing -> null"),
    pytest.param([NestedField(7, "x", STRING)], {"x": [None, None, None]},
                 id="dropped and re-added name does not resurrect old data"),
]


@pytest.mark.parametrize(("fields", "expected"), PROJECTIONS)
def test_projection_by_field_id(flat_file: str, fields: list[NestedField],
                                expected: dict[str, list[Any]]) -> None:
    rows = _read(Schema(*fields), _task(flat_file, 3))
    assert {k: [r[k] for r in rows] for k in expected} == expected
    assert all(list(r) == [f.name for f in fields] for r in rows)


def test_initial_default_fills_a_missing_column(flat_file: str) -> None:
    schema = Schema(NestedField(1, "a", LONG), NestedField(9, "d", LONG, initial_default=7))
    assert [r["d"] for r in _read(schema, _task(flat_file, 3))] == [7, 7, 7]


def test_missing_required_column_is_an_error(flat_file: str) -> None:
    schema = Schema(NestedField(9, "req", LONG, required=True))
    with pytest.raises(ValidationError, match="required field req"):
        _read(schema, _task(flat_file, 3))


def test_nested_struct_list_map_by_field_id(tmp_path: Path) -> None:
    st = pa.struct([_f("y_old", pa.string(), 11), _f("x", pa.int32(), 10)])
    lst = pa.list_(_f("element", pa.int32(), 12))
    mp = pa.map_(_f("key", pa.string(), 13, False), _f("value", pa.float32(), 14))
    schema = pa.schema([_f("st", st, 1), _f("l", lst, 2), _f("m", mp, 3)])
    table = pa.table([
        pa.array([{"y_old": "a", "x": 1}, None, {"y_old": None, "x": 3}], st),
        pa.array([[1, None], None, []], lst),
        pa.array([[("k", 1.5)], None, []], mp),
    ], schema=schema)
    path = _write(tmp_path / "nested.parquet", table)
    ice = Schema(
        NestedField(1, "st", StructType(NestedField(10, "x", LONG), NestedField(11, "y", STRING),
                                        NestedField(15, "z", INT))),
        NestedField(2, "l", ListType(12, LONG, element_required=False)),
        NestedField(3, "m", MapType(13, STRING, 14, DOUBLE, value_required=False)),
    )
    rows = _read(ice, _task(path, 3))
    assert rows[0] == {"st": {"x": 1, "y": "a", "z": None}, "l": [1, None], "m": [("k", 1.5)]}
    assert rows[1] == {"st": None, "l": None, "m": None}
    assert rows[2] == {"st": {"x": 3, "y": None, "z": None}, "l": [], "m": []}


def test_file_without_field_ids_needs_a_name_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path / "noids.parquet", pa.table({"id": [1, 2], "name": ["a", "b"]}))
    schema = Schema(NestedField(1, "ident", LONG), NestedField(2, "label", STRING))
    with pytest.raises(ValidationError, match="no field ids"):
        _read(schema, _task(path, 2))
    mapping = [{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["name"]}]
    md = SimpleNamespace(properties={NAME_MAPPING_PROPERTY: json.dumps(mapping)},
                         spec_by_id=lambda _: None, schemas=[])
    assert _read(schema, _task(path, 2), md) == [{"ident": 1, "label": "a"},
                                                 {"ident": 2, "label": "b"}]


def test_name_mapping_assigns_nested_ids() -> None:
    arrow = pa.schema([pa.field("s", pa.struct([pa.field("a", pa.int32())]))])
    mapping = [{"field-id": 1, "names": ["s"], "fields": [{"field-id": 2, "names": ["a"]}]}]
    md = SimpleNamespace(properties={NAME_MAPPING_PROPERTY: json.dumps(mapping)})
    got = file_schema_with_ids(arrow, md, "f")  # type: ignore[arg-type]
    assert got.field(0).metadata[ID] == b"1"
    assert got.field(0).type.field(0).metadata[ID] == b"2"


def test_identity_partition_value_fills_a_missing_column(tmp_path: Path) -> None:
    from floe.partitioning import parse_partition_by
    from floe.table.append import create_table

    schema = Schema(NestedField(1, "id", LONG), NestedField(2, "cat", STRING))
    _, md = create_table(FileIO(), str(tmp_path / "t"), schema,
                         spec=parse_partition_by("cat", schema))
    table = pa.table([pa.array([1, 2], pa.int64())], schema=pa.schema([_f("id", pa.int64(), 1)]))
    path = _write(tmp_path / "no_cat.parquet", table)
    rows = _read(md.schema(), _task(path, 2, partition=("x",), spec_id=md.default_spec_id), md)
    assert rows == [{"id": 1, "cat": "x"}, {"id": 2, "cat": "x"}]


def test_missing_data_file_names_it(tmp_path: Path) -> None:
    path = str(tmp_path / "gone.parquet")
    with pytest.raises(NotFound, match="gone.parquet"):
        _read(Schema(NestedField(1, "a", LONG)), _task(path, 1))


# -- deletes -----------------------------------------------------------------------------------


@pytest.fixture
def ten_rows(tmp_path: Path) -> str:
    schema = pa.schema([_f("id", pa.int64(), 1), _f("cat", pa.string(), 2)])
    cats = ["a", None, "b", None, "a", "c", None, "b", "a", "c"]
    return _write(tmp_path / "ten.parquet",
                  pa.table([pa.array(range(10), pa.int64()), pa.array(cats)], schema=schema))


SCHEMA = Schema(NestedField(1, "id", LONG), NestedField(2, "cat", STRING))


def _pos_delete(tmp_path: Path, name: str, rows: list[tuple[str, int]], seq: int = 2
                ) -> DeleteFile:
    schema = pa.schema([_f("file_path", pa.string(), 2147483546, False),
                        _f("pos", pa.int64(), 2147483545, False)])
    table = pa.table([pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows], pa.int64())],
                     schema=schema)
    path = _write(tmp_path / name, table)
    return DeleteFile(DataFile(FileContent.POSITION_DELETES, path, "PARQUET", (), len(rows), 1),
                      seq, 0)


def _eq_delete(tmp_path: Path, name: str, columns: dict[int, pa.Array], seq: int = 2
               ) -> DeleteFile:
    names = {1: "id", 2: "cat"}
    fields = [_f(names[i], a.type, i) for i, a in columns.items()]
    table = pa.table(list(columns.values()), schema=pa.schema(fields))
    path = _write(tmp_path / name, table)
    n = table.num_rows
    return DeleteFile(DataFile(FileContent.EQUALITY_DELETES, path, "PARQUET", (), n, 1,
                               equality_ids=list(columns)), seq, 0)


@pytest.mark.parametrize("batch_size", [1, 3, 1024])
def test_position_deletes_while_streaming(tmp_path: Path, ten_rows: str, batch_size: int) -> None:
    d1 = _pos_delete(tmp_path, "d1.parquet", [(ten_rows, 0), ("other.parquet", 1), (ten_rows, 4)])
    d2 = _pos_delete(tmp_path, "d2.parquet", [(ten_rows, 9), (ten_rows, 4)])
    rows = _read(SCHEMA, _task(ten_rows, 10, (d1, d2)), batch_size=batch_size)
    assert [r["id"] for r in rows] == [1, 2, 3, 5, 6, 7, 8]


EQ_CASES = [
    pytest.param({2: pa.array(["a"])}, [1, 2, 3, 5, 6, 7, 9], id="one column"),
    pytest.param({2: pa.array([None], pa.string())}, [0, 2, 4, 5, 7, 8, 9],
                 id="null key deletes null values"),
    pytest.param({1: pa.array([1, 2, 3], pa.int64()), 2: pa.array([None, "x", None])},
                 [0, 2, 4, 5, 6, 7, 8, 9], id="two columns, null matches null only"),
    pytest.param({1: pa.array([5, 8], pa.int64()), 2: pa.array(["c", "a"])},
                 [0, 1, 2, 3, 4, 6, 7, 9], id="two columns"),
    pytest.param({1: pa.array([], pa.int64())}, list(range(10)), id="empty delete file"),
]


@pytest.mark.parametrize(("columns", "expected"), EQ_CASES)
def test_equality_deletes(tmp_path: Path, ten_rows: str, columns: dict[int, pa.Array],
                          expected: list[int]) -> None:
    d = _eq_delete(tmp_path, "eq.parquet", columns)
    rows = _read(SCHEMA, _task(ten_rows, 10, (d,)), batch_size=4)
    assert [r["id"] for r in rows] == expected


def test_equality_columns_read_even_when_not_selected(tmp_path: Path, ten_rows: str) -> None:
    d = _eq_delete(tmp_path, "eq.parquet", {2: pa.array(["a", "b"])})
    rows = _read(SCHEMA, _task(ten_rows, 10, (d,)), columns=["id"])
    assert rows == [{"id": i} for i in (1, 3, 5, 6, 9)]


def test_position_and_equality_deletes_together(tmp_path: Path, ten_rows: str) -> None:
    p = _pos_delete(tmp_path, "p.parquet", [(ten_rows, 1), (ten_rows, 2)])
    e = _eq_delete(tmp_path, "e.parquet", {2: pa.array(["c"])})
    rows = _read(SCHEMA, _task(ten_rows, 10, (p, e)), batch_size=3)
    assert [r["id"] for r in rows] == [0, 3, 4, 6, 7, 8]


# -- deletion vectors (spec "Deletion Vectors", portable Roaring format) ------------------------


def _roaring32_array(values: list[int]) -> bytes:
    """No-run portable format with array containers (what the spec's writers produce for
    sparse deletes)."""
    by_key: dict[int, list[int]] = {}
    for v in values:
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    out = struct.pack("<II", 12346, len(by_key))
    for k, lows in sorted(by_key.items()):
        out += struct.pack("<HH", k, len(lows) - 1)
    offset = len(out) + 4 * len(by_key)
    for _, lows in sorted(by_key.items()):
        out += struct.pack("<I", offset)
        offset += 2 * len(lows)
    for _, lows in sorted(by_key.items()):
        out += struct.pack(f"<{len(lows)}H", *sorted(lows))
    return out


def _roaring32_runs(start: int, length: int) -> bytes:
    out = struct.pack("<I", 12347 | (0 << 16))  # one container, run flag bitmap follows
    out += bytes([1])
    out += struct.pack("<HH", 0, length - 1)
    out += struct.pack("<HHH", 1, start, length - 1)
    return out


def test_roaring64_positions() -> None:
    body = struct.pack("<Q", 2) + struct.pack("<I", 0) + _roaring32_array([3, 70000, 1]) \
        + struct.pack("<I", 1) + _roaring32_array([5])
    assert roaring64_positions(body).to_pylist() == [1, 3, 70000, (1 << 32) + 5]
    runs = struct.pack("<Q", 1) + struct.pack("<I", 0) + _roaring32_runs(10, 4)
    assert roaring64_positions(runs).to_pylist() == [10, 11, 12, 13]


def test_deletion_vector_applied(tmp_path: Path, ten_rows: str) -> None:
    vector = b"\xd1\xd3\x39\x64" + struct.pack("<Q", 1) + struct.pack("<I", 0) + \
        _roaring32_array([0, 5, 9])
    blob = struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + blob)
    df = DataFile(FileContent.POSITION_DELETES, str(puffin), "PUFFIN", (), 3, len(blob) + 4,
                  referenced_data_file=ten_rows, content_offset=4, content_size_in_bytes=len(blob))
    rows = _read(SCHEMA, _task(ten_rows, 10, (DeleteFile(df, 2, 0),)), batch_size=4)
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 6, 7, 8]


# -- other data file formats -------------------------------------------------------------------


def test_avro_data_file_by_field_id(tmp_path: Path) -> None:
    import fastavro

    schema = {"type": "record", "name": "r", "fields": [
        {"name": "old_name", "type": ["null", "string"], "default": None, "field-id": 2},
        {"name": "a", "type": "int", "field-id": 1},
    ]}
    path = tmp_path / "data.avro"
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, [{"a": 1, "old_name": "x"}, {"a": 2, "old_name": None}])
    df = DataFile(FileContent.DATA, str(path), "AVRO", (), 2, 1)
    task = FileScanTask(df, (), None, 0, 1)
    ice = Schema(NestedField(1, "a", LONG), NestedField(2, "b", STRING),
                 NestedField(3, "c", STRING))
    assert _read(ice, task) == [{"a": 1, "b": "x", "c": None}, {"a": 2, "b": None, "c": None}]


def test_orc_data_file_through_a_name_mapping(tmp_path: Path) -> None:
    import pyarrow.orc as orc

    path = tmp_path / "data.orc"
    orc.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}), str(path))
    mapping = [{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["s"]}]
    md = SimpleNamespace(properties={NAME_MAPPING_PROPERTY: json.dumps(mapping)},
                         spec_by_id=lambda _: None, schemas=[])
    df = DataFile(FileContent.DATA, str(path), "ORC", (), 2, 1)
    rows = _read(SCHEMA, FileScanTask(df, (), None, 0, 1), md)
    assert rows == [{"id": 1, "cat": "a"}, {"id": 2, "cat": "b"}]


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "zstd", "lz4"])
def test_orc_footer_types_without_ids_and_bad_tails(tmp_path: Path, compression: str) -> None:
    """pyarrow writes no iceberg.id attributes: the footer is read (any codec), no ids are
    found and the name mapping decides; a damaged tail is a clear error."""
    import pyarrow.orc as orc

    from floe.io.orc import orc_schema_with_ids, orc_types
    from floe.io.parquet import FIELD_ID_KEY

    path = tmp_path / "data.orc"
    table = pa.table({"id": pa.array([1, 2], pa.int64()),
                      "st": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())])),
                      "m": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int32()))})
    orc.write_table(table, str(path), compression=compression)
    data = path.read_bytes()
    types = orc_types(data, str(path))
    assert [t.kind for t in types][:3] == [12, 4, 12]  # struct<id: long, st: struct<...>>
    assert types[0].field_names == ["id", "st", "m"]
    assert orc_schema_with_ids(orc.ORCFile(str(path)).schema, types, FIELD_ID_KEY) is None
    for bad in (data[:-3] + b"\x05\x00\x10", b"PAR1" + data[4:], data[:10]):
        with pytest.raises(FloeError, match="cannot read the ORC footer"):
            orc_types(bad, "x.orc")


def test_equality_delete_on_a_struct_field(tmp_path: Path) -> None:
    st = pa.struct([_f("k", pa.int64(), 3)])
    path = _write(tmp_path / "s.parquet", pa.table(
        [pa.array([1, 2, 3], pa.int64()), pa.array([{"k": 5}, None, {"k": 6}], st)],
        schema=pa.schema([_f("id", pa.int64(), 1), _f("s", st, 2)])))
    ice = Schema(NestedField(1, "id", LONG),
                 NestedField(2, "s", StructType(NestedField(3, "k", LONG))))
    # Java writes the equality columns nested in their structs
    dpath = _write(tmp_path / "d.parquet", pa.table(
        [pa.array([{"k": 6}, {"k": None}], st)], schema=pa.schema([_f("s", st, 2)])))
    d = DeleteFile(DataFile(FileContent.EQUALITY_DELETES, dpath, "PARQUET", (), 2, 1,
                            equality_ids=[3]), 2, 0)
    assert [r["id"] for r in _read(ice, _task(path, 3, (d,)), columns=["id"])] == [1]


def test_byte_ranges_read_their_row_groups_with_file_positions(tmp_path: Path) -> None:
    """A task's (start, length) reads the row groups that start inside it; position deletes
    and ``positions=True`` count from the start of the file, so the ranges of a file read
    together give the whole file's surviving rows once."""
    from floe.catalog.filesystem import FileSystemCatalog
    from floe.io.parquet import write_parquet
    from floe.scan.readers import READS_SPLITS, row_group_starts
    from floe.scan import plan_files
    from floe.table.writer import write_data_files

    assert READS_SPLITS
    table = FileSystemCatalog("t", str(tmp_path)).create_table("db.big", SCHEMA)
    rows = pa.table({"id": pa.array(range(1000), pa.int64()),
                     "cat": [f"c{i % 4}" for i in range(1000)]})
    (f,) = write_data_files(table.io, table.metadata, rows)
    data, metrics = write_parquet(rows, SCHEMA, row_group_size=150)
    table.io.write(f.file_path, data, overwrite=True)
    big = f._replace(file_size_in_bytes=len(data), split_offsets=metrics.split_offsets)
    table.new_transaction().fast_append([big]).commit()
    table.delete_where("id IN (0, 149, 150, 999)", mode="merge-on-read")
    md = table.refresh().metadata
    (task,) = plan_files(table.io, md).tasks
    starts = row_group_starts(pq.read_metadata(pa.BufferReader(data)))
    assert starts == metrics.split_offsets and len(starts) == 7
    cuts = [starts[0], starts[2], starts[3], starts[6], len(data)]
    options = ReadOptions(md, md.schema(), None)
    got = []
    for lo, hi in zip(cuts, cuts[1:]):
        part = task._replace(start=lo, length=hi - lo)
        for b in read_task(table.io, part, options, positions=True):
            got += list(zip(b.column("id").to_pylist(), b.column(ROW_POSITION).to_pylist()))
    assert sorted(got) == [(i, i) for i in range(1000) if i not in (0, 149, 150, 999)]
    empty = task._replace(start=starts[1] + 1, length=starts[2] - starts[1] - 1)
    assert list(read_task(table.io, empty, options)) == []
