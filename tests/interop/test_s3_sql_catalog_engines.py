"""A SQL catalog with its warehouse in a bucket, shared by PyIceberg and floe (issue 20,
acceptance 1): PyIceberg's ``SqlCatalog`` on a SQLite file and floe's ``SqlCatalog`` on the same
file (both keep Iceberg Java's JDBC catalog schema), the tables in SeaweedFS's S3.

* A table PyIceberg wrote (partitioned, evolved, copy-on-write deletes) and one DuckDB wrote
  through SeaweedFS's REST catalog (merge-on-read deletes with DuckDB's nonstandard position
  delete files) and PyIceberg registered in the SQL catalog: floe reads every snapshot of each
  as PyIceberg and DuckDB read it, also with filters, as of each commit's time, and from the
  persistent manifest cache.
* floe appends, deletes merge-on-read, rewrites the position deletes, compacts and expires on
  both; after each step
  PyIceberg (its catalog, the same database) and DuckDB (``iceberg_scan`` of the metadata
  file) read what floe reads.

The tests share the module's tables and run in file order: reads first, then the changes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lake_engines import (
    FILTERS,
    assert_reads_agree,
    assert_same_rows,
    duckdb_history,
    floe_changes,
    floe_read,
    multiset,
    pyiceberg_history,
)

from floe.catalog.sql import SqlCatalog
from floe.errors import NotFound
from floe.io import FileIO
from floe.manifest import FileContent, read_manifest_list
from floe.scan import plan_files, select_snapshot
from floe.scan.manifest_store import manifest_store
from floe.scan.readers import plan_to_table
from tests.object_store import (
    SeaweedFS,
    duckdb_attach_rest,
    duckdb_connect,
    pyiceberg_rest_catalog,
    pyiceberg_sql_catalog,
    unique_name,
)

pytestmark = pytest.mark.objectstore

CATALOG = "lake"
NAMESPACE = "shop"
PYICEBERG_TABLE = (NAMESPACE, "events")
DUCKDB_TABLE = (NAMESPACE, "duck_events")
# DuckDB keys the file_path bounds of its position deletes by this id (the spec's: 2147483546)
DUCKDB_FILE_PATH_ID = 2147483646


@dataclass
class Lake:
    server: SeaweedFS
    database: Path
    warehouse: str
    pyiceberg: Any  # PyIceberg's SqlCatalog
    floe: SqlCatalog
    duckdb: Any  # a DuckDB connection with the S3 secret and the REST catalog attached

    def pyiceberg_table(self, ident: tuple[str, str]) -> Any:
        return self.pyiceberg.load_table(ident)


@pytest.fixture(scope="module")
def lake(seaweedfs: SeaweedFS, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    database = tmp_path_factory.mktemp("sql-lake") / "catalog.db"
    warehouse = f"s3://{seaweedfs.bucket}/{unique_name('sqlwh')}"
    pyiceberg = pyiceberg_sql_catalog(seaweedfs, database, warehouse, name=CATALOG)
    floe = SqlCatalog(CATALOG, f"sqlite:///{database}", warehouse,
                      FileIO(seaweedfs.s3_properties()))
    con = duckdb_connect(seaweedfs)
    duckdb_attach_rest(con, seaweedfs)
    yield Lake(seaweedfs, database, warehouse, pyiceberg, floe, con)
    floe.close()
    con.close()


@pytest.fixture(scope="module")
def tables(lake: Lake) -> dict[str, tuple[str, str]]:
    """The PyIceberg-written and the DuckDB-written table, by writer."""
    pyiceberg_history(lake.pyiceberg, PYICEBERG_TABLE)
    # DuckDB writes Iceberg only through a REST catalog: the table lives in the REST
    # catalog's bucket, and PyIceberg registers its metadata in the SQL catalog
    rest = pyiceberg_rest_catalog(lake.server)
    namespace = unique_name("duck")
    rest.create_namespace(namespace)
    duckdb_history(lake.duckdb, f"lake.{namespace}.events")
    written = rest.load_table((namespace, "events"))
    lake.pyiceberg.register_table(DUCKDB_TABLE, written.metadata_location)
    return {"pyiceberg": PYICEBERG_TABLE, "duckdb": DUCKDB_TABLE}


WRITERS = ["pyiceberg", "duckdb"]


def test_floe_sees_the_tables_pyiceberg_put_in_the_shared_database(
        lake: Lake, tables: dict[str, tuple[str, str]]) -> None:
    assert lake.floe.list_namespaces() == [(NAMESPACE,)]
    assert sorted(str(i) for i in lake.floe.list_tables(NAMESPACE)) == [
        "shop.duck_events", "shop.events"]
    for ident in tables.values():
        table = lake.floe.load_table(".".join(ident))
        assert table.metadata_location == lake.pyiceberg_table(ident).metadata_location
    assert lake.floe.load_table("shop.events").location.startswith(f"{lake.warehouse}/")


@pytest.mark.parametrize("writer", WRITERS)
def test_floe_reads_every_snapshot_as_the_writer_and_the_other_engine_do(
        lake: Lake, tables: dict[str, tuple[str, str]], writer: str) -> None:
    ident = tables[writer]
    table = lake.floe.load_table(".".join(ident))
    assert len(table.metadata.snapshots) >= 6
    assert assert_reads_agree(table.io, table.metadata_location,
                              pyiceberg_table=lake.pyiceberg_table(ident), con=lake.duckdb) > 0


@pytest.mark.parametrize("writer", WRITERS)
def test_time_travel_by_timestamp_picks_the_snapshot_the_engines_pick(
        lake: Lake, tables: dict[str, tuple[str, str]], writer: str) -> None:
    """As of each commit's time (and a millisecond before it): the snapshot PyIceberg picks,
    and the rows DuckDB reads as of that time."""
    ident = tables[writer]
    table = lake.floe.load_table(".".join(ident))
    pyiceberg = lake.pyiceberg_table(ident)
    md, io = table.metadata, table.io
    first = md.snapshot_log[0].timestamp_ms
    for entry in md.snapshot_log:
        for ms in (entry.timestamp_ms, entry.timestamp_ms - 1):
            if ms < first:
                with pytest.raises(NotFound, match="before"):
                    select_snapshot(md, as_of_ms=ms)
                continue
            picked = select_snapshot(md, as_of_ms=ms).snapshot.snapshot_id
            assert picked == pyiceberg.snapshot_as_of_timestamp(ms).snapshot_id
            at = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).replace(tzinfo=None)
            duck = lake.duckdb.execute(
                f"SELECT * FROM iceberg_scan('{table.metadata_location}', "
                f"snapshot_from_timestamp = TIMESTAMP '{at.isoformat(sep=' ')}')"
            ).to_arrow_table()
            assert_same_rows(duck, plan_to_table(io, plan_files(io, md, as_of_ms=ms)),
                             f"floe vs DuckDB as of {ms}")


def test_the_duckdb_table_has_duckdbs_position_deletes(
        lake: Lake, tables: dict[str, tuple[str, str]]) -> None:
    """The DuckDB table is what the reads above must cope with: position-delete files whose
    file_path bounds use id 2147483646 and whose entries lack column sizes and value
    counts, two of them at different sequence numbers on one data file."""
    table = lake.floe.load_table(".".join(tables["duckdb"]))
    plan = plan_files(table.io, table.metadata)
    deletes = {d.path: d for task in plan.tasks for d in task.delete_files}
    assert len(deletes) >= 3
    for delete in deletes.values():
        assert delete.content == FileContent.POSITION_DELETES
        assert set(delete.data_file.lower_bounds or {}) == {DUCKDB_FILE_PATH_ID}
        assert delete.data_file.column_sizes is None and delete.data_file.value_counts is None
    assert max(len(task.delete_files) for task in plan.tasks) >= 2


@pytest.mark.parametrize("writer", WRITERS)
def test_reads_from_the_persistent_manifest_cache_agree(
        lake: Lake, tables: dict[str, tuple[str, str]], writer: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The engines' manifests (DuckDB's without value counts, with its own bound ids) are
    kept in the persistent manifest cache and plan the same scans from it, cold and warm."""
    monkeypatch.setenv("FLOE_MANIFEST_CACHE", str(tmp_path / "manifests"))
    table = lake.floe.load_table(".".join(tables[writer]))
    io, md = table.io, table.metadata
    for snapshot in md.snapshots:
        want = multiset(floe_read(io, md, snapshot.snapshot_id))
        for _ in ("cold", "warm"):
            plan = plan_files(io, md, snapshot_id=snapshot.snapshot_id, cache=None)
            assert multiset(plan_to_table(io, plan)) == want, snapshot.snapshot_id
    stored = manifest_store()
    assert stored is not None
    live = [m for s in md.snapshots for m in read_manifest_list(io, s.manifest_list)
            if (m.added_files_count or 0) + (m.existing_files_count or 0)]
    assert live and all(stored.get(m) is not None for m in live), "a manifest was not stored"


