"""Manifests and manifest lists: round trips, inheritance, Java-shaped schemas, PyIceberg."""

from __future__ import annotations

import io
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from floe.errors import MetadataError, NotFound
from floe.io import FileIO
from floe.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriter,
    ManifestWriter,
    PartitionFieldSummary,
    decode_bounds,
    read_manifest,
    read_manifest_list,
    read_manifest_metadata,
)
from floe.partitioning import PartitionField, PartitionSpec
from floe.schema import Schema
from floe.transforms import IdentityTransform
from floe.types import (
    BINARY,
    BOOLEAN,
    DATE,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    NestedField,
)

SNAPSHOT = 42
COLUMNS: list[tuple[str, IcebergType, Any, Any]] = [
    # name, type, a value, another value
    ("i", INT, 7, -3),
    ("l", LONG, 2**40, -(2**40)),
    ("s", STRING, "hello", "wörld"),
    ("d", DATE, 19000, -1),
    ("ts", TIMESTAMP, 1_700_000_000_123_456, -5),
    ("tstz", TIMESTAMPTZ, 253_402_300_800_000_000, 0),  # year 10000: beyond datetime
    ("t", TIME, 3_600_000_001, 0),
    ("dec", DecimalType(9, 2), Decimal("12.34"), Decimal("-0.01")),
    ("dec2", DecimalType(9, 2), Decimal("1.00"), None),  # same named Avro type twice
    ("big", DecimalType(38, 10), Decimal("1234567890123456789012345678.0123456789"),
     Decimal("0E-10")),
    ("u", UUID, uuid.UUID("f79c3e09-677c-4c4f-9a3c-4a7d0e1b6c2a"), uuid.UUID(int=1)),
    ("f", FixedType(3), b"\x00\x01\xff", b"abc"),
    ("b", BOOLEAN, True, False),
    ("bin", BINARY, b"\x00raw", b""),
    ("n", INT, None, None),
]


def _schema() -> Schema:
    return Schema(*(NestedField(i + 1, n, t) for i, (n, t, _, _) in enumerate(COLUMNS)),
                  schema_id=3)


def _spec() -> PartitionSpec:
    return PartitionSpec(
        *(PartitionField(i + 1, 1000 + i, IdentityTransform(), f"{n}-part" if n == "s" else n)
          for i, (n, _, _, _) in enumerate(COLUMNS)),
        spec_id=5,
    )


def _data_file(n: int, partition: tuple[Any, ...], **kw: Any) -> DataFile:
    base: dict[str, Any] = dict(
        content=FileContent.DATA,
        file_path=f"s3://bucket/t/data/{n:05d}.parquet",
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=100 + n,
        file_size_in_bytes=4096 + n,
        column_sizes={1: 10 + n, 2: 20},
        value_counts={1: 100 + n, 2: 100 + n},
        null_value_counts={1: 0, 2: 3},
        nan_value_counts={},
        lower_bounds={1: (7).to_bytes(4, "little"), 3: b"a"},
        upper_bounds={1: (9).to_bytes(4, "little"), 3: b"z"},
        split_offsets=[4],
        sort_order_id=0,
        spec_id=5,
    )
    base.update(kw)
    return DataFile(**base)


@pytest.fixture()
def fio() -> FileIO:
    return FileIO()


def _write_manifest(fio: FileIO, path: str, version: int, entries: list[ManifestEntry]
                    ) -> ManifestFile:
    w = ManifestWriter(fio, path, spec=_spec(), schema=_schema(), format_version=version,
                       snapshot_id=SNAPSHOT)
    for e in entries:
        w.add_entry(e)
    return w.close()


def _partitions() -> list[tuple[Any, ...]]:
    return [tuple(c[2] for c in COLUMNS), tuple(c[3] for c in COLUMNS)]


