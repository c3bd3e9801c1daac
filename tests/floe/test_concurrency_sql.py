"""Acceptance: 8 processes × 25 appends against one SQL-catalog table, on SQLite and on
PostgreSQL, half of them PyIceberg ``SqlCatalog`` writers on the same database. Every append
must land exactly once: 200 new snapshots in one chain, every row readable.

The workers are this file run as a script (``python test_concurrency_sql.py KIND ...``), so
each is a fresh process with its own engine and connection pool.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

pytestmark = pytest.mark.slow

WRITERS = 8
APPENDS = 25
ROWS_PER_APPEND = 3
TABLE = "db.events"
#: Enough retries that no floe writer gives up while seven others race it.
RETRY_PROPERTIES = {
    "commit.retry.num-retries": "1000",
    "commit.retry.min-wait-ms": "5",
    "commit.retry.max-wait-ms": "200",
    "commit.retry.total-timeout-ms": "600000",
}


def batch(writer: int, seq: int) -> pa.Table:
    return pa.table({
        "writer": pa.array([writer] * ROWS_PER_APPEND, pa.int64()),
        "seq": pa.array([seq] * ROWS_PER_APPEND, pa.int64()),
        "row": pa.array(range(ROWS_PER_APPEND), pa.int64()),
    })


# -- the worker processes -------------------------------------------------------------------


def floe_worker(uri: str, name: str, warehouse: str, writer: int) -> dict[str, int]:
    from floe.catalog.sql import SqlCatalog

    attempts = 0
    with SqlCatalog(name, uri, warehouse) as catalog:
        table = catalog.load_table(TABLE)
        for seq in range(APPENDS):
            txn = table.new_transaction()
            txn.append(batch(writer, seq))
            txn.commit()  # the commit loop retries conflicts itself
            attempts += txn.attempts
    return {"attempts": attempts}


def pyiceberg_worker(uri: str, name: str, warehouse: str, writer: int) -> dict[str, int]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import CommitFailedException

    catalog = SqlCatalog(name, uri=uri, warehouse=warehouse)
    attempts = 0
    try:
        for seq in range(APPENDS):
            # PyIceberg 0.12 retries conflicts itself under the table's commit.retry.*
            # properties; older versions raise at once, so the caller retries as well.
            while True:
                attempts += 1
                table = catalog.load_table(TABLE)
                try:
                    table.append(batch(writer, seq).cast(table.schema().as_arrow()))
                    break
                except CommitFailedException:
                    time.sleep(random.uniform(0.005, 0.05))
    finally:
        catalog.close()
    return {"attempts": attempts}


def main(argv: list[str]) -> None:
    kind, uri, name, warehouse, writer = argv
    worker = floe_worker if kind == "floe" else pyiceberg_worker
    print(json.dumps(worker(uri, name, warehouse, int(writer))))


# -- the test -------------------------------------------------------------------------------


def test_eight_writers_two_engines_one_table(sql_uri: str, catalog_name: str, tmp_path: Path):
    import pyarrow.parquet as pq

    from floe.catalog.sql import SqlCatalog, parse_metadata_version
    from floe.inspect import file_rows
    from floe.schema import Schema
    from floe.types import LONG, NestedField

    warehouse = str(tmp_path / "warehouse")
    schema = Schema(NestedField(1, "writer", LONG), NestedField(2, "seq", LONG),
                    NestedField(3, "row", LONG))
    with SqlCatalog(catalog_name, sql_uri, warehouse) as catalog:
        catalog.create_namespace("db")
        catalog.create_table(TABLE, schema, properties=RETRY_PROPERTIES)

    kinds = ["floe", "pyiceberg"] * (WRITERS // 2)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, kind, sql_uri, catalog_name, warehouse, str(writer)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for writer, kind in enumerate(kinds)
    ]
    results = []
    for writer, proc in enumerate(procs):
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
        assert proc.returncode == 0, f"writer {writer} ({kinds[writer]}) failed:\n{err[-3000:]}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    elapsed = time.monotonic() - started
    attempts = {k: sum(r["attempts"] for r, kk in zip(results, kinds, strict=True) if kk == k)
                for k in ("floe", "pyiceberg")}
    sys.stderr.write(f"\n[concurrency] {WRITERS}x{APPENDS} appends in {elapsed:.1f} s, "
                     f"attempts {attempts}\n")

    with SqlCatalog(catalog_name, sql_uri, warehouse) as catalog:
        table = catalog.load_table(TABLE)
        md = table.metadata
        total = WRITERS * APPENDS
        assert len(md.snapshots) == total
        chain = list(md.ancestors_of(md.current_snapshot_id))
        assert len(chain) == total  # one linear history: no append was lost or forked
        assert sorted(s.sequence_number for s in md.snapshots) == list(range(1, total + 1))
        assert md.current_snapshot().summary["total-records"] == str(total * ROWS_PER_APPEND)
        assert parse_metadata_version(table.metadata_location) == total

        files = file_rows(table.io, md, md.current_snapshot())
        read = pa.concat_tables(pq.read_table(f["file_path"]) for f in files)
        seen = sorted(zip(*(read.column(c).to_pylist() for c in ("writer", "seq", "row")),
                          strict=True))
        assert seen == [(w, s, r) for w in range(WRITERS) for s in range(APPENDS)
                        for r in range(ROWS_PER_APPEND)]


if __name__ == "__main__":
    main(sys.argv[1:])
