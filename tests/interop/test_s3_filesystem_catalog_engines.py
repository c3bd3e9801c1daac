"""A file-system catalog in a bucket (issue 20, acceptance 1): floe's ``FileSystemCatalog`` with
its warehouse in SeaweedFS's S3, on tables other engines wrote.

Neither PyIceberg nor DuckDB has a file-system (Hadoop) catalog, so:

* PyIceberg writes its table (partitioned, evolved, copy-on-write deletes) with a SQL catalog
  of its own whose table location is the table's directory in floe's warehouse: the
  directory then holds metastore-named metadata files (``<NNNNN>-<uuid>.metadata.json``),
  which floe's catalog finds and reads as they are. To change it, each of PyIceberg's
  metadata files is published as ``v<N>.metadata.json`` with ``version-hint.text`` (what a
  Hadoop catalog would have written), and floe commits the next versions.
* DuckDB writes its table (merge-on-read deletes with its nonstandard position-delete files)
  through SeaweedFS's REST catalog; floe's ``register_table`` copies its metadata in as
  ``v1.metadata.json`` of a table directory in the warehouse.

floe reads every snapshot of both as PyIceberg (``StaticTable`` of the metadata file) and
DuckDB (``iceberg_scan``) do, also with filters; then appends, deletes merge-on-read, rewrites
the position deletes, compacts and expires, and after each step both engines read what floe
reads. The tests share the
module's tables and run in file order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lake_engines import (
    FILTERS,
    assert_reads_agree,
    duckdb_history,
    floe_changes,
    pyiceberg_history,
)

from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import parse_metadata_version
from floe.io import FileIO
from floe.metadata import metadata_file_location, version_hint_location
from tests.object_store import (
    SeaweedFS,
    duckdb_attach_rest,
    duckdb_connect,
    pyiceberg_rest_catalog,
    pyiceberg_sql_catalog,
    unique_name,
)

pytestmark = pytest.mark.objectstore

NAMESPACE = "shop"


@dataclass
class Lake:
    server: SeaweedFS
    warehouse: str
    floe: FileSystemCatalog
    duckdb: Any  # a DuckDB connection with the S3 secret and the REST catalog attached
    pyiceberg_writer: Any  # the PyIceberg table object that wrote the PyIceberg table

    def static_table(self, metadata_location: str) -> Any:
        """PyIceberg's read-only table of one metadata file."""
        from pyiceberg.table import StaticTable

        return StaticTable.from_metadata(metadata_location, self.server.s3_properties())


