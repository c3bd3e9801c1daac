"""Tables other engines write on object storage, and the three readers the interop tests on
them compare: floe, PyIceberg 0.12 and DuckDB 1.5.5 (tests/object_store.py starts the S3
servers and connects the engines).

Each engine writes one history with the features a reader can get wrong:

* PyIceberg (:func:`pyiceberg_history`): partitioned by ``cat``, then by ``cat`` and
  ``day`` (identity: PyIceberg writes other transforms only with pyiceberg-core); a
  copy-on-write delete that drops one file whole and rewrites another (two snapshots:
  ``delete`` + ``overwrite``); a float promoted to double, renamed, and a column added; a
  partition overwrite; a delete in the evolved spec.
* DuckDB (:func:`duckdb_history`, through a REST catalog it attached): partitioned by ``cat``;
  merge-on-read DELETEs (position-delete files whose ``file_path`` bounds are keyed by field
  id 2147483646, not the spec's 2147483546, and whose manifest entries have no column sizes
  or value counts), two of them on the same data file at different sequence numbers; a
  column added and one renamed; an UPDATE (a delete and an insert in one snapshot).

Rows are compared as multisets of ``{column: value}`` rows (:func:`multiset`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from floe.catalog.base import read_metadata
from floe.io import FileIO
from floe.metadata import TableMetadata
from floe.scan import plan_files
from floe.scan.readers import plan_to_table

Row = tuple[tuple[str, Any], ...]


def multiset(table: pa.Table) -> Counter[Row]:
    """The rows of ``table`` as a multiset of (column, value) tuples in column order."""
    return Counter(tuple(row.items()) for row in table.to_pylist())


def columns(table: pa.Table) -> list[str]:
    return list(table.column_names)


# -- the three readers ------------------------------------------------------------------------

def floe_read(io: FileIO, metadata: TableMetadata | str, snapshot_id: int | None = None,
              row_filter: str | None = None) -> pa.Table:
    """floe's rows of the table at ``snapshot_id`` (default: current) matching
    ``row_filter``, planned and read through ``io``; ``metadata`` is parsed metadata or its
    location."""
    md = read_metadata(io, metadata) if isinstance(metadata, str) else metadata
    return plan_to_table(io, plan_files(io, md, snapshot_id=snapshot_id, row_filter=row_filter))


def pyiceberg_read(table: Any, snapshot_id: int | None = None, row_filter: str | None = None
                   ) -> pa.Table:
    """PyIceberg's rows of its ``table`` at ``snapshot_id`` (default: current)."""
    return table.scan(snapshot_id=snapshot_id, row_filter=row_filter or "true").to_arrow()


def duckdb_read(con: Any, metadata_location: str, snapshot_id: int | None = None,
                row_filter: str | None = None) -> pa.Table:
    """DuckDB's rows of the table whose metadata file is ``metadata_location``, at
    ``snapshot_id`` (default: that file's current snapshot), ``WHERE row_filter``."""
    at = f", snapshot_from_id = {snapshot_id}" if snapshot_id is not None else ""
    where = f" WHERE {row_filter}" if row_filter else ""
    return con.execute(f"SELECT * FROM iceberg_scan('{metadata_location}'{at}){where}"
                       ).to_arrow_table()


def duckdb_read_attached(con: Any, name: str, snapshot_id: int | None = None,
                         row_filter: str | None = None) -> pa.Table:
    """DuckDB's rows of ``name`` (``alias.namespace.table`` of an attached REST catalog: DuckDB
    loads the table from the catalog), at ``snapshot_id`` (default: the current one)."""
    at = f" AT (VERSION => {snapshot_id})" if snapshot_id is not None else ""
    where = f" WHERE {row_filter}" if row_filter else ""
    return con.execute(f"SELECT * FROM {name}{at}{where}").to_arrow_table()


def assert_same_rows(expected: pa.Table, got: pa.Table, what: str) -> None:
    """Equal column names (in order) and equal multisets of rows."""
    assert columns(got) == columns(expected), f"{what}: columns differ"
    want, have = multiset(expected), multiset(got)
    assert have == want, (f"{what}: rows differ; missing {sorted(want - have, key=repr)}, "
                          f"extra {sorted(have - want, key=repr)}")