# -- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_manifest_round_trip_all_partition_types(tmp_path: Path, fio: FileIO, version: int) -> None:
    p1, p2 = _partitions()
    entries = [
        ManifestEntry(ManifestEntryStatus.ADDED, SNAPSHOT, None if version == 2 else None,
                      None, _data_file(0, p1)),
        ManifestEntry(ManifestEntryStatus.EXISTING, 7, 3, 3, _data_file(1, p2)),
        ManifestEntry(ManifestEntryStatus.DELETED, SNAPSHOT, 2, 2, _data_file(2, p1)),
    ]
    path = str(tmp_path / "m.avro")
    mf = _write_manifest(fio, path, version, entries)
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (1, 1, 1)
    assert (mf.added_rows_count, mf.existing_rows_count, mf.deleted_rows_count) == (100, 101, 102)
    assert mf.manifest_length == Path(path).stat().st_size

    listed = ManifestFile(path, mf.manifest_length, 5, sequence_number=9 if version == 2 else 0,
                          added_snapshot_id=SNAPSHOT)
    got = read_manifest(fio, listed)
    assert [e.data_file.partition for e in got] == [p1, p2, p1]
    for e, want in zip(got, entries, strict=True):
        assert dict(e.data_file.column_sizes or {}) == want.data_file.column_sizes
        assert e.data_file._replace(column_sizes=None, value_counts=None, null_value_counts=None,
                                    nan_value_counts=None) == want.data_file._replace(
            column_sizes=None, value_counts=None, null_value_counts=None, nan_value_counts=None)
        assert dict(e.data_file.value_counts or {}) == want.data_file.value_counts
        assert dict(e.data_file.null_value_counts or {}) == want.data_file.null_value_counts
        assert e.data_file.file_format is FileFormat.PARQUET
    assert got[0].data_file.partition[7] == Decimal("12.34")
    assert got[0].data_file.partition[7].as_tuple().exponent == -2
    if version == 2:
        assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
            (SNAPSHOT, 9, 9), (7, 3, 3), (SNAPSHOT, 2, 2)]
    else:
        assert [(e.sequence_number, e.file_sequence_number) for e in got] == [(0, 0)] * 3

    eager = read_manifest(fio, listed, lazy_stats=False)
    assert eager == got


def test_partition_summaries(tmp_path: Path, fio: FileIO) -> None:
    from floe.conversions import to_bytes

    p1, p2 = _partitions()
    mf = _write_manifest(fio, str(tmp_path / "m.avro"), 2, [
        ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _data_file(0, p1)),
        ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _data_file(1, p2)),
    ])
    assert mf.partitions is not None
    by_name = dict(zip([c[0] for c in COLUMNS], mf.partitions, strict=True))
    assert by_name["i"] == PartitionFieldSummary(False, False, to_bytes(INT, -3),
                                                 to_bytes(INT, 7))
    assert by_name["dec2"].contains_null is True
    assert by_name["n"] == PartitionFieldSummary(True, False, None, None)
    assert by_name["s"].upper_bound == "wörld".encode()


@pytest.mark.parametrize("version", [1, 2])
def test_manifest_list_round_trip(tmp_path: Path, fio: FileIO, version: int) -> None:
    p1, _ = _partitions()
    mpath = str(tmp_path / "m.avro")
    mf = _write_manifest(fio, mpath, version, [
        ManifestEntry(ManifestEntryStatus.ADDED, SNAPSHOT, None, None, _data_file(0, p1))])
    old = ManifestFile("s3://b/old.avro", 1234, 0, sequence_number=4 if version == 2 else 0,
                       min_sequence_number=2 if version == 2 else 0, added_snapshot_id=11,
                       added_files_count=1, existing_files_count=2, deleted_files_count=0,
                       added_rows_count=10, existing_rows_count=20, deleted_rows_count=0,
                       partitions=[PartitionFieldSummary(True, None, b"\x01", b"\x02")])
    lpath = str(tmp_path / "snap.avro")
    with ManifestListWriter(fio, lpath, version, SNAPSHOT, 11,
                            sequence_number=5 if version == 2 else None) as w:
        w.add_manifests([mf, old])
    got = read_manifest_list(fio, lpath)
    seq = 5 if version == 2 else 0
    assert got[0] == ManifestFile(**{**_fields(mf), "sequence_number": seq,
                                    "min_sequence_number": seq})
    assert got[1] == old
    meta = _avro_meta(lpath)
    assert meta["snapshot-id"] == str(SNAPSHOT) and meta["parent-snapshot-id"] == "11"
    assert meta["format-version"] == str(version)
    assert ("sequence-number" in meta) == (version == 2)
    assert meta["avro.codec"] == "deflate"


