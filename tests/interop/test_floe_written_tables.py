"""Tables that floe creates and appends to are read by Spark + Iceberg Java, PyIceberg and
DuckDB with the same rows, and Spark's metadata tables agree with floe's about every file.

Every partition transform appears in one of the specs, on edge values: pre-1970 dates and
timestamps, negative numbers and decimals, multi-byte strings, nulls.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle_server import _jsonable

from floe.catalog.filesystem import load_table_metadata
from floe.inspect import file_rows
from floe.io import FileIO
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.table.append import append, create_table
from floe.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, INT, LONG, STRING, TIMESTAMP, TIMESTAMPTZ, DecimalType,
    NestedField,
)

SCHEMA = Schema(
    NestedField(1, "i", INT),
    NestedField(2, "l", LONG, required=True),
    NestedField(3, "s", STRING),
    NestedField(4, "dec", DecimalType(9, 2)),
    NestedField(5, "d", DATE),
    NestedField(6, "ts", TIMESTAMPTZ),
    NestedField(7, "ntz", TIMESTAMP),
    NestedField(8, "b", BOOLEAN),
    NestedField(9, "bin", BINARY),
    NestedField(10, "x", DOUBLE),
)

SPECS = {
    "a": "bucket(16, i), truncate(3, s), day(ts)",
    "b": "l, month(ntz), truncate(10, i)",
    "c": "year(d), bucket(8, dec), truncate(2, bin), b",
    "d": "hour(ts), bucket(4, s), truncate(50, dec), truncate(10, l)",
    "e": "bucket(4, l), bucket(4, d), bucket(4, ntz), bucket(4, bin), s",
    "f": "d, ts, dec, year(ntz), day(d)",
    "u": "",
}

UTC = dt.timezone.utc


def _batch(offset: int) -> pa.Table:
    def ts(*a: int) -> dt.datetime:
        return dt.datetime(*a, tzinfo=UTC)

    rows = [
        (0, 0, "", "0.00", dt.date(1970, 1, 1), ts(1970, 1, 1), dt.datetime(1970, 1, 1), True, b"", 0.0),
        (1, 1, "a", "14.20", dt.date(1969, 12, 31), ts(1969, 12, 31, 23, 59, 59, 999999),
         dt.datetime(1969, 12, 31, 23, 59, 59, 999999), False, b"\x00", -0.0),
        (-1, -1, "iceberg", "-0.01", dt.date(1900, 1, 1), ts(1900, 1, 1, 12, 30),
         dt.datetime(1900, 1, 1, 12, 30), True, b"\xde\xad\xbe\xef", float("nan")),
        (34, 34, "日本語テキスト", "-12.34", dt.date(2017, 11, 16), ts(2017, 11, 16, 22, 31, 8),
         dt.datetime(2017, 11, 16, 22, 31, 8), None, "日本".encode(), float("inf")),
        (-100, -100, "🧊ice", "9999999.99", dt.date(1960, 6, 15), ts(1960, 6, 15, 5, 6, 7),
         dt.datetime(1960, 6, 15, 5, 6, 7), False, b"\xff", -1.5),
        (None, 7, None, None, None, None, None, None, None, None),
    ]
    cols = list(zip(*rows, strict=True))
    return pa.table({
        "i": pa.array(cols[0], pa.int32()),
        "l": pa.array([v + offset for v in cols[1]], pa.int64()),
        "s": pa.array(cols[2], pa.string()),
        "dec": pa.array([Decimal(v) if v is not None else None for v in cols[3]], pa.decimal128(9, 2)),
        "d": pa.array(cols[4], pa.date32()),
        "ts": pa.array(cols[5], pa.timestamp("us", tz="UTC")),
        "ntz": pa.array(cols[6], pa.timestamp("us")),
        "b": pa.array(cols[7], pa.bool_()),
        "bin": pa.array(cols[8], pa.binary()),
        "x": pa.array(cols[9], pa.float64()),
    })


BATCHES = [_batch(0), _batch(1000)]


def _expected_rows() -> list[dict[str, Any]]:
    return [{k: _jsonable(v) for k, v in r.items()} for b in BATCHES for r in b.to_pylist()]


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


def _multiset(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(_key(r) for r in rows)


@pytest.fixture(scope="module")
def floe_warehouse(oracle: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("floe-warehouse")
    io = FileIO()
    tables = {}
    for version in (1, 2):
        for name, partition_by in SPECS.items():
            location = root / "db" / f"{name}_v{version}"
            spec = parse_partition_by(partition_by, SCHEMA) if partition_by else None
            kwargs = {"spec": spec} if spec is not None else {}
            create_table(io, str(location), SCHEMA, format_version=version, **kwargs)
            for batch in BATCHES:
                append(io, str(location), batch)
            tables[f"{name}_v{version}"] = location
    oracle.add_catalog("floe", root)
    return tables


@pytest.fixture(scope="module")
def spark_reads(oracle: Any, floe_warehouse: dict[str, Path]) -> dict[str, Any]:
    names = sorted(floe_warehouse)
    statements = []
    for n in names:
        statements.append(f"SELECT * FROM floe.db.{n}")
        statements.append(f"SELECT * FROM floe.db.{n}.files")  # unpartitioned: no partition column
    results = oracle.sql(statements, all=True)
    return {n: (results[2 * i], results[2 * i + 1]) for i, n in enumerate(names)}


def _table_names() -> list[str]:
    return [f"{n}_v{v}" for v in (1, 2) for n in SPECS]


@pytest.mark.parametrize("name", _table_names())
def test_spark_reads_the_rows_floe_wrote(spark_reads: dict[str, Any], name: str) -> None:
    rows, _ = spark_reads[name]
    assert _multiset(rows) == _multiset(_expected_rows())


@pytest.mark.parametrize("name", _table_names())
def test_spark_files_table_agrees_with_floe(
    spark_reads: dict[str, Any], floe_warehouse: dict[str, Path], name: str
) -> None:
    _, spark_files = spark_reads[name]
    io = FileIO()
    _, md = load_table_metadata(io, str(floe_warehouse[name]))
    ours = {f["file_path"]: f for f in file_rows(io, md, md.current_snapshot())}
    theirs = {f["file_path"]: f for f in spark_files}
    assert set(ours) == set(theirs)
    for path, spark_file in theirs.items():
        assert spark_file["record_count"] == ours[path]["record_count"]
        assert spark_file["spec_id"] == ours[path]["spec_id"]
        spark_partition = spark_file.get("partition") or {}
        assert set(spark_partition) == set(ours[path]["partition"])
        for field, value in spark_partition.items():
            assert _same_value(value, ours[path]["partition"][field]), (path, field)


def _same_value(spark_value: Any, floe_value: Any) -> bool:
    if spark_value is None or floe_value is None:
        return spark_value is floe_value
    if isinstance(spark_value, str) and isinstance(floe_value, str) and "T" in floe_value:
        # timestamps: Spark prints ISO with +00:00; floe's JSON single values use 6 digits
        return dt.datetime.fromisoformat(spark_value) == dt.datetime.fromisoformat(floe_value)
    if isinstance(spark_value, str) and isinstance(floe_value, str) and spark_value[:1].isdigit():
        try:
            return Decimal(spark_value) == Decimal(floe_value)
        except ArithmeticError:
            pass
    return bool(spark_value == floe_value)


@pytest.mark.parametrize("name", _table_names())
def test_pyiceberg_reads_the_rows_floe_wrote(
    oracle: Any, floe_warehouse: dict[str, Path], name: str
) -> None:
    location, _ = load_table_metadata(FileIO(), str(floe_warehouse[name]))
    result = oracle.pyiceberg(location)
    assert _multiset(result["rows"]) == _multiset(_expected_rows())


@pytest.mark.parametrize("name", _table_names())
def test_duckdb_reads_the_rows_floe_wrote(
    oracle: Any, floe_warehouse: dict[str, Path], name: str
) -> None:
    # The oracle's DuckDB client cannot hand out timestamptz values (it lacks pytz): compare
    # them as microseconds since the epoch.
    rows = oracle.duckdb(
        f"SELECT * REPLACE (epoch_us(ts) AS ts) FROM iceberg_scan('{floe_warehouse[name]}')"
    )
    expected = []
    for row in _expected_rows():
        ts = row["ts"]
        row["ts"] = None if ts is None else _micros(dt.datetime.fromisoformat(ts))
        expected.append(row)
    assert _multiset(rows) == _multiset(expected)


def _micros(value: dt.datetime) -> int:
    delta = value - dt.datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