def assert_reads_agree(io: FileIO, metadata_location: str, *, pyiceberg_table: Any,
                       con: Any, snapshot_ids: Sequence[int | None] | None = None,
                       row_filter: str | None = None, duckdb_table: str | None = None) -> int:
    """floe, PyIceberg and DuckDB read the same rows (matching ``row_filter``) at every
    snapshot of the metadata file and at the current one (or at ``snapshot_ids``, None
    meaning the current one); returns how many rows floe read in all. DuckDB reads the
    metadata file (``iceberg_scan``), or ``duckdb_table`` of a catalog it attached."""
    md = read_metadata(io, metadata_location)
    ids = list(snapshot_ids) if snapshot_ids is not None else [
        *(s.snapshot_id for s in md.snapshots), None]
    assert md.snapshots, f"{metadata_location} has no snapshot"
    total = 0
    for sid in ids:
        what = f"snapshot {sid}" if sid is not None else "the current snapshot"
        if row_filter:
            what += f" where {row_filter}"
        floe = floe_read(io, md, sid, row_filter)
        assert_same_rows(pyiceberg_read(pyiceberg_table, sid, row_filter), floe,
                         f"floe vs PyIceberg at {what} of {metadata_location}")
        duck = (duckdb_read(con, metadata_location, sid, row_filter) if duckdb_table is None
                else duckdb_read_attached(con, duckdb_table, sid, row_filter))
        assert_same_rows(duck, floe, f"floe vs DuckDB at {what} of {metadata_location}")
        total += floe.num_rows
    return total


# -- what PyIceberg writes --------------------------------------------------------------------

def _day(n: int) -> dt.date:
    return dt.date(2024, 1, 1) + dt.timedelta(days=31 * (n % 3) + n)


def _pyiceberg_rows(ids: Sequence[int], cats: Sequence[str], *, evolved: bool = False
                    ) -> pa.Table:
    amount = pa.array([i * 0.5 for i in ids], pa.float64() if evolved else pa.float32())
    columns: dict[str, Any] = {
        "id": pa.array(ids, pa.int64()), "cat": pa.array(cats, pa.string()),
        ("value" if evolved else "amount"): amount,
        "day": pa.array([_day(i) for i in ids], pa.date32()),
    }
    if evolved:
        columns["note"] = pa.array([f"n{i}" for i in ids], pa.string())
    return pa.table(columns)


