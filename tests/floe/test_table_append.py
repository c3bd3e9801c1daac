"""floe.table.append: create a file-system table, append to it, read it back."""

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import load_table_metadata
from floe.errors import ValidationError
from floe.inspect import file_rows, manifest_rows
from floe.io import FileIO
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.table.append import append, create_table
from floe.types import LONG, STRING, TIMESTAMPTZ, NestedField

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "name", STRING),
    NestedField(3, "ts", TIMESTAMPTZ),
)
UTC = dt.timezone.utc


def rows(ids):
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [f"n{i}" for i in ids],
        "ts": pa.array([dt.datetime(1969, 12, 31, 23, tzinfo=UTC) + dt.timedelta(hours=i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
    })


@pytest.mark.parametrize("version", [1, 2])
def test_create_and_append(tmp_path, version):
    io, loc = FileIO(), str(tmp_path / "db" / "t")
    spec = parse_partition_by("day(ts), bucket(4, id)", SCHEMA)
    create_table(io, loc, SCHEMA, spec=spec, format_version=version)
    append(io, loc, rows([0, 1, 2]))
    location, md = append(io, loc, rows([3, 4]))
    assert location.endswith("/metadata/v3.metadata.json")
    assert (tmp_path / "db" / "t" / "metadata" / "version-hint.text").read_text() == "3"
    assert md.format_version == version and len(md.snapshots) == 2
    snap = md.current_snapshot()
    assert snap.parent_snapshot_id == md.snapshots[0].snapshot_id
    assert snap.sequence_number == (2 if version == 2 else 0)
    assert snap.summary["total-records"] == "5" and snap.summary["added-records"] == "2"
    assert [m.metadata_file for m in md.metadata_log][-1].endswith("v2.metadata.json")

    _, reloaded = load_table_metadata(io, loc)
    files = file_rows(io, reloaded, reloaded.current_snapshot())
    assert sum(f["record_count"] for f in files) == 5
    days = {f["partition"]["ts_day"] for f in files}
    assert days == {"1969-12-31", "1970-01-01"}  # day(1969-12-31T23:00) is before the epoch
    for f in files:
        assert f"ts_day={f['partition']['ts_day']}" in f["file_path"]
        assert os.path.exists(f["file_path"])
    read = pa.concat_tables(pq.read_table(f["file_path"]) for f in files)
    assert sorted(read.column("id").to_pylist()) == [0, 1, 2, 3, 4]
    manifests = manifest_rows(io, reloaded, reloaded.current_snapshot())
    assert len(manifests) == 2  # a fast append keeps the parent's manifest


def test_create_refuses_an_existing_table(tmp_path):
    io, loc = FileIO(), str(tmp_path / "t")
    create_table(io, loc, SCHEMA)
    with pytest.raises(ValidationError, match="already exists"):
        create_table(io, loc, SCHEMA)


@pytest.mark.parametrize("arrow_type", [pa.uuid(), pa.binary(16)], ids=str)
def test_a_uuid_column_as_arrow_uuid_or_16_bytes_partitions_and_reads_back(tmp_path, arrow_type):
    """Arrow's uuid type hands its values over as UUIDs already, binary(16) as bytes: both
    are the table's uuid values (partition values and bounds)."""
    import uuid

    from floe.catalog.filesystem import FileSystemCatalog
    from floe.types import UUIDType

    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "u", UUIDType()))
    catalog = FileSystemCatalog("local", str(tmp_path))
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.t", schema, parse_partition_by("u", schema))
    values = [uuid.UUID(int=1), uuid.UUID(int=2**127)]
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()),
                           "u": pa.array([v.bytes for v in values], arrow_type)}))
    table = catalog.load_table("db.t")
    files = file_rows(table.io, table.metadata, table.metadata.current_snapshot())
    assert sorted(f["partition"]["u"] for f in files) == [str(v) for v in values]
    read = pa.concat_tables(pq.read_table(f["file_path"]) for f in files)
    assert sorted(bytes(b) for b in read.column("u").to_pylist()) == [v.bytes for v in values]