@pytest.fixture(scope="module")
def lake(seaweedfs: SeaweedFS, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    warehouse = f"s3://{seaweedfs.bucket}/{unique_name('fswh')}"
    catalog = FileSystemCatalog("fs", warehouse, FileIO(seaweedfs.s3_properties()))
    # PyIceberg writes with a SQL catalog of its own, at the table's directory in the warehouse
    writer = pyiceberg_sql_catalog(seaweedfs, tmp_path_factory.mktemp("fs-lake") / "py.db",
                                   f"s3://{seaweedfs.bucket}/{unique_name('pywh')}")
    pyiceberg_table = pyiceberg_history(writer, (NAMESPACE, "events"),
                                        location=f"{warehouse}/{NAMESPACE}/events")
    con = duckdb_connect(seaweedfs)
    duckdb_attach_rest(con, seaweedfs)
    yield Lake(seaweedfs, warehouse, catalog, con, pyiceberg_table)
    con.close()


def test_floe_reads_pyicebergs_table_directory_as_pyiceberg_left_it(lake: Lake) -> None:
    """Metastore-named metadata files only: the catalog lists the table and loads the
    newest; every snapshot reads as PyIceberg and DuckDB read it."""
    written = lake.pyiceberg_writer
    assert lake.floe.list_namespaces() == [(NAMESPACE,)]
    assert [str(i) for i in lake.floe.list_tables(NAMESPACE)] == ["shop.events"]
    table = lake.floe.load_table("shop.events")
    assert table.metadata_location == written.metadata_location
    assert parse_metadata_version(table.metadata_location) == len(written.metadata.metadata_log)
    assert len(table.metadata.snapshots) >= 6
    assert assert_reads_agree(table.io, table.metadata_location, con=lake.duckdb,
                              pyiceberg_table=lake.static_table(table.metadata_location)) > 0


@pytest.fixture(scope="module")
def tables(lake: Lake) -> dict[str, str]:
    """The two tables in floe's file-system layout, by writer: PyIceberg's metadata files
    published as Hadoop versions, DuckDB's registered."""
    written = lake.pyiceberg_writer
    io = lake.floe.io
    location = f"{lake.warehouse}/{NAMESPACE}/events"
    versions = [entry.metadata_file for entry in written.metadata.metadata_log]
    for number, source in enumerate([*versions, written.metadata_location], start=1):
        io.write(metadata_file_location(location, number), io.read(source))
    io.write(version_hint_location(location), str(len(versions) + 1).encode())

    rest = pyiceberg_rest_catalog(lake.server)
    namespace = unique_name("duck")
    rest.create_namespace(namespace)
    duckdb_history(lake.duckdb, f"lake.{namespace}.events")
    duck = lake.floe.register_table(f"{NAMESPACE}.duck_events",
                                    rest.load_table((namespace, "events")).metadata_location)
    assert duck.metadata_location == metadata_file_location(
        f"{lake.warehouse}/{NAMESPACE}/duck_events", 1)
    return {"pyiceberg": "shop.events", "duckdb": "shop.duck_events"}


WRITERS = ["pyiceberg", "duckdb"]


def test_the_published_versions_are_the_tables_in_floes_layout(
        lake: Lake, tables: dict[str, str]) -> None:
    assert sorted(str(i) for i in lake.floe.list_tables(NAMESPACE)) == sorted(tables.values())
    table = lake.floe.load_table(tables["pyiceberg"])
    assert Path(table.metadata_location).name == (
        f"v{len(lake.pyiceberg_writer.metadata.metadata_log) + 1}.metadata.json")
    assert table.metadata == lake.floe.read_metadata(lake.pyiceberg_writer.metadata_location)


@pytest.mark.parametrize("writer", WRITERS)
def test_floe_reads_every_snapshot_as_pyiceberg_and_duckdb_do(
        lake: Lake, tables: dict[str, str], writer: str) -> None:
    table = lake.floe.load_table(tables[writer])
    assert assert_reads_agree(table.io, table.metadata_location, con=lake.duckdb,
                              pyiceberg_table=lake.static_table(table.metadata_location)) > 0


@pytest.mark.parametrize("row_filter", FILTERS)
@pytest.mark.parametrize("writer", WRITERS)
def test_filtered_reads_agree(lake: Lake, tables: dict[str, str], writer: str,
                              row_filter: str) -> None:
    table = lake.floe.load_table(tables[writer])
    assert_reads_agree(table.io, table.metadata_location, snapshot_ids=[None],
                       row_filter=row_filter, con=lake.duckdb,
                       pyiceberg_table=lake.static_table(table.metadata_location))


@pytest.mark.parametrize("writer", WRITERS)
def test_floe_changes_are_read_back_by_pyiceberg_and_duckdb(
        lake: Lake, tables: dict[str, str], writer: str) -> None:
    table = lake.floe.load_table(tables[writer])
    start = table.metadata_location

    def check(step: str) -> None:
        table.refresh()
        assert table.metadata_location != start, step
        assert_reads_agree(table.io, table.metadata_location, snapshot_ids=[None],
                           con=lake.duckdb,
                           pyiceberg_table=lake.static_table(table.metadata_location))

    floe_changes(table, check)
    # each change a new version in floe's layout, the hint at the last one
    directory = lake.floe.table_location(tables[writer])
    version = int(table.io.read(version_hint_location(directory)))
    assert table.metadata_location == metadata_file_location(directory, version)