def pyiceberg_history(catalog: Any, identifier: tuple[str, str], location: str | None = None
                      ) -> Any:
    """Write the PyIceberg history (module docstring) into a new table of ``catalog`` (a
    PyIceberg catalog: SQL or REST), at ``location`` when given; returns the PyIceberg
    table."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DateType, DoubleType, FloatType, LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "cat", StringType(), required=False),
        NestedField(3, "amount", FloatType(), required=False),
        NestedField(4, "day", DateType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    catalog.create_namespace_if_not_exists(identifier[0])
    table = catalog.create_table(identifier, schema, partition_spec=spec, location=location)
    table.append(_pyiceberg_rows([1, 2, 3, 4, 5, 6], ["a", "b", "a", "c", "a", "b"]))
    table.append(_pyiceberg_rows([7, 8, 9], ["a", "b", "d"]))
    # id 4 is alone in its file (dropped whole: a "delete" snapshot); id 1 shares one with
    # ids 3 and 5 (rewritten: an "overwrite" snapshot)
    table.delete("id = 1 or id = 4")
    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.update_column("amount", DoubleType())
        update.rename_column("amount", "value")
    with table.update_spec() as update_spec:
        update_spec.add_identity("day")
    table.append(_pyiceberg_rows([10, 11, 12, 13], ["a", "b", "b", "e"], evolved=True))
    table.overwrite(_pyiceberg_rows([20, 21], ["b", "b"], evolved=True),
                    overwrite_filter="cat = 'b'")
    # PyIceberg 0.12 deletes id 10 but keeps id 3, written before `note` existed (NULL OR
    # TRUE is TRUE: Java and DuckDB delete it; test_s3_rest_catalog_engines shows it): the
    # readers read what was written
    table.delete("note = 'n10' or id = 3")
    operations = [s.summary.operation.value for s in table.snapshots()]
    assert operations[:4] == ["append", "append", "delete", "overwrite"], operations
    return table


@contextmanager
def pyiceberg_sql_catalog_read_by_floe(store_properties: dict[str, str], warehouse: str,
                                       database: Path) -> Iterator[tuple[Any, Any]]:
    """PyIceberg's ``SqlCatalog`` (its pyarrow FileIO) on the SQLite file ``database`` with
    its warehouse on a store (``store_properties``: the store's FileIO properties, which both
    catalogs are given) writes its history into ``shop.events``; floe's ``SqlCatalog`` on the
    same file loads that table and reads every snapshot as PyIceberg does. Yields (PyIceberg's
    catalog, floe's table) with floe's catalog open."""
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    from floe.catalog.sql import SqlCatalog

    pyiceberg = PyIcebergSqlCatalog(
        "lake", uri=f"sqlite:///{database}", warehouse=warehouse,
        **{**store_properties, "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    written = pyiceberg_history(pyiceberg, ("shop", "events"))
    assert written.metadata_location.startswith(warehouse + "/")

    with SqlCatalog("lake", f"sqlite:///{database}", warehouse,
                    FileIO(store_properties)) as floe:
        table = floe.load_table("shop.events")
        assert table.metadata_location == written.metadata_location
        assert len(table.metadata.snapshots) >= 6
        for snapshot in table.metadata.snapshots:
            assert_same_rows(pyiceberg_read(written, snapshot.snapshot_id),
                             floe_read(table.io, table.metadata, snapshot.snapshot_id),
                             f"snapshot {snapshot.snapshot_id}")
        yield pyiceberg, table


# -- what DuckDB writes -----------------------------------------------------------------------

def duckdb_history(con: Any, name: str) -> None:
    """Write the DuckDB history (module docstring) as the new table ``name``
    (``alias.namespace.table`` of a REST catalog ``con`` attached read-write)."""
    con.execute(f"CREATE TABLE {name} (id BIGINT, cat VARCHAR, amount DOUBLE, day DATE)")
    con.execute(f"ALTER TABLE {name} SET PARTITIONED BY (cat)")
    values = ", ".join(f"({i}, '{c}', {i * 0.5}, DATE '{_day(i)}')" for i, c in
                       zip(range(1, 7), ["a", "b", "a", "c", "a", "b"], strict=True))
    con.execute(f"INSERT INTO {name} VALUES {values}")
    con.execute(f"INSERT INTO {name} VALUES (7, 'a', 3.5, DATE '2024-03-01'), "
                f"(8, 'b', 4.0, DATE '2024-03-02')")
    con.execute(f"DELETE FROM {name} WHERE id = 2 OR id = 4")
    con.execute(f"ALTER TABLE {name} ADD COLUMN note VARCHAR")
    con.execute(f"ALTER TABLE {name} RENAME COLUMN amount TO value")
    con.execute(f"INSERT INTO {name} VALUES (10, 'a', 5.0, DATE '2024-04-01', 'n10'), "
                f"(11, 'b', 5.5, DATE '2024-04-02', NULL)")
    con.execute(f"UPDATE {name} SET note = 'updated' WHERE id = 3")
    # a second delete of the first insert's file in partition b (id 2 went before)
    con.execute(f"DELETE FROM {name} WHERE id = 6")


# -- what floe does to them -------------------------------------------------------------------

#: Filters each reader applies at the current snapshot: pruning by partition values and by
#: the metrics each engine wrote (DuckDB's data files have bounds but no value counts).
FILTERS = (
    "id > 5",
    "cat = 'a'",
    "cat = 'a' and id < 6",
    "value >= 2.5",
    "note is null",
    "day < '2024-02-01'",
)

#: Rows floe appends to either engine's table (both end with these columns).
FLOE_ROWS = pa.table({
    "id": pa.array([30, 31, 32, 33], pa.int64()),
    "cat": pa.array(["a", "b", "z", "a"], pa.string()),
    "value": pa.array([1.25, 2.5, 3.75, 5.0], pa.float64()),
    "day": pa.array([dt.date(2024, 5, 1), dt.date(2024, 5, 2), dt.date(2024, 1, 3),
                     dt.date(2024, 5, 1)], pa.date32()),
    "note": pa.array(["floe", None, "floe", "floe"], pa.string()),
})
#: What floe's merge-on-read delete removes: rows of both engines' histories and one of its own.
FLOE_DELETE = "id = 5 or id = 7 or id = 31"


def floe_changes(table: Any, check: Callable[[str], None]) -> None:
    """floe's changes to an engine's ``table`` (a floe Table in any catalog), calling
    ``check(step)`` after each: an append, a merge-on-read delete (position deletes), a
    rewrite of the position deletes, a compaction that applies every delete, and an expiry of
    every snapshot but the current one, which deletes the files only they used."""
    from floe.maintenance.compaction import compact
    from floe.maintenance.expire import expire_snapshots
    from floe.maintenance.rewrite_deletes import rewrite_position_deletes

    table.append(FLOE_ROWS)
    check("floe append")

    before = floe_read(table.io, table.refresh().metadata).num_rows
    table.delete_where(FLOE_DELETE, mode="merge-on-read")
    md = table.refresh().metadata
    assert floe_read(table.io, md).num_rows == before - 3
    added = md.current_snapshot().summary
    assert added.get("added-position-delete-files"), added
    check("floe merge-on-read delete")

    # the engine's delete files (DuckDB's) and floe's, rewritten by partition
    rewritten = rewrite_position_deletes(table, options={"rewrite-all": "true"})
    assert rewritten.rewritten_delete_files_count and rewritten.added_delete_files_count, (
        rewritten.to_json())
    check("floe rewrite of position deletes")

    result = compact(table, options={"rewrite-all": "true"})
    assert result.rewritten_data_files_count and result.removed_delete_files_count, (
        result.to_json())
    check("floe compaction")
    live = [t for t in plan_files(table.io, table.refresh().metadata).tasks if t.delete_files]
    assert live == [], "compaction left deletes to apply"

    expired = expire_snapshots(table, older_than_ms=table.metadata.last_updated_ms + 1,
                               retain_last=1)
    assert expired.expired_snapshot_ids and expired.deleted_files and not expired.failed
    assert len(table.refresh().metadata.snapshots) == 1
    check("floe expiry")
