"""The floe PySpark source on tables in a bucket (issue 20): Spark's JVM has no S3 classes, so
every byte goes through floe's FileIO on the Python side, in the driver (planning, commits)
and in the executors' Python workers (reading and writing data files), configured from the
same storage properties: ``s3.*`` options beside a table path, or a catalog whose entry
carries them.

* Spark reads DuckDB's table (merge-on-read deletes; registered in a file-system catalog in
  the bucket) at every snapshot as DuckDB reads it, and with a filter.
* Spark appends and overwrites a table in the bucket (``floe.spark.write`` and the plain
  ``df.write.format("floe")`` API); PyIceberg and DuckDB read what was written.
* The same through ``CATALOG:namespace.table`` of a SQL catalog whose warehouse is in the
  bucket, and of SeaweedFS's REST catalog (its tables' storage configuration comes from the
  catalog).
* Compaction on Spark (sort and bin-pack) of tables in the bucket; PyIceberg and DuckDB read
  the result.
* Wrong credentials are the floe error they were (every floe error comes back out of a Spark
  traceback as itself), one line naming the location, without the secret.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lake_engines import (
    assert_same_rows,
    duckdb_history,
    duckdb_read,
    floe_read,
    multiset,
    pyiceberg_read,
)

from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import SqlCatalog
from floe import errors
from floe.errors import FloeError
from floe.io import FileIO
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.spark import read, spark_errors, write
from floe.spark.compaction import compact
from floe.spark.errors import floe_error_of
from floe.types import DATE, DOUBLE, LONG, STRING, NestedField
from tests.object_store import (
    SeaweedFS,
    duckdb_attach_rest,
    duckdb_connect,
    pyiceberg_rest_catalog,
    pyiceberg_sql_catalog,
    unique_name,
)
from tests.spark.spark_fixtures import spark  # noqa: F401 - the one PySpark session

pytestmark = [pytest.mark.objectstore, pytest.mark.spark]

SCHEMA = Schema(NestedField(1, "id", LONG, required=False), NestedField(2, "cat", STRING),
                NestedField(3, "value", DOUBLE), NestedField(4, "day", DATE))
SQL_CATALOG = "s3lake"
REST_CATALOG = "seaweed"


def _rows(ids: range, cat: str | None = None) -> pa.Table:
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "cat": pa.array([cat or "abc"[i % 3] for i in ids], pa.string()),
        "value": pa.array([i * 0.25 for i in ids], pa.float64()),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
    })


@dataclass
class Lake:
    server: SeaweedFS
    props: dict[str, str]
    catalog: FileSystemCatalog
    duckdb: Any
    duck_table: str  # DuckDB's table registered in the file-system catalog
    sql_database: Path
    sql_warehouse: str

    def static_table(self, metadata_location: str) -> Any:
        from pyiceberg.table import StaticTable

        return StaticTable.from_metadata(metadata_location, self.props)


@pytest.fixture(scope="module")
def lake(seaweedfs: SeaweedFS, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    props = seaweedfs.s3_properties()
    catalog = FileSystemCatalog(
        "fs", f"s3://{seaweedfs.bucket}/{unique_name('sparkwh')}", FileIO(props))
    catalog.create_namespace("db")
    con = duckdb_connect(seaweedfs)
    duckdb_attach_rest(con, seaweedfs)
    rest = pyiceberg_rest_catalog(seaweedfs)
    namespace = unique_name("duck")
    rest.create_namespace(namespace)
    duckdb_history(con, f"lake.{namespace}.events")
    catalog.register_table("db.duck", rest.load_table((namespace, "events")).metadata_location)
    root = tmp_path_factory.mktemp("spark-s3")
    # a catalog file naming a SQL catalog with its warehouse in the bucket and the storage
    # properties to reach it: what `CATALOG:namespace.table` resolves through
    database = root / "catalog.db"
    warehouse = f"s3://{seaweedfs.bucket}/{unique_name('sparksql')}"
    storage = "\n".join(f'"{k}" = "{v}"' for k, v in props.items())
    # and SeaweedFS's REST catalog with the S3 keys only: the endpoint comes with each table
    # (loadTable's config, given when no credentials are asked to be vended)
    (root / "catalogs.toml").write_text(
        f'[catalogs.{SQL_CATALOG}]\ntype = "sql"\nuri = "sqlite:///{database}"\n'
        f'warehouse = "{warehouse}"\n{storage}\n\n'
        f'[catalogs.{REST_CATALOG}]\ntype = "rest"\nuri = "{seaweedfs.catalog_uri}"\n'
        f'warehouse = "{seaweedfs.warehouse}"\n'
        f'credential = "{seaweedfs.access_key}:{seaweedfs.secret_key}"\n'
        f'"oauth2-server-uri" = "{seaweedfs.token_url}"\n'
        f'"header.X-Iceberg-Access-Delegation" = ""\n'
        f'"s3.access-key-id" = "{seaweedfs.access_key}"\n'
        f'"s3.secret-access-key" = "{seaweedfs.secret_key}"\n')
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FLOE_CATALOGS", str(root / "catalogs.toml"))
        yield Lake(seaweedfs, props, catalog, con, catalog.table_location("db.duck"),
                   database, warehouse)
    con.close()


def _spark_rows(df: Any) -> pa.Table:
    with spark_errors():
        return df.toArrow()  # type: ignore[no-any-return]


def test_spark_has_no_s3_file_system_of_its_own(spark: Any) -> None:  # noqa: F811
    """What makes the tests below mean something: the JVM cannot read s3:// itself."""
    jvm = spark.sparkContext._jvm
    with pytest.raises(Exception, match="ClassNotFoundException"):
        jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")


