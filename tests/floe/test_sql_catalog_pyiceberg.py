"""One database, two engines: PyIceberg's ``SqlCatalog`` and floe's share namespaces and
tables on SQLite and PostgreSQL, and see each other's appends."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.base import TableIdentifier
from floe.catalog.sql import SqlCatalog
from floe.inspect import file_rows
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "name", STRING))


@pytest.fixture
def both(sql_uri: str, catalog_name: str, tmp_path: Path):
    warehouse = str(tmp_path / "warehouse")
    ours = SqlCatalog(catalog_name, sql_uri, warehouse)
    theirs = pyiceberg_sql.SqlCatalog(catalog_name, uri=sql_uri, warehouse=warehouse)
    yield ours, theirs
    theirs.close()
    ours.close()


def rows(ids: list[int]) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i}" for i in ids], pa.string()),
    })


def floe_ids(cat: SqlCatalog, ident: str) -> list[int]:
    """Every id in the table's current snapshot, read from the data files floe lists."""
    table = cat.load_table(ident)
    files = file_rows(table.io, table.metadata, table.current_snapshot())
    return sorted(i for f in files for i in pq.read_table(f["file_path"]).column("id").to_pylist())


def pyiceberg_ids(cat, ident: str) -> list[int]:
    return sorted(cat.load_table(ident).scan().to_arrow().column("id").to_pylist())


def pyiceberg_append(cat, ident: str, data: pa.Table) -> None:
    table = cat.load_table(ident)
    table.append(data.cast(table.schema().as_arrow()))


def test_pyiceberg_appends_to_a_floe_table(both):
    ours, theirs = both
    ours.create_namespace("db", {"owner": "floe"})
    ours.create_table("db.t", SCHEMA, spec=parse_partition_by("name", SCHEMA))
    assert theirs.list_namespaces() == [("db",)]
    assert theirs.load_namespace_properties("db")["owner"] == "floe"
    assert theirs.list_tables("db") == [("db", "t")]

    pyiceberg_append(theirs, "db.t", rows([1, 2, 3]))
    table = ours.load_table("db.t")
    assert table.current_snapshot().summary["added-records"] == "3"
    assert table.metadata_location.split("/")[-1].startswith("00001-")
    assert floe_ids(ours, "db.t") == [1, 2, 3]

    table.append(rows([4, 5]))
    assert table.metadata_location.split("/")[-1].startswith("00002-")
    assert pyiceberg_ids(theirs, "db.t") == [1, 2, 3, 4, 5]
    pyiceberg_append(theirs, "db.t", rows([6]))
    assert floe_ids(ours, "db.t") == [1, 2, 3, 4, 5, 6]
    assert len(ours.load_table("db.t").snapshots()) == 3


def test_floe_loads_and_appends_to_a_pyiceberg_table(both):
    ours, theirs = both
    theirs.create_namespace("lake")
    theirs.create_namespace("lake.raw")
    theirs.create_table("lake.raw.events", schema=rows([]).schema)
    pyiceberg_append(theirs, "lake.raw.events", rows([10, 11]))

    assert ours.list_namespaces() == [("lake",)]
    assert ours.list_namespaces("lake") == [("lake", "raw")]
    assert ours.list_tables("lake.raw") == [TableIdentifier(("lake", "raw"), "events")]
    assert floe_ids(ours, "lake.raw.events") == [10, 11]
    ours.load_table("lake.raw.events").append(rows([12]))
    assert pyiceberg_ids(theirs, "lake.raw.events") == [10, 11, 12]


def test_renames_drops_and_registration_are_shared(both):
    ours, theirs = both
    ours.create_namespace("a")
    ours.create_namespace("b")
    created = ours.create_table("a.t", SCHEMA)
    theirs.rename_table("a.t", "b.t")
    assert not ours.table_exists("a.t")
    assert ours.load_table("b.t").metadata_location == created.metadata_location

    theirs.register_table("a.copy", created.metadata_location)
    assert ours.load_table("a.copy").metadata == created.metadata
    ours.drop_table("a.copy")
    assert theirs.list_tables("a") == []
    ours.drop_table("b.t")
    theirs.drop_namespace("a")
    ours.drop_namespace("b")
    assert theirs.list_namespaces() == [] and ours.list_namespaces() == []


def test_purge_deletes_data_written_by_either(both, tmp_path: Path):
    ours, theirs = both
    ours.create_namespace("db")
    table = ours.create_table("db.t", SCHEMA)
    pyiceberg_append(theirs, "db.t", rows([1]))
    table.refresh().append(rows([2]))
    files = [p for p in (tmp_path / "warehouse").rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files) and any(p.suffix == ".avro" for p in files)
    ours.drop_table("db.t", purge=True)
    left = [p for p in (tmp_path / "warehouse").rglob("*") if p.is_file()]
    assert left == []
    assert theirs.list_tables("db") == []