def _avro_meta(path: str) -> dict[str, str]:
    with open(path, "rb") as f:
        return dict(fastavro.reader(f).metadata)


def _fields(mf: ManifestFile) -> dict[str, Any]:
    return {k: getattr(mf, k) for k in ManifestFile.__slots__}


def test_v1_list_without_content_and_sequence_numbers(tmp_path: Path, fio: FileIO) -> None:
    lpath = str(tmp_path / "snap.avro")
    with ManifestListWriter(fio, lpath, 1, SNAPSHOT, None) as w:
        w.add_manifests([ManifestFile("m.avro", 10, 0, added_snapshot_id=SNAPSHOT,
                                      added_files_count=1)])
    (m,) = read_manifest_list(fio, lpath)
    assert (m.content, m.sequence_number, m.min_sequence_number) == (ManifestContent.DATA, 0, 0)
    assert _avro_meta(lpath)["parent-snapshot-id"] == "null"


# -- inheritance -----------------------------------------------------------------------------------


def test_inheritance_rules(tmp_path: Path, fio: FileIO) -> None:
    p1, _ = _partitions()
    path = str(tmp_path / "m.avro")
    # status, snapshot id, seq, file seq as written
    written = [
        (ManifestEntryStatus.ADDED, None, None, None),
        (ManifestEntryStatus.ADDED, SNAPSHOT, 2, None),
        (ManifestEntryStatus.EXISTING, None, 3, 3),
        (ManifestEntryStatus.DELETED, 9, 4, 4),
    ]
    w = ManifestWriter(fio, path, _spec(), _schema(), 2, SNAPSHOT)
    for i, (st, sid, seq, fseq) in enumerate(written):
        w.add_entry(ManifestEntry(st, sid, seq, fseq, _data_file(i, p1)))
    mf = w.close()
    listed = ManifestFile(path, mf.manifest_length, 5, sequence_number=8, added_snapshot_id=77)
    got = [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number)
           for e in read_manifest(fio, listed)]
    assert got == [
        (ManifestEntryStatus.ADDED, 77, 8, 8),
        (ManifestEntryStatus.ADDED, SNAPSHOT, 2, 8),
        (ManifestEntryStatus.EXISTING, 77, 3, 3),
        (ManifestEntryStatus.DELETED, 9, 4, 4),
    ]
    # no inheritance from a manifest that is not in a manifest list yet (Java: no snapshot id)
    unlisted = [e.snapshot_id for e in read_manifest(fio, ManifestFile(path, 0, 5))]
    assert unlisted == [None, SNAPSHOT, None, 9]
    live = read_manifest(fio, listed, discard_deleted=True)
    assert [e.status for e in live] == [1, 1, 0]


def test_null_sequence_number_only_for_added(tmp_path: Path, fio: FileIO) -> None:
    from floe.errors import ValidationError

    w = ManifestWriter(fio, str(tmp_path / "m.avro"), _spec(), _schema(), 2, SNAPSHOT)
    with pytest.raises(ValidationError, match="ADDED"):
        w.add_entry(ManifestEntry(ManifestEntryStatus.EXISTING, 1, None, None,
                                  _data_file(0, _partitions()[0])))


def test_first_row_id_inheritance_v3(tmp_path: Path, fio: FileIO) -> None:
    """v3 (read only): null first_row_id of data files counts up from the manifest's."""
    from floe.avro_schemas import manifest_entry_type, to_avro_schema
    from floe.types import StructType

    schema = to_avro_schema(manifest_entry_type(3, StructType()), "manifest_entry")

    def rec(n: int, first: int | None, content: int = 0) -> dict[str, Any]:
        return {"status": 1, "snapshot_id": None, "sequence_number": None,
                "file_sequence_number": None, "data_file": {
                    "content": content, "file_path": f"f{n}", "file_format": "PARQUET",
                    "partition": {}, "record_count": 10 * (n + 1), "file_size_in_bytes": 1,
                    "first_row_id": first, "referenced_data_file": None,
                    "content_offset": None, "content_size_in_bytes": None}}
    path = tmp_path / "v3.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema),
                        [rec(0, None), rec(1, 500), rec(2, None), rec(3, None, content=1)])
    listed = ManifestFile(str(path), 0, 0, sequence_number=3, added_snapshot_id=1,
                          first_row_id=1000)
    got = [e.data_file.first_row_id for e in read_manifest(fio, listed)]
    assert got == [1000, 500, 1010, None]


