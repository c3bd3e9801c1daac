"""floe's scan planning and reads against Spark + Iceberg Java on the Spark-written tables.

For every snapshot of every table, ``floe`` returns the same multiset of rows as Spark's
``SELECT * ... VERSION AS OF``; branches and tags likewise; filtered scans return the rows
of Spark's ``WHERE``, and ``plan_files`` never prunes a file Spark reads rows from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle_server import _jsonable
from spark_tables import TABLE_NAMES, SparkTable

from floe.catalog.filesystem import load_table_metadata
from floe.io import FileIO
from floe.io.readers import plan_to_table
from floe.scan import plan_files

REPO = Path(__file__).resolve().parents[2]


def _null_structs(value: Any) -> Any:
    """A struct of nulls as null. Iceberg Java fills identity-partition constants into a
    nested struct (``st.a`` of ``nested_v2``) and so returns ``{a: null, b: null}`` where
    the data file holds a null struct; floe returns the file's null. Both mean no value."""
    if isinstance(value, dict):
        inner = {k: _null_structs(v) for k, v in value.items()}
        return None if inner and all(v is None for v in inner.values()) else inner
    if isinstance(value, list):
        return [_null_structs(v) for v in value]
    return value


def _key(row: dict[str, Any]) -> str:
    row = {k: _null_structs(v) for k, v in row.items()}
    return json.dumps(row, sort_keys=True, default=str)


def _multiset(rows: list[dict[str, Any]]) -> Counter[str]:
    return Counter(_key(r) for r in rows)


def _json(value: Any, t: pa.DataType) -> Any:
    """Like the oracle's ``_jsonable``, typed: an empty map is ``{}``, not ``[]``."""
    if value is None:
        return None
    if pa.types.is_map(t):
        items = [(_json(k, t.key_type), _json(v, t.item_type)) for k, v in value]
        if all(isinstance(k, str) for k, _ in items):
            return dict(items)
        return [{"key": k, "value": v} for k, v in items]
    if pa.types.is_struct(t):
        return {f.name: _json(value.get(f.name), f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_json(v, t.value_type) for v in value]
    return _jsonable(value)


def _table_rows(table: pa.Table) -> list[dict[str, Any]]:
    return [{f.name: _json(r[f.name], f.type) for f in table.schema} for r in table.to_pylist()]


def _floe_rows(location: Path, **kw: Any) -> list[dict[str, Any]]:
    io = FileIO()
    _, md = load_table_metadata(io, str(location))
    return _table_rows(plan_to_table(io, plan_files(io, md, **kw)))


@pytest.fixture(scope="module")
def spark_versions(oracle: Any, spark_tables: dict[str, SparkTable]) -> dict[str, Any]:
    """``{table: {snapshot id: rows}}`` for every snapshot, from one batch of Spark queries."""
    io = FileIO()
    keys: list[tuple[str, int]] = []
    statements: list[str] = []
    for name in TABLE_NAMES:
        t = spark_tables[name]
        _, md = load_table_metadata(io, str(t.location))
        for s in md.snapshots:
            keys.append((name, s.snapshot_id))
            statements.append(f"SELECT * FROM {t.ident} VERSION AS OF {s.snapshot_id}")
    results = oracle.sql(statements, all=True)
    out: dict[str, Any] = {}
    for (name, sid), rows in zip(keys, results, strict=True):
        out.setdefault(name, {})[sid] = rows
    return out


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_every_snapshot_matches_spark(
    spark_tables: dict[str, SparkTable], spark_versions: dict[str, Any], name: str
) -> None:
    location = spark_tables[name].location
    for sid, rows in spark_versions[name].items():
        ours = _floe_rows(location, snapshot_id=sid)
        assert _multiset(ours) == _multiset(rows), (name, sid)


def test_current_state_matches_spark(oracle: Any, spark_tables: dict[str, SparkTable]) -> None:
    names = list(TABLE_NAMES)
    results = oracle.sql([f"SELECT * FROM {spark_tables[n].ident}" for n in names], all=True)
    for name, rows in zip(names, results, strict=True):
        assert _multiset(_floe_rows(spark_tables[name].location)) == _multiset(rows), name


@pytest.mark.parametrize("ref", ["first_tag", "dev", "main"])
def test_refs_match_spark(oracle: Any, spark_tables: dict[str, SparkTable], ref: str) -> None:
    t = spark_tables["refs_v2"]
    (rows,) = oracle.sql([f"SELECT * FROM {t.ident} VERSION AS OF '{ref}'"], all=True)
    assert _multiset(_floe_rows(t.location, ref=ref)) == _multiset(rows)


def test_equality_deletes_are_applied(spark_tables: dict[str, SparkTable]) -> None:
    """PyIceberg cannot read equality deletes; floe must (ids 2 and 5 are deleted)."""
    ids = sorted(r["id"] for r in _floe_rows(spark_tables["eqdel_v2"].location))
    assert ids == [1, 3, 4, 6]


def test_cli_scan_writes_json_lines(spark_tables: dict[str, SparkTable]) -> None:
    t = spark_tables["mor_v2"]
    run = subprocess.run(
        [sys.executable, "-m", "floe.cli", "scan", str(t.location), "--columns", "id,v",
         "--output", "-"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(
        r["id"] for r in _floe_rows(t.location))
    assert all(set(r) == {"id", "v"} for r in rows)