@pytest.mark.parametrize("row_filter", FILTERS)
@pytest.mark.parametrize("writer", WRITERS)
def test_filtered_reads_agree(lake: Lake, tables: dict[str, tuple[str, str]], writer: str,
                              row_filter: str) -> None:
    ident = tables[writer]
    table = lake.floe.load_table(".".join(ident))
    assert_reads_agree(table.io, table.metadata_location, snapshot_ids=[None],
                       row_filter=row_filter, pyiceberg_table=lake.pyiceberg_table(ident),
                       con=lake.duckdb)


@pytest.mark.parametrize("writer", WRITERS)
def test_floe_changes_are_read_back_by_pyiceberg_and_duckdb(
        lake: Lake, tables: dict[str, tuple[str, str]], writer: str) -> None:
    ident = tables[writer]
    table = lake.floe.load_table(".".join(ident))
    first_snapshot = table.metadata.snapshots[-1].snapshot_id

    def check(step: str) -> None:
        table.refresh()
        reread = lake.pyiceberg_table(ident)  # PyIceberg sees floe's commit in the database
        assert reread.metadata_location == table.metadata_location, step
        assert_reads_agree(table.io, table.metadata_location, snapshot_ids=[None],
                           pyiceberg_table=reread, con=lake.duckdb)

    floe_changes(table, check)
    assert table.metadata.snapshots[0].snapshot_id != first_snapshot