# -- schemas as Java writes them ---------------------------------------------------------------------


def test_embedded_schema_is_java_shaped(tmp_path: Path, fio: FileIO) -> None:
    p1, _ = _partitions()
    path = str(tmp_path / "m.avro")
    _write_manifest(fio, path, 2, [
        ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _data_file(0, p1))])
    meta = _avro_meta(path)
    avro = json.loads(meta["avro.schema"])
    assert avro["name"] == "manifest_entry"
    fields = {f["name"]: f for f in avro["fields"]}
    assert [f["field-id"] for f in avro["fields"]] == [0, 1, 3, 4, 2]
    assert fields["snapshot_id"]["type"] == ["null", "long"] and fields["snapshot_id"][
        "default"] is None
    df = fields["data_file"]["type"]
    assert df["name"] == "r2"
    dff = {f["name"]: f for f in df["fields"]}
    assert [f["name"] for f in df["fields"]][:4] == ["content", "file_path", "file_format",
                                                     "partition"]
    part = dff["partition"]["type"]
    assert part["name"] == "r102" and dff["partition"]["field-id"] == 102
    pf = {f["name"]: f for f in part["fields"]}
    assert pf["s_x2Dpart"]["iceberg-field-name"] == "s-part"
    assert pf["d"]["type"] == ["null", {"type": "int", "logicalType": "date"}]
    assert pf["ts"]["type"][1] == {"type": "long", "logicalType": "timestamp-micros",
                                   "adjust-to-utc": False}
    assert pf["tstz"]["type"][1]["adjust-to-utc"] is True
    assert pf["dec"]["type"][1] == {"type": "fixed", "name": "decimal_9_2", "size": 4,
                                    "logicalType": "decimal", "precision": 9, "scale": 2}
    assert pf["dec2"]["type"][1] == "decimal_9_2"
    assert pf["big"]["type"][1]["size"] == 16
    assert pf["u"]["type"][1] == {"type": "fixed", "name": "uuid_fixed", "size": 16,
                                  "logicalType": "uuid"}
    assert pf["f"]["type"][1] == {"type": "fixed", "name": "fixed_3", "size": 3}
    assert pf["u"]["field-id"] == 1010
    sizes = dff["column_sizes"]
    assert sizes["field-id"] == 108
    assert sizes["type"][1] == {
        "type": "array", "logicalType": "map",
        "items": {"type": "record", "name": "k117_v118", "fields": [
            {"name": "key", "type": "int", "field-id": 117},
            {"name": "value", "type": "long", "field-id": 118}]}}
    assert dff["split_offsets"]["type"][1] == {"type": "array", "items": "long",
                                               "element-id": 133}
    assert meta["partition-spec-id"] == "5" and meta["format-version"] == "2"
    assert meta["content"] == "data" and meta["schema-id"] == "3"
    assert json.loads(meta["partition-spec"])[0] == {
        "name": "i", "transform": "identity", "source-id": 1, "field-id": 1000}
    assert Schema.from_json(json.loads(meta["schema"])) == _schema()
    md = read_manifest_metadata(fio, path)
    assert (md.format_version, md.partition_spec_id, md.content, md.schema_id) == (
        2, 5, ManifestContent.DATA, 3)


def test_manifest_list_schema_v1_field_order(tmp_path: Path, fio: FileIO) -> None:
    path = str(tmp_path / "l.avro")
    with ManifestListWriter(fio, path, 1, 1, None):
        pass
    avro = json.loads(_avro_meta(path)["avro.schema"])
    assert [f["field-id"] for f in avro["fields"]] == [
        500, 501, 502, 503, 504, 505, 506, 507, 512, 513, 514, 519]
    part = avro["fields"][7]["type"][1]
    assert part["element-id"] == 508 and part["items"]["name"] == "r508"


# -- bounds -------------------------------------------------------------------------------------------


