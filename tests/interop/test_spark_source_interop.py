"""The floe PySpark source against the reference: tables written through it read the same in
Spark + Iceberg Java, PyIceberg and DuckDB; the Spark-written tables (position and equality
deletes, evolution, branches and tags) read through it give the Java reader's rows for every
snapshot; the demo pipeline, run as ``make pipeline`` runs it, leaves a table Java reads.

Two JVMs run in this module: the oracle's Spark 3.5 and this session's PySpark 4 (the
``spark`` fixture of tests/spark/spark_fixtures.py, one per pytest session).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle_client import REPO
from oracle_server import _jsonable
from spark_tables import TABLE_NAMES, SparkTable
from test_floe_written_tables import BATCHES, SCHEMA, _micros
from test_scan_vs_spark import _floe_rows, _multiset, _table_rows
from test_scan_vs_spark import spark_versions  # noqa: F401 - the Java reader's rows, a fixture

from floe.catalog.filesystem import FileSystemCatalog
from floe.partitioning import parse_partition_by
from floe.spark import read, spark_errors, write
from floe.table import Table
from tests.spark.spark_fixtures import spark  # noqa: F401 - the one PySpark session

pytestmark = [pytest.mark.interop, pytest.mark.spark]

#: Target tables written through the source: their specs (and the source's own rows).
SPECS = {"a": "bucket(16, i), truncate(3, s), day(ts)", "c": "year(d), bucket(8, dec), b",
         "u": ""}


def _spark_json_rows(df: Any) -> list[dict[str, Any]]:
    with spark_errors():
        return _table_rows(df.toArrow())  # type: ignore[no-any-return]


def _source_rows() -> pa.Table:
    """Edge values of every column (the rows of test_floe_written_tables), twice over."""
    return pa.concat_tables(BATCHES)


def _json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: _jsonable(v) for k, v in r.items()} for r in rows]


def _expected(name: str) -> list[dict[str, Any]]:
    """``a`` lost the first batch to the dynamic overwrite (the second batch writes the same
    partitions), then had its ``s = 'iceberg'`` rows replaced by both batches' ones."""
    rows = _source_rows().to_pylist()
    if name != "a":
        return _json(rows)
    second = BATCHES[1].to_pylist()
    return _json([r for r in second if r["s"] != "iceberg"]
                 + [r for r in rows if r["s"] == "iceberg"])


@pytest.fixture(scope="module")
def written(oracle: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
            ) -> dict[str, Table]:
    """Tables written through the source: appends of every edge value, then a dynamic
    overwrite and a static overwrite by filter on ``a``."""
    root = tmp_path_factory.mktemp("spark-source-warehouse")
    catalog = FileSystemCatalog("w", str(root))
    source = catalog.create_table("db.source", SCHEMA)
    source.append(_source_rows())
    tables = {}
    for name, partition_by in SPECS.items():
        kwargs = {"spec": parse_partition_by(partition_by, SCHEMA)} if partition_by else {}
        table = catalog.create_table(f"db.{name}", SCHEMA, **kwargs)
        write(read(spark, source.location), table.location)
        tables[name] = table
    a = tables["a"].location
    write(read(spark, source.location, filter="l >= 900"), a, mode="overwrite",
          overwrite_mode="dynamic")
    write(read(spark, source.location, filter="s = 'iceberg'"), a, mode="overwrite",
          filter="s = 'iceberg'")
    oracle.add_catalog("sparksrc", root)
    return tables


@pytest.mark.parametrize("name", list(SPECS))
def test_java_reads_what_the_source_wrote(oracle: Any, written: dict[str, Table],
                                          name: str) -> None:
    location = written[name].location
    expected = _floe_rows(location)
    assert _multiset(expected) == _multiset(_expected(name))
    (rows,) = oracle.sql([f"SELECT * FROM sparksrc.db.{name}"], all=True)
    assert _multiset(rows) == _multiset(expected)


