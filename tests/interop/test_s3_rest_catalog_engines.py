"""SeaweedFS's Iceberg REST catalog shared by PyIceberg, DuckDB and floe (issue 20, acceptance
1): tables PyIceberg (its ``RestCatalog``) and DuckDB (``ATTACH … TYPE iceberg``) wrote through
the catalog, in its table bucket, loaded by floe's ``RestCatalog``.

* floe lists and loads what the engines created, and reads every snapshot of each table as
  PyIceberg (its catalog's table) and DuckDB (the table of the catalog it attached, ``AT
  (VERSION => …)``) read it, also with filters.
* floe appends, deletes merge-on-read, rewrites the position deletes, compacts and expires,
  each a commit through the REST catalog; after each step PyIceberg and DuckDB load the table
  from the catalog and read what floe reads.
* Then the engines write again on top of floe's commits, and floe reads what they read.

The tests share the module's tables and run in file order.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from lake_engines import (
    FILTERS,
    assert_reads_agree,
    duckdb_history,
    floe_changes,
    floe_read,
    pyiceberg_history,
)

from floe.catalog.rest import RestCatalog
from tests.object_store import (
    SeaweedFS,
    duckdb_attach_rest,
    duckdb_connect,
    pyiceberg_rest_catalog,
    unique_name,
)

pytestmark = pytest.mark.objectstore

DUCKDB_ALIAS = "lake"


@dataclass
class Lake:
    server: SeaweedFS
    namespace: str
    pyiceberg: Any  # PyIceberg's RestCatalog
    floe: RestCatalog
    duckdb: Any  # a DuckDB connection with the S3 secret and the REST catalog attached

    def duckdb_name(self, table: str) -> str:
        return f"{DUCKDB_ALIAS}.{self.namespace}.{table}"


def floe_rest_catalog(server: SeaweedFS) -> RestCatalog:
    """floe's REST catalog on SeaweedFS with the properties PyIceberg is given."""
    return RestCatalog("seaweedfs", {
        "uri": server.catalog_uri, "warehouse": server.warehouse,
        "credential": f"{server.access_key}:{server.secret_key}",
        "oauth2-server-uri": server.token_url, **server.s3_properties()})


@pytest.fixture(scope="module")
def lake(seaweedfs: SeaweedFS) -> Iterator[Lake]:
    namespace = unique_name("engines")
    pyiceberg = pyiceberg_rest_catalog(seaweedfs)
    pyiceberg.create_namespace(namespace)
    con = duckdb_connect(seaweedfs)
    duckdb_attach_rest(con, seaweedfs, DUCKDB_ALIAS)
    catalog = floe_rest_catalog(seaweedfs)
    yield Lake(seaweedfs, namespace, pyiceberg, catalog, con)
    catalog.close()
    con.close()


@pytest.fixture(scope="module")
def tables(lake: Lake) -> dict[str, str]:
    """The table each engine wrote through the catalog, by writer."""
    pyiceberg_history(lake.pyiceberg, (lake.namespace, "py_events"))
    duckdb_history(lake.duckdb, lake.duckdb_name("duck_events"))
    return {"pyiceberg": "py_events", "duckdb": "duck_events"}


WRITERS = ["pyiceberg", "duckdb"]


def _ident(lake: Lake, table: str) -> str:
    return f"{lake.namespace}.{table}"


def _agree(lake: Lake, table_name: str, **kwargs: Any) -> int:
    table = lake.floe.load_table(_ident(lake, table_name))
    reread = lake.pyiceberg.load_table((lake.namespace, table_name))
    assert reread.metadata_location == table.metadata_location
    return assert_reads_agree(table.io, table.metadata_location, pyiceberg_table=reread,
                              con=lake.duckdb, duckdb_table=lake.duckdb_name(table_name),
                              **kwargs)


def test_floe_lists_and_loads_what_the_engines_created(
        lake: Lake, tables: dict[str, str]) -> None:
    assert (lake.namespace,) in lake.floe.list_namespaces()
    assert sorted(str(i) for i in lake.floe.list_tables(lake.namespace)) == sorted(
        _ident(lake, t) for t in tables.values())
    for name in tables.values():
        table = lake.floe.load_table(_ident(lake, name))
        assert table.location.startswith(f"{lake.server.warehouse}/{lake.namespace}/")
        assert table.metadata_location == lake.pyiceberg.load_table(
            (lake.namespace, name)).metadata_location


@pytest.mark.parametrize("writer", WRITERS)
def test_floe_reads_every_snapshot_as_pyiceberg_and_duckdb_do(
        lake: Lake, tables: dict[str, str], writer: str) -> None:
    assert _agree(lake, tables[writer]) > 0
    table = lake.floe.load_table(_ident(lake, tables[writer]))
    assert len(table.metadata.snapshots) >= 6


@pytest.mark.parametrize("row_filter", FILTERS)
@pytest.mark.parametrize("writer", WRITERS)
def test_filtered_reads_agree(lake: Lake, tables: dict[str, str], writer: str,
                              row_filter: str) -> None:
    _agree(lake, tables[writer], snapshot_ids=[None], row_filter=row_filter)