def test_decode_bounds() -> None:
    schema = Schema(NestedField(1, "i", INT), NestedField(3, "s", STRING))
    lower, upper = decode_bounds(_data_file(0, ()), schema)
    assert lower == {1: 7, 3: "a"} and upper == {1: 9, 3: "z"}


# -- errors ------------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path, fio: FileIO) -> None:
    with pytest.raises(NotFound, match="nope.avro"):
        read_manifest_list(fio, str(tmp_path / "nope.avro"))


@pytest.mark.parametrize("cut", [3, 40, 200, -30, -5])
def test_truncated_manifest(tmp_path: Path, fio: FileIO, cut: int) -> None:
    p1, _ = _partitions()
    path = str(tmp_path / "m.avro")
    mf = _write_manifest(fio, path, 2, [
        ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _data_file(i, p1))
        for i in range(50)])
    data = Path(path).read_bytes()
    bad = str(tmp_path / "bad.avro")
    Path(bad).write_bytes(data[:cut])
    with pytest.raises(MetadataError, match="bad.avro") as e:
        read_manifest(fio, ManifestFile(bad, mf.manifest_length, 5, added_snapshot_id=1))
    assert "truncated" in str(e.value) or "not a valid Avro file" in str(e.value)


def test_corrupt_files(tmp_path: Path, fio: FileIO) -> None:
    junk = tmp_path / "junk.avro"
    junk.write_bytes(b"PAR1 this is not avro")
    with pytest.raises(MetadataError, match="junk.avro: not a valid Avro file"):
        read_manifest_list(fio, str(junk))
    p1, _ = _partitions()
    path = str(tmp_path / "m.avro")
    _write_manifest(fio, path, 2, [
        ManifestEntry(ManifestEntryStatus.ADDED, None, None, None, _data_file(0, p1))])
    data = bytearray(Path(path).read_bytes())
    data[-20] ^= 0xFF  # inside the last sync marker / compressed block
    flipped = tmp_path / "flipped.avro"
    flipped.write_bytes(bytes(data))
    with pytest.raises(MetadataError, match="flipped.avro"):
        read_manifest(fio, ManifestFile(str(flipped), 0, 5))


# -- PyIceberg cross-checks --------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_pyiceberg_reads_what_floe_writes(tmp_path: Path, fio: FileIO, version: int) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import read_manifest_list as py_read_list

    schema = Schema(NestedField(1, "id", LONG), NestedField(2, "d", DATE),
                    NestedField(3, "s", STRING), schema_id=0)
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "d"),
                         PartitionField(3, 1001, IdentityTransform(), "s"), spec_id=0)
    mpath = str(tmp_path / "m.avro")
    w = ManifestWriter(fio, mpath, spec, schema, version, SNAPSHOT)
    files = [_data_file(i, (19000 + i, None if i == 2 else f"v{i}"), spec_id=0)
             for i in range(3)]
    for f in files:
        w.add(f)
    mf = w.close()
    lpath = str(tmp_path / "l.avro")
    with ManifestListWriter(fio, lpath, version, SNAPSHOT, None,
                            sequence_number=1 if version == 2 else None) as lw:
        lw.add_manifests([mf])

    (pm,) = py_read_list(PyArrowFileIO().new_input(lpath))
    (fm,) = read_manifest_list(fio, lpath)
    assert (pm.manifest_path, pm.manifest_length, pm.added_snapshot_id, pm.sequence_number,
            pm.added_files_count, pm.added_rows_count) == (
        fm.manifest_path, fm.manifest_length, fm.added_snapshot_id, fm.sequence_number,
        fm.added_files_count, fm.added_rows_count)
    assert [(p.contains_null, p.lower_bound, p.upper_bound) for p in pm.partitions or []] == [
        (p.contains_null, p.lower_bound, p.upper_bound) for p in fm.partitions or []]
    py_entries = pm.fetch_manifest_entry(PyArrowFileIO(), discard_deleted=False)
    ours = read_manifest(fio, fm)
    assert len(py_entries) == len(ours) == 3
    for pe, fe in zip(py_entries, ours, strict=True):
        assert (int(pe.status), pe.snapshot_id, pe.sequence_number,
                pe.file_sequence_number) == (int(fe.status), fe.snapshot_id,
                                             fe.sequence_number, fe.file_sequence_number)
        pdf, fdf = pe.data_file, fe.data_file
        assert pdf.file_path == fdf.file_path
        assert pdf.file_format.value == fdf.file_format
        assert tuple(pdf.partition) == fdf.partition
        assert (pdf.record_count, pdf.file_size_in_bytes) == (fdf.record_count,
                                                              fdf.file_size_in_bytes)
        assert pdf.column_sizes == dict(fdf.column_sizes or {})
        assert pdf.null_value_counts == dict(fdf.null_value_counts or {})
        assert pdf.lower_bounds == fdf.lower_bounds and pdf.upper_bounds == fdf.upper_bounds
        assert pdf.split_offsets == fdf.split_offsets


