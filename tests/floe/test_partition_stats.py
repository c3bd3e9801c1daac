"""Partition stats of a snapshot equal what the files metadata table says, per partition."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import directory_table
from floe.inspect import file_rows
from floe.io import FileIO
from floe.manifest import DataFile, FileContent
from floe.partition_stats import SIZE_BUCKETS, partition_stats, size_histogram
from floe.partitioning import parse_partition_by
from floe.scan import ManifestCache
from floe.schema import Schema
from floe.table.append import append, create_table
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "region", STRING))


def _rows(ids: range, region: str | None) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "region": pa.array([region] * len(ids), pa.string())})


@pytest.fixture
def table(tmp_path: Path) -> str:
    io = FileIO()
    location = str(tmp_path / "t")
    create_table(io, location, SCHEMA, spec=parse_partition_by("region", SCHEMA))
    append(io, location, _rows(range(0, 10), "emea"))
    append(io, location, _rows(range(10, 15), "apac"))
    append(io, location, _rows(range(15, 45), "emea"))
    append(io, location, _rows(range(45, 47), None))
    return location


def _add_position_delete(location: str, region: str) -> None:
    t = directory_table(location)
    target = next(r["file_path"] for r in file_rows(t.io, t.metadata, t.metadata.current_snapshot())
                  if r["partition"].get("region") == region)
    path = f"{location}/data/pos-delete-{region}.parquet"
    pq.write_table(pa.table({"file_path": [target], "pos": pa.array([0], pa.int64())}), path)
    df = DataFile(FileContent.POSITION_DELETES, path, "PARQUET", (region,), 1,
                  Path(path).stat().st_size)
    t.new_transaction().append_files([df]).commit()


def test_counts_per_partition_match_the_files_table(table: str) -> None:
    t = directory_table(table)
    stats = partition_stats(t.io, t.metadata, cache=ManifestCache())
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in file_rows(t.io, t.metadata, t.metadata.current_snapshot()):
        key = f"region={row['partition']['region'] if row['partition']['region'] is not None else 'null'}"
        expected[key][0] += row["record_count"]
        expected[key][1] += 1
        expected[key][2] += row["file_size_in_bytes"]
    got = {p.label: [p.record_count, p.file_count, p.total_size] for p in stats.partitions}
    assert got == dict(expected)
    assert got["region=emea"][0] == 40 and got["region=emea"][1] == 2
    assert got["region=null"][0] == 2
    assert stats.totals()["record_count"] == 47 and stats.totals()["partitions"] == 3


def test_delete_files_are_counted_in_their_partition(table: str) -> None:
    _add_position_delete(table, "apac")
    t = directory_table(table)
    stats = partition_stats(t.io, t.metadata, cache=ManifestCache())
    apac = stats.find("region=apac")
    assert apac is not None and apac.delete_file_count == 1 and apac.delete_record_count == 1
    assert apac.file_count == 1 and apac.record_count == 5  # deletes are not data files
    assert stats.find("region=emea").delete_file_count == 0  # type: ignore[union-attr]


def test_an_older_snapshot_and_the_manifest_cache(table: str) -> None:
    t = directory_table(table)
    first = sorted(t.metadata.snapshots, key=lambda s: s.sequence_number)[0]
    cache = ManifestCache()
    stats = partition_stats(t.io, t.metadata, first.snapshot_id, cache=cache)
    assert [(p.label, p.record_count) for p in stats.partitions] == [("region=emea", 10)]
    misses = cache.misses
    partition_stats(t.io, t.metadata, first.snapshot_id, cache=cache)
    assert cache.misses == misses and cache.hits >= 1  # decoded manifests reused by path


def test_skew_and_an_empty_table(tmp_path: Path, table: str) -> None:
    t = directory_table(table)
    skew = partition_stats(t.io, t.metadata, cache=ManifestCache()).skew()
    assert skew["largest"] == "region=emea"
    assert skew["ratio"] is not None and skew["ratio"] > 1
    io = FileIO()
    create_table(io, str(tmp_path / "empty"), SCHEMA)
    e = directory_table(str(tmp_path / "empty"))
    empty = partition_stats(e.io, e.metadata)
    assert empty.partitions == [] and empty.skew()["ratio"] is None


@pytest.mark.parametrize(("sizes", "bucket", "count"), [
    ([0, 1, 4095], 0, 3),
    ([4096], 1, 1),
    ([SIZE_BUCKETS[-1] * 8], len(SIZE_BUCKETS), 1),
])
def test_size_histogram_buckets(sizes: list[int], bucket: int, count: int) -> None:
    hist = size_histogram(sizes)
    assert len(hist) == len(SIZE_BUCKETS) + 1
    assert hist[bucket]["count"] == count and sum(h["count"] for h in hist) == len(sizes)
    assert hist[-1]["upper"] is None