def test_spark_reads_every_snapshot_of_duckdbs_table_as_duckdb_does(
        lake: Lake, spark: Any) -> None:  # noqa: F811
    table = lake.catalog.load_table("db.duck")
    snapshots = [s.snapshot_id for s in table.metadata.snapshots]
    assert len(snapshots) >= 6
    for sid in snapshots:
        got = _spark_rows(read(spark, lake.duck_table, snapshot_id=sid, **lake.props))
        assert_same_rows(duckdb_read(lake.duckdb, table.metadata_location, sid), got,
                         f"Spark vs DuckDB at snapshot {sid}")
    got = _spark_rows(read(spark, lake.duck_table, filter="cat = 'a' and id > 1",
                           **lake.props))
    want = duckdb_read(lake.duckdb, table.metadata_location, row_filter="cat = 'a' and id > 1")
    assert want.num_rows > 0
    assert_same_rows(want, got, "Spark vs DuckDB with a filter")


def test_spark_writes_a_table_in_the_bucket_that_pyiceberg_and_duckdb_read(
        lake: Lake, spark: Any) -> None:  # noqa: F811
    table = lake.catalog.create_table("db.target", SCHEMA, parse_partition_by("cat", SCHEMA))
    expected: Counter[Any] = Counter()

    first = write(spark.createDataFrame(_rows(range(0, 30))), table.location, **lake.props)
    expected += multiset(_rows(range(0, 30)))
    # the plain API: the storage options ride along as options of the source
    (spark.createDataFrame(_rows(range(30, 40), "d")).write.format("floe")
     .options(**lake.props).mode("append").save(table.location))
    expected += multiset(_rows(range(30, 40), "d"))
    # a dynamic overwrite replaces partition b only
    replaced = write(spark.createDataFrame(_rows(range(100, 103), "b")), table.location,
                     mode="overwrite", overwrite_mode="dynamic", **lake.props)
    expected = Counter({row: n for row, n in expected.items() if dict(row)["cat"] != "b"})
    expected += multiset(_rows(range(100, 103), "b"))

    table.refresh()
    assert [s.snapshot_id for s in table.metadata.snapshots][0] == first
    assert table.metadata.current_snapshot_id == replaced
    assert len(table.metadata.snapshots) == 3
    files = [t.data_file.file_path for t in _plan(table)]
    assert files and all(f.startswith(f"{table.location}/data/cat=") for f in files)
    location = table.metadata_location
    assert multiset(floe_read(table.io, table.metadata)) == expected
    assert multiset(pyiceberg_read(lake.static_table(location))) == expected
    assert multiset(duckdb_read(lake.duckdb, location)) == expected
    assert multiset(_spark_rows(read(spark, table.location, **lake.props))) == expected


def _plan(table: Any) -> Any:
    from floe.scan import plan_files

    return plan_files(table.io, table.metadata).tasks


def test_spark_reads_and_writes_through_a_catalog_with_storage_properties(
        lake: Lake, spark: Any) -> None:  # noqa: F811
    catalog = SqlCatalog(SQL_CATALOG, f"sqlite:///{lake.sql_database}", lake.sql_warehouse,
                         FileIO(lake.props))
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, parse_partition_by("cat", SCHEMA))
    name = f"{SQL_CATALOG}:db.t"
    committed = write(spark.createDataFrame(_rows(range(0, 12))), name)
    expected = multiset(_rows(range(0, 12)))

    assert multiset(_spark_rows(read(spark, name))) == expected
    table = catalog.load_table("db.t")
    assert table.metadata.current_snapshot_id == committed
    assert table.location.startswith(f"{lake.sql_warehouse}/")
    pyiceberg = pyiceberg_sql_catalog(lake.server, lake.sql_database, lake.sql_warehouse,
                                      name=SQL_CATALOG)
    assert multiset(pyiceberg_read(pyiceberg.load_table(("db", "t")))) == expected
    assert multiset(duckdb_read(lake.duckdb, table.metadata_location)) == expected
    catalog.close()