@pytest.mark.parametrize("writer", WRITERS)
def test_floe_commits_through_the_catalog_are_read_back_by_pyiceberg_and_duckdb(
        lake: Lake, tables: dict[str, str], writer: str) -> None:
    name = tables[writer]
    table = lake.floe.load_table(_ident(lake, name))
    start = table.metadata_location

    def check(step: str) -> None:
        table.refresh()
        assert table.metadata_location != start, step
        _agree(lake, name, snapshot_ids=[None])

    floe_changes(table, check)


@pytest.mark.parametrize("writer", WRITERS)
def test_the_engines_write_on_top_of_floes_commits(
        lake: Lake, tables: dict[str, str], writer: str) -> None:
    """PyIceberg appends and deletes (copy-on-write) rows floe wrote, DuckDB inserts, and on
    its own table deletes (merge-on-read) one floe wrote; floe reads what they read."""
    name = tables[writer]
    before = lake.floe.load_table(_ident(lake, name))
    pyiceberg_table = lake.pyiceberg.load_table((lake.namespace, name))
    pyiceberg_table.append(pa.table({
        "id": pa.array([50], pa.int64()), "cat": ["a"], "value": pa.array([9.5]),
        "day": pa.array([dt.date(2024, 6, 1)], pa.date32()), "note": ["pyiceberg"]}))
    pyiceberg_table.delete("id = 30")
    lake.duckdb.execute(f"INSERT INTO {lake.duckdb_name(name)} VALUES "
                        f"(51, 'b', 10.0, DATE '2024-06-02', 'duckdb')")
    if writer == "duckdb":  # DuckDB cannot delete from a table whose spec evolved (below)
        lake.duckdb.execute(f"DELETE FROM {lake.duckdb_name(name)} WHERE id = 33")
    after = lake.floe.load_table(_ident(lake, name))
    assert len(after.metadata.snapshots) >= len(before.metadata.snapshots) + 3
    ids = floe_read(after.io, after.metadata).column("id").to_pylist()
    assert 50 in ids and 51 in ids and 30 not in ids and (33 in ids) == (writer != "duckdb")
    assert _agree(lake, name) > 0


def test_duckdb_cannot_delete_from_a_table_whose_partition_spec_evolved(
        lake: Lake, tables: dict[str, str]) -> None:
    """DuckDB 1.5.5's limit (not floe's): a DELETE on a table with two specs fails to commit,
    floe's commits or not (the PyIceberg-written table has them since it was written)."""
    import duckdb

    with pytest.raises(duckdb.TransactionException, match="Duplicate field_id 1000"):
        lake.duckdb.execute(f"DELETE FROM {lake.duckdb_name(tables['pyiceberg'])} "
                            f"WHERE id = 50")


#: A delete whose predicate is NULL OR TRUE on the rows written before ``note`` existed.
NULL_OR_TRUE = "note = 'x' or id = 1"


def test_a_delete_true_through_a_null_column_deletes_as_java_does(
        lake: Lake, oracle: Any) -> None:
    """Rows written before ``note`` was added read it as null, so for id 1 the predicate is
    NULL OR TRUE = TRUE: Spark + Iceberg Java, DuckDB and floe (copy-on-write and
    merge-on-read) delete it. PyIceberg 0.12 keeps it (its delete keeps every row whose
    predicate is not false under non-Kleene OR: a PyIceberg bug, which its own history in
    lake_engines shows with id 3)."""
    from pyiceberg.types import StringType

    def build(name: str) -> Any:
        table = lake.pyiceberg.create_table((lake.namespace, name), pa.schema(
            [("id", pa.int64()), ("cat", pa.string())]))
        table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": ["a", "a", "b"]}))
        with table.update_schema() as update:
            update.add_column("note", StringType())
        table.append(pa.table({"id": pa.array([4], pa.int64()), "cat": ["a"], "note": ["x"]}))
        return table

    def ids(name: str) -> list[int]:
        table = lake.floe.load_table(_ident(lake, name))
        return sorted(floe_read(table.io, table.metadata).column("id").to_pylist())

    java = oracle.sql([
        "CREATE TABLE oracle.db.null_or_true (id bigint, cat string) USING iceberg",
        "INSERT INTO oracle.db.null_or_true VALUES (1, 'a'), (2, 'a'), (3, 'b')",
        "ALTER TABLE oracle.db.null_or_true ADD COLUMN note string",
        "INSERT INTO oracle.db.null_or_true VALUES (4, 'a', 'x')",
        f"DELETE FROM oracle.db.null_or_true WHERE {NULL_OR_TRUE}",
        "SELECT id FROM oracle.db.null_or_true ORDER BY id"])
    assert [r["id"] for r in java] == [2, 3]

    build("nulls_duckdb")
    lake.duckdb.execute(f"DELETE FROM {lake.duckdb_name('nulls_duckdb')} WHERE {NULL_OR_TRUE}")
    assert ids("nulls_duckdb") == [2, 3]
    for mode in ("copy-on-write", "merge-on-read"):
        name = f"nulls_floe_{mode.replace('-', '_')}"
        build(name)
        lake.floe.load_table(_ident(lake, name)).delete_where(NULL_OR_TRUE, mode=mode)
        assert ids(name) == [2, 3], mode
    build("nulls_pyiceberg").delete(NULL_OR_TRUE)
    assert ids("nulls_pyiceberg") == [1, 2, 3], "PyIceberg now deletes as Java does"
