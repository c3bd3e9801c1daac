"""Issue 3 acceptance: 8 processes × 25 appends against one file-system table → exactly 200
new snapshots, every appended row readable."""

import multiprocessing as mp

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.inspect import file_rows
from floe.schema import Schema
from floe.types import LONG, NestedField

WRITERS, APPENDS = 8, 25
SCHEMA = Schema(NestedField(1, "writer", LONG, required=True), NestedField(2, "n", LONG))


def writer(warehouse: str, w: int) -> int:
    table = FileSystemCatalog("fs", warehouse).load_table("db.t")
    retries = 0
    for n in range(APPENDS):
        txn = table.new_transaction().append(
            pa.table({"writer": pa.array([w], pa.int64()), "n": pa.array([n], pa.int64())}))
        txn.commit()
        retries += txn.attempts - 1
    return retries


@pytest.mark.slow
def test_concurrent_appends_from_processes(tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = FileSystemCatalog("fs", warehouse)
    catalog.create_table("db.t", SCHEMA, properties={
        "commit.retry.num-retries": "1000", "commit.retry.min-wait-ms": "1",
        "commit.retry.max-wait-ms": "50", "commit.manifest.min-count-to-merge": "20"})
    ctx = mp.get_context("forkserver")
    with ctx.Pool(WRITERS) as pool:
        retries = pool.starmap(writer, [(warehouse, w) for w in range(WRITERS)])
    table = catalog.load_table("db.t")
    md = table.metadata
    assert len(md.snapshots) == WRITERS * APPENDS
    assert md.last_sequence_number == WRITERS * APPENDS
    assert sorted(s.sequence_number for s in md.snapshots) == list(range(1, 201))
    chain = list(md.ancestors_of(md.current_snapshot_id))
    assert len(chain) == WRITERS * APPENDS  # one linear history, nothing lost
    files = file_rows(table.io, md, md.current_snapshot())
    read = pa.concat_tables(pq.read_table(f["file_path"]) for f in files)
    got = sorted(zip(read.column("writer").to_pylist(), read.column("n").to_pylist()))
    assert got == [(w, n) for w in range(WRITERS) for n in range(APPENDS)]
    assert md.current_snapshot().summary["total-records"] == str(WRITERS * APPENDS)
    assert sum(retries) >= 0