def test_spark_reads_and_writes_through_a_rest_catalog_whose_tables_carry_the_endpoint(
        lake: Lake, spark: Any) -> None:  # noqa: F811
    """The catalog entry has the S3 keys but no endpoint: each table's FileIO gets it from
    the catalog's answer, and the executors get that FileIO's configuration."""
    from floe.catalog.config import load_catalog

    namespace = unique_name("spark")
    catalog = load_catalog(REST_CATALOG)
    assert "s3.endpoint" not in catalog.io.properties
    catalog.create_namespace(namespace)
    catalog.create_table(f"{namespace}.t", SCHEMA, parse_partition_by("cat", SCHEMA))
    name = f"{REST_CATALOG}:{namespace}.t"
    committed = write(spark.createDataFrame(_rows(range(0, 12))), name)
    write(spark.createDataFrame(_rows(range(12, 15), "z")), name)
    expected = multiset(_rows(range(0, 12))) + multiset(_rows(range(12, 15), "z"))

    assert multiset(_spark_rows(read(spark, name))) == expected
    assert multiset(_spark_rows(read(spark, name, snapshot_id=committed))) == multiset(
        _rows(range(0, 12)))
    table = catalog.load_table(f"{namespace}.t")
    assert table.io.properties["s3.endpoint"] == lake.server.endpoint
    assert len(table.metadata.snapshots) == 2
    pyiceberg = pyiceberg_rest_catalog(lake.server).load_table((namespace, "t"))
    assert multiset(pyiceberg_read(pyiceberg)) == expected
    assert multiset(lake.duckdb.execute(f"SELECT * FROM lake.{namespace}.t").to_arrow_table()
                    ) == expected
    catalog.close()


@pytest.mark.parametrize(("table_name", "strategy"), [("db.duck", "sort"),
                                                      ("db.target", "binpack")])
def test_compaction_on_spark_of_a_table_in_the_bucket(
        lake: Lake, spark: Any, table_name: str, strategy: str) -> None:  # noqa: F811
    """Sort: the job the executors read and write through the source; bin-pack: splits
    rewritten in the executors. DuckDB's table has its position deletes applied."""
    table = lake.catalog.load_table(table_name)
    before = multiset(floe_read(table.io, table.metadata))
    kwargs: dict[str, Any] = {"sort_order": "id desc"} if strategy == "sort" else {}
    result = compact(table, spark=spark, strategy=strategy,
                     options={"rewrite-all": "true"}, **kwargs)
    assert result.rewritten_data_files_count > 1 and not result.failures, result.to_json()
    table.refresh()
    location = table.metadata_location
    assert multiset(floe_read(table.io, table.metadata)) == before
    assert_same_rows(floe_read(table.io, table.metadata),
                     pyiceberg_read(lake.static_table(location)), "PyIceberg after compaction")
    assert_same_rows(floe_read(table.io, table.metadata), duckdb_read(lake.duckdb, location),
                     "DuckDB after compaction")
    assert all(not t.delete_files for t in _plan(table))


def test_wrong_credentials_are_the_floe_error_they_were_in_one_line_without_the_secret(
        lake: Lake, spark: Any) -> None:  # noqa: F811
    """Spark raises it while it makes the source in a Python worker; it comes back as the
    error floe raises for the same read outside Spark."""
    from floe.catalog.filesystem import resolve_metadata_location

    wrong = {**lake.props, "s3.secret-access-key": "not-the-SECRET-7f3a"}
    with pytest.raises(FloeError) as direct:
        resolve_metadata_location(FileIO(wrong), lake.duck_table)
    with pytest.raises(FloeError) as caught:
        read(spark, lake.duck_table, **wrong)
    assert type(caught.value) is type(direct.value)
    message = str(caught.value)
    assert message == str(direct.value)
    assert "\n" not in message and lake.duck_table in message
    assert "not-the-SECRET-7f3a" not in message and lake.server.secret_key not in message


FLOE_ERRORS = sorted((c for c in vars(errors).values()
                      if isinstance(c, type) and issubclass(c, errors.FloeError)),
                     key=lambda c: c.__name__)


@pytest.mark.parametrize("error", FLOE_ERRORS, ids=lambda c: c.__name__)
def test_every_floe_error_in_a_spark_traceback_comes_back_as_itself(
        error: type[errors.FloeError]) -> None:
    message = "s3://bucket/t/metadata/v3.metadata.json: access denied (403 Forbidden)"
    text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
            "Traceback (most recent call last):\n"
            '  File "/srv/floe/io/objectstore.py", line 418, in list_dir\n'
            "    raise err from None\n"
            f"floe.errors.{error.__name__}: {message} SQLSTATE: 38000\n")
    found = floe_error_of(text)
    # InvalidArgument's keyword is not in its text: it comes back as the ValidationError it is
    assert type(found) is (errors.ValidationError if error is errors.InvalidArgument else error)
    assert str(found) == message