@pytest.mark.parametrize("name", list(SPECS))
def test_pyiceberg_and_duckdb_read_what_the_source_wrote(oracle: Any, written: dict[str, Table],
                                                         name: str) -> None:
    table = written[name].refresh()
    expected = _floe_rows(table.location)
    result = oracle.pyiceberg(table.metadata_location)
    assert _multiset(result["rows"]) == _multiset(expected)
    rows = oracle.duckdb(
        f"SELECT * REPLACE (epoch_us(ts) AS ts) FROM iceberg_scan('{table.metadata_location}')")
    micros = _floe_rows(table.location)
    for row in micros:  # DuckDB's client hands timestamptz over as microseconds
        if row["ts"] is not None:
            row["ts"] = _micros(dt.datetime.fromisoformat(row["ts"]))
    assert _multiset(rows) == _multiset(micros)


def test_java_sees_the_source_commits(oracle: Any, written: dict[str, Table]) -> None:
    """The snapshots of ``a``: three appends-or-overwrites as Java's metadata table shows."""
    (snaps,) = oracle.sql(["SELECT operation, summary FROM sparksrc.db.a.snapshots "
                           "ORDER BY committed_at"], all=True)
    assert [s["operation"] for s in snaps] == ["append", "overwrite", "overwrite"]
    assert snaps[1]["summary"]["replace-partitions"] == "true"
    assert all("floe.spark.write-id" in s["summary"] for s in snaps)


# -- Java-written tables read through the source -----------------------------------------------

@pytest.mark.parametrize("name", TABLE_NAMES)
def test_every_snapshot_reads_as_java_reads_it(
        spark: Any, spark_tables: dict[str, SparkTable],  # noqa: F811
        spark_versions: dict[str, Any], name: str) -> None:  # noqa: F811
    location = str(spark_tables[name].location)
    for sid, rows in spark_versions[name].items():
        ours = _spark_json_rows(read(spark, location, snapshot_id=sid))
        assert _multiset(ours) == _multiset(rows), (name, sid)


@pytest.mark.parametrize("ref", ["first_tag", "dev", "main"])
def test_refs_read_as_java_reads_them(oracle: Any, spark: Any,  # noqa: F811
                                      spark_tables: dict[str, SparkTable], ref: str) -> None:
    t = spark_tables["refs_v2"]
    (rows,) = oracle.sql([f"SELECT * FROM {t.ident} VERSION AS OF '{ref}'"], all=True)
    kind = "tag" if ref.endswith("tag") else "branch"
    ours = _spark_json_rows(read(spark, str(t.location), **{kind: ref}))
    assert _multiset(ours) == _multiset(rows)


@pytest.mark.parametrize("name,where", [
    ("mor_v2", "cat = 'b'"), ("mor_v2", "v > 5"), ("eqdel_v2", "id >= 2"),
    ("identity_v2", "s > 'b'"), ("time_v2", "ts_d >= TIMESTAMP '2017-01-01 00:00:00'"),
    ("evolve_v2", "label IS NULL"), ("nested_v2", "st.a = 1"),
])
def test_filtered_reads_match_java(oracle: Any, spark: Any,  # noqa: F811
                                   spark_tables: dict[str, SparkTable], name: str,
                                   where: str) -> None:
    t = spark_tables[name]
    (rows,) = oracle.sql([f"SELECT * FROM {t.ident} WHERE {where}"], all=True)
    ours = _spark_json_rows(read(spark, str(t.location)).filter(where))
    assert _multiset(ours) == _multiset(rows)


# -- the demo pipeline -------------------------------------------------------------------------

def test_the_demo_pipeline_runs_and_java_reads_its_table(oracle: Any,
                                                         tmp_path: Path) -> None:
    warehouse = tmp_path / "pipeline-warehouse"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    run = subprocess.run(
        [sys.executable, "pipeline/events.py", "--warehouse", str(warehouse), "--batches", "2",
         "--rows", "1000", "--master", "local[2]"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Done: 2,400 events in local:pipeline.events" in run.stdout
    assert f"FLOE_WAREHOUSE={warehouse} make run" in run.stdout
    oracle.add_catalog("pipe", warehouse)
    (rows,) = oracle.sql(["SELECT * FROM pipe.pipeline.events"], all=True)
    ours = _floe_rows(warehouse / "pipeline" / "events")
    assert len(rows) == 2400
    assert _multiset(rows) == _multiset(ours)
