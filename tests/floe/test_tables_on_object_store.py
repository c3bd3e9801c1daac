"""Tables in a bucket, changed and maintained by floe as on a local disk: a file-system catalog
and a SQL catalog with their warehouses on a real S3 server (SeaweedFS, signatures checked)
and in an Azure container (Azurite, Shared Key checked). Appends, a merge-on-read delete,
schema evolution, compaction, expiry and orphan removal (which lists the store), a purging
drop; the rows read back equal what a local table holds after the same changes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.base import Catalog
from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import SqlCatalog
from floe.errors import ValidationError
from floe.io import FileIO
from floe.maintenance.compaction import compact
from floe.maintenance.expire import expire_snapshots
from floe.maintenance.orphans import remove_orphan_files
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField
from tests.object_store import SeaweedFS

pytestmark = pytest.mark.objectstore

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": [f"c{i % 3}" for i in range(start, start + n)]})


#: The stores whose conditional create a file-system catalog commits with, and that check
#: credentials: each test that takes ``store`` runs on both.
STORES = ["seaweedfs", "azurite"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _catalog(kind: str, server: Any, tmp_path: Path) -> Catalog:
    warehouse = server.location(f"{kind}-{uuid.uuid4().hex[:8]}")
    io = FileIO(server.properties())
    if kind == "filesystem":
        return FileSystemCatalog("lake", warehouse, io)
    return SqlCatalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", warehouse, io)


def _ids(table: Any) -> list[int]:
    table.refresh()
    return sorted(plan_to_table(table.io, plan_files(table.io, table.metadata))
                  .column("id").to_pylist())


@pytest.mark.parametrize("kind", ["filesystem", "sql"])
def test_a_table_in_a_bucket_lives_through_every_change(store: Any, tmp_path: Path,
                                                         kind: str) -> None:
    catalog = _catalog(kind, store, tmp_path)
    catalog.create_namespace(("db",))
    assert catalog.list_namespaces() == [("db",)]
    table = catalog.create_table("db.t", SCHEMA, parse_partition_by("cat", SCHEMA),
                                 properties={"write.delete.mode": "merge-on-read"})
    assert table.location.startswith(store.location())
    for k in range(4):
        table.append(_rows(10 * k, 10))
    table.delete_where("id < 5")
    table.update_schema().add_column("note", STRING).commit()
    expected = list(range(5, 40))
    assert _ids(table) == expected
    assert [str(i) for i in catalog.list_tables(("db",))] == ["db.t"]

    result = compact(table, options={"min-input-files": "2"})
    assert result.rewritten_data_files_count > 1 and _ids(table) == expected
    expired = expire_snapshots(table, older_than_ms=table.refresh().metadata.last_updated_ms + 1,
                               retain_last=1)
    assert expired.expired_snapshot_ids and expired.failed == ()
    assert _ids(table) == expected
    # a file nobody references, old enough: found by listing the bucket, then deleted
    stray = f"{table.location}/data/stray.parquet"
    table.io.write(stray, b"junk")
    dry = remove_orphan_files(table, older_than_ms=_later(table), dry_run=True, force=True)
    assert dry.orphan_files == (stray,)
    done = remove_orphan_files(table, older_than_ms=_later(table), force=True)
    assert done.deleted_files == 1 and not table.io.exists(stray)
    assert _ids(table) == expected

    from floe.maintenance.partition_stats import compute_partition_stats

    stats = compute_partition_stats(table)
    assert stats.committed and stats.statistics_file is not None
    assert stats.statistics_file.statistics_path.startswith(table.location + "/")
    assert table.io.info(stats.statistics_file.statistics_path) is not None

    catalog.drop_table("db.t", purge=True)
    assert table.io.list(table.location) == []


def _later(table: Any) -> int:
    """A cutoff after the stray file was written (S3 keeps modification times in seconds)."""
    import time

    time.sleep(1.2)
    return int(time.time() * 1000) - 100


def test_concurrent_writers_to_a_file_system_table_in_a_bucket_lose_nothing(
        store: Any, tmp_path: Path) -> None:
    """Four writers append at once: the conditional create of each version lets exactly one
    writer have it, the others retry on the new state; every row is there once."""
    from concurrent.futures import ThreadPoolExecutor

    catalog = _catalog("filesystem", store, tmp_path)
    catalog.create_namespace(("db",))
    catalog.create_table("db.t", SCHEMA, properties={
        "commit.retry.num-retries": "30", "commit.retry.min-wait-ms": "5",
        "commit.retry.max-wait-ms": "50"})

    def writer(w: int) -> int:
        table = catalog.load_table("db.t")
        attempts = 0
        for k in range(3):
            txn = table.new_transaction().append(_rows(1000 * w + 10 * k, 2))
            txn.commit()
            attempts += txn.attempts
        return attempts

    with ThreadPoolExecutor(4) as pool:
        attempts = list(pool.map(writer, range(4)))
    final = catalog.load_table("db.t")
    assert _ids(final) == sorted(1000 * w + 10 * k + i for w in range(4) for k in range(3)
                                 for i in range(2))
    assert len(final.metadata.snapshots) == 12
    assert sum(attempts) >= 12


def test_a_store_without_create_only_writes_is_read_but_never_committed_to(
        seaweedfs: SeaweedFS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = _catalog("filesystem", seaweedfs, tmp_path)
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(0, 2))
    before = table.io.list(table.location)
    store = table.io.store(table.location)
    monkeypatch.setattr(store, "exclusive_for", lambda location: False)
    with pytest.raises(ValidationError, match="does not refuse a second create"):
        catalog.load_table("db.t").append(_rows(2, 2))
    assert table.io.list(table.location) == before  # nothing written, nothing left
    assert _ids(catalog.load_table("db.t")) == [0, 1]


def _fs_table(server: Any, io: FileIO) -> Any:
    catalog = FileSystemCatalog("lake", server.location(f"faults-{uuid.uuid4().hex[:8]}"), io)
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.t", SCHEMA)
    table.append(_rows(0, 2))
    return catalog, table


def test_a_commit_whose_answer_was_lost_is_committed_once(store: Any) -> None:
    """The store wrote the next metadata file but its answer never came back: the commit
    reads the file back, finds its own bytes, and is done (no retry that would append
    twice)."""
    from tests.faulty_proxy import FaultyProxy

    with FaultyProxy(store.endpoint) as proxy:
        io = FileIO(store.properties(proxy.url))
        catalog, table = _fs_table(store, io)
        proxy.lose_answer(method="PUT", path_contains=".metadata.json")
        txn = table.new_transaction().append(_rows(2, 2))
        txn.commit()
        assert txn.attempts == 1
        assert _ids(catalog.load_table("db.t")) == [0, 1, 2, 3]


def test_a_commit_with_an_unknown_outcome_deletes_nothing_and_a_rerun_finishes(
        store: Any) -> None:
    """The store answered the metadata PUT with 503 (a create-only write is not retried):
    nothing is there to read back, so the outcome is unknown. The table is at its old state,
    every file the attempt wrote is still there, and the next commit goes through."""
    from floe.errors import CommitStateUnknown
    from tests.faulty_proxy import FaultyProxy

    with FaultyProxy(store.endpoint) as proxy:
        io = FileIO(store.properties(proxy.url))
        catalog, table = _fs_table(store, io)
        before = set(io.list(table.location))
        proxy.throttle(1, method="PUT", path_contains=".metadata.json")
        with pytest.raises(CommitStateUnknown, match="may or may not"):
            table.append(_rows(2, 2))
        written = set(io.list(table.location)) - before
        assert any("/data/" in p for p in written) and any(p.endswith(".avro")
                                                            for p in written)
        assert _ids(catalog.load_table("db.t")) == [0, 1]
        catalog.load_table("db.t").append(_rows(4, 2))
        assert _ids(catalog.load_table("db.t")) == [0, 1, 4, 5]
        assert written <= set(io.list(table.location))  # still nothing deleted


def test_a_commit_survives_the_store_restarting_under_it(seaweedfs: SeaweedFS) -> None:
    """Data files written, then the store restarts (its reads answer 500 for a while after):
    the commit's reads retry, and it lands."""
    io = FileIO(seaweedfs.s3_properties())
    catalog, table = _fs_table(seaweedfs, io)
    txn = table.new_transaction().append(_rows(2, 2))  # the data files are written now
    seaweedfs.restart()
    txn.commit()
    assert _ids(catalog.load_table("db.t")) == [0, 1, 2, 3]
