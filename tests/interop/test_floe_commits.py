"""Tables changed by floe's commit machinery (merge append, overwrite and delete by file,
retried commits) read identically by Spark + Iceberg Java and PyIceberg."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.inspect import file_rows
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.table.writer import write_data_files
from floe.types import LONG, STRING, NestedField

pytestmark = pytest.mark.interop

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "s", STRING))


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i % 3}" for i in ids]})


def _build(root: Path) -> dict[str, set[int]]:
    catalog = FileSystemCatalog("floe", str(root))
    expected: dict[str, set[int]] = {}
    for version in (1, 2):
        for partitioned in (False, True):
            name = f"t{'p' if partitioned else 'u'}_v{version}"
            spec = parse_partition_by("identity(s)", SCHEMA) if partitioned else None
            kw: dict[str, Any] = {"spec": spec} if spec is not None else {}
            t = catalog.create_table(f"db.{name}", SCHEMA, format_version=version, properties={
                "commit.manifest.min-count-to-merge": "3"}, **kw)
            ids: set[int] = set()
            for batch in ((1, 2, 3), (4, 5), (6,), (7, 8, 9)):  # merges from the third append
                t.append(rows(*batch))
                ids |= set(batch)
            files = file_rows(t.io, t.metadata, t.current_snapshot())
            victim = next(f for f in files if f["record_count"] >= 1)
            stale = catalog.load_table(f"db.{name}")
            replacement = write_data_files(t.io, t.metadata, rows(100, 101))
            t.new_transaction().overwrite([victim["file_path"]], replacement).commit()
            gone = _ids_in(victim["file_path"])
            ids = (ids - gone) | {100, 101}
            stale.append(rows(200))  # a Table object loaded before the overwrite: rebased
            ids |= {200}
            files = file_rows(t.io, t.refresh().metadata, t.current_snapshot())
            second = next(f for f in files if 200 not in _ids_in(f["file_path"]))
            t.delete_files([second["file_path"]])
            ids -= _ids_in(second["file_path"])
            expected[name] = ids
    return expected


def _ids_in(path: str) -> set[int]:
    import pyarrow.parquet as pq

    return set(pq.read_table(path).column("id").to_pylist())


@pytest.fixture(scope="module")
def committed(oracle: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("floe-commits")
    expected = _build(root)
    oracle.add_catalog("floecommits", root)
    return root, expected


NAMES = [f"t{k}_v{v}" for v in (1, 2) for k in ("u", "p")]


@pytest.mark.parametrize("name", NAMES)
def test_spark_reads_committed_tables(oracle: Any, committed: Any, name: str) -> None:
    _, expected = committed
    (result,) = oracle.sql([f"SELECT id, s FROM floecommits.db.{name}"], all=True)
    got = Counter(r["id"] for r in result)
    assert got == Counter(expected[name])


@pytest.mark.parametrize("name", NAMES)
def test_pyiceberg_reads_committed_tables(oracle: Any, committed: Any, name: str) -> None:
    root, expected = committed
    table = FileSystemCatalog("floe", str(root)).load_table(f"db.{name}")
    result = oracle.pyiceberg(table.metadata_location)
    assert Counter(r["id"] for r in result["rows"]) == Counter(expected[name])


@pytest.mark.parametrize("name", NAMES)
def test_spark_snapshot_summaries_match(oracle: Any, committed: Any, name: str) -> None:
    root, _ = committed
    table = FileSystemCatalog("floe", str(root)).load_table(f"db.{name}")
    (snaps,) = oracle.sql(
        [f"SELECT snapshot_id, operation FROM floecommits.db.{name}.snapshots"], all=True)
    assert {(s["snapshot_id"], s["operation"]) for s in snaps} == {
        (s.snapshot_id, s.summary["operation"]) for s in table.snapshots()}
    assert [s.summary["operation"] for s in table.snapshots()][-3:] == [
        "overwrite", "append", "delete"]
