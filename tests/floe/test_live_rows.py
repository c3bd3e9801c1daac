"""floe.live_rows on real tables: the rows a read returns, compared with an actual scan, and
the bounds it gives instead when counting would be too much work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe import stats
from floe.catalog.filesystem import FileSystemCatalog
from floe.scan.readers import plan_to_table
from floe.live_rows import live_rows
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _rows(first: int, n: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": [f"c{i % 4}" for i in ids]})


def _table(root: Path, name: str) -> Any:
    catalog = FileSystemCatalog("c", str(root))
    table = catalog.create_table(f"db.{name}", SCHEMA, spec=parse_partition_by("cat", SCHEMA),
                                 properties={"commit.manifest-merge.enabled": "false"})
    table.append(_rows(0, 40))
    return table.append(_rows(40, 40))


def _scanned(table: Any) -> int:
    return plan_to_table(table.io, plan_files(table.io, table.metadata, cache=None)).num_rows


@pytest.fixture(scope="module")
def equality(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """80 rows in four partitions; a partition-scoped equality delete of cat = 'c1' (one
    delete record, 20 rows) and a position delete of id 0."""
    table = _table(tmp_path_factory.mktemp("wh"), "eq")
    table = table.delete_where("id = 0", mode="merge-on-read")
    return table.delete_equal(["cat"], pa.table({"cat": ["c1"]}))


@pytest.fixture(scope="module")
def positions(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """80 rows, position deletes only (ids below 6)."""
    return _table(tmp_path_factory.mktemp("wh"), "pos").delete_where("id < 6",
                                                                      mode="merge-on-read")


def test_no_delete_files_is_the_summary_and_reads_nothing(tmp_path: Path) -> None:
    table = _table(tmp_path, "plain")
    stats.reset()
    rows = live_rows(table.io, table.metadata, cache=None)
    assert not stats.reads()
    assert (rows.how, rows.count, rows.low, rows.high) == ("summary", 80, 80, 80)
    assert rows.count == _scanned(table)


def test_equality_deletes_are_counted_with_the_deletes_applied(equality: Any) -> None:
    """The summary says 80 records, 1 position and 1 equality delete: 78 would be the old
    estimate; the equality delete removes a whole partition of 20 rows."""
    summary = equality.current_snapshot().summary
    assert (summary["total-records"], summary["total-position-deletes"],
            summary["total-equality-deletes"]) == ("80", "1", "1")
    rows = live_rows(equality.io, equality.metadata, cache=None)
    truth = _scanned(equality)
    assert truth == 59
    assert (rows.how, rows.count, rows.low, rows.high, rows.exact) == (
        "counted", truth, truth, truth, True)
    assert 0 < rows.files_read < len(plan_files(equality.io, equality.metadata).tasks)


def test_too_many_rows_to_read_gives_bounds_that_hold(equality: Any) -> None:
    rows = live_rows(equality.io, equality.metadata, max_rows=10, cache=None)
    assert (rows.how, rows.count, rows.exact) == ("bounds", None, False)
    # an equality delete may remove any number of rows: nothing better than 0 … records
    assert (rows.low, rows.high) == (0, 80)
    assert rows.low <= _scanned(equality) <= rows.high


def test_too_many_files_is_not_even_planned(equality: Any) -> None:
    stats.reset()
    rows = live_rows(equality.io, equality.metadata, max_files=3, cache=None)
    assert (rows.how, rows.low, rows.high) == ("bounds", 0, 80)
    assert not stats.reads().get(stats.MANIFEST)


def test_position_deletes_only_bound_from_below_by_one_row_each(positions: Any) -> None:
    truth = _scanned(positions)
    assert truth == 74
    rows = live_rows(positions.io, positions.metadata, max_rows=0, cache=None)
    assert (rows.how, rows.low, rows.high) == ("bounds", 74, 80)
    counted = live_rows(positions.io, positions.metadata, cache=None)
    assert (counted.how, counted.count) == ("counted", truth)


def test_an_older_snapshot_and_an_empty_table(equality: Any, tmp_path: Path) -> None:
    first = min(equality.metadata.snapshots, key=lambda s: s.sequence_number)
    assert live_rows(equality.io, equality.metadata, first, cache=None).count == 40
    empty = FileSystemCatalog("c", str(tmp_path)).create_table("db.empty", SCHEMA)
    assert live_rows(empty.io, empty.metadata).count == 0
