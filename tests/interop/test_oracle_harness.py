"""The oracle harness itself: one server, errors that do not kill it, the three readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from oracle_client import OracleRequestError

from floe.schema import Schema

pytestmark = pytest.mark.interop


def test_sql_round_trip_and_metadata_schema(oracle: Any) -> None:
    rows = oracle.sql(
        "CREATE TABLE oracle.smoke.t (id bigint, s string, d date) USING iceberg "
        "TBLPROPERTIES ('format-version'='2');"
        "INSERT INTO oracle.smoke.t VALUES (1, 'a', DATE '1969-12-31'), (2, 'é', NULL);"
        "SELECT * FROM oracle.smoke.t ORDER BY id"
    )
    assert rows == [{"id": 1, "s": "a", "d": "1969-12-31"}, {"id": 2, "s": "é", "d": None}]
    meta_dir = Path(oracle.warehouse) / "smoke" / "t" / "metadata"
    latest = json.loads((meta_dir / "v2.metadata.json").read_text())
    schema = Schema.from_json(latest["schemas"][0])
    assert [f.name for f in schema.as_struct().fields] == ["id", "s", "d"]
    assert str(schema.find_type("d")) == "date"


def test_a_failing_request_does_not_stop_the_server(oracle: Any) -> None:
    with pytest.raises(OracleRequestError, match="no_such_table|TABLE_OR_VIEW_NOT_FOUND"):
        oracle.sql("SELECT * FROM oracle.smoke.no_such_table")
    with pytest.raises(OracleRequestError, match="unknown op"):
        oracle.request("no-such-op")
    assert oracle.request("ping") == "pong"


def test_pyiceberg_and_duckdb_read_a_spark_table(oracle: Any) -> None:
    oracle.sql(
        "CREATE TABLE oracle.smoke.u (id bigint) USING iceberg;"
        "INSERT INTO oracle.smoke.u VALUES (1), (2), (3)"
    )
    table_dir = Path(oracle.warehouse) / "smoke" / "u"
    got = oracle.pyiceberg(table_dir / "metadata" / "v2.metadata.json", inspect=["snapshots"])
    assert sorted(r["id"] for r in got["rows"]) == [1, 2, 3]
    assert len(got["inspect"]["snapshots"]) == 1
    assert got["metadata"]["format-version"] == 2
    assert oracle.duckdb(f"SELECT count(*) AS n FROM iceberg_scan('{table_dir}')") == [{"n": 3}]