@pytest.mark.parametrize("version", [1, 2])
def test_floe_reads_what_pyiceberg_writes(tmp_path: Path, fio: FileIO, version: int) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import DataFile as PyDataFile
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.manifest import FileFormat as PyFileFormat
    from pyiceberg.manifest import ManifestEntry as PyEntry
    from pyiceberg.manifest import ManifestEntryStatus as PyStatus
    from pyiceberg.manifest import write_manifest, write_manifest_list
    from pyiceberg.partitioning import PartitionField as PyPField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import IdentityTransform as PyIdentity
    from pyiceberg.typedef import Record
    from pyiceberg.types import DateType, LongType, StringType
    from pyiceberg.types import NestedField as PyField

    py_schema = PySchema(PyField(1, "id", LongType()), PyField(2, "d", DateType()),
                         PyField(3, "s", StringType()))
    py_spec = PySpec(PyPField(2, 1000, PyIdentity(), "d"), PyPField(3, 1001, PyIdentity(), "s"))
    pio = PyArrowFileIO()
    mpath = str(tmp_path / "py-m.avro")
    with write_manifest(version, py_spec, py_schema, pio.new_output(mpath), SNAPSHOT,
                        "deflate") as w:
        for i in range(3):
            df = PyDataFile.from_args(
                content=DataFileContent.DATA, file_path=f"s3://b/{i}.parquet",
                file_format=PyFileFormat.PARQUET,
                partition=Record(19000 + i, None if i == 1 else f"v{i}"),
                record_count=10 + i, file_size_in_bytes=100, column_sizes={1: 5, 2: 6},
                value_counts={1: 10}, null_value_counts={1: 0}, nan_value_counts={},
                lower_bounds={1: b"\x01" * 8}, upper_bounds={1: b"\x02" * 8},
                split_offsets=[4], sort_order_id=0)
            w.add(PyEntry.from_args(status=PyStatus.ADDED, snapshot_id=SNAPSHOT, data_file=df))
    py_mf = w.to_manifest_file()
    lpath = str(tmp_path / "py-l.avro")
    with write_manifest_list(version, pio.new_output(lpath), SNAPSHOT, None,
                             3 if version == 2 else None, "deflate") as lw:
        lw.add_manifests([py_mf])

    (fm,) = read_manifest_list(fio, lpath)
    assert fm.manifest_path == mpath and fm.added_files_count == 3
    assert fm.sequence_number == (3 if version == 2 else 0)
    entries = read_manifest(fio, fm)
    assert [e.data_file.partition for e in entries] == [(19000, "v0"), (19001, None),
                                                         (19002, "v2")]
    assert [e.sequence_number for e in entries] == [3 if version == 2 else 0] * 3
    assert all(e.snapshot_id == SNAPSHOT for e in entries)
    assert dict(entries[0].data_file.column_sizes or {}) == {1: 5, 2: 6}
    assert entries[2].data_file.lower_bounds == {1: b"\x01" * 8}
    assert entries[1].data_file.record_count == 11


def test_writer_to_file_object(fio: FileIO) -> None:
    buf = io.BytesIO()
    w = ManifestWriter(buf, "mem://m.avro", PartitionSpec(), Schema(NestedField(1, "x", INT)),
                       2, SNAPSHOT)
    w.add(_data_file(0, ()))
    mf = w.close()
    assert mf.manifest_length == len(buf.getvalue()) and mf.partitions == []
