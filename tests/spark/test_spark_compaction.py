"""Compaction on Spark against the local engine on copies of one table, races with deletes,
progress, cancellation and failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, NotFound
from floe.maintenance import Cancelled, Progress
from floe.maintenance.compaction import compact as local_compact
from floe.maintenance.compaction_plan import plan_compaction
from floe.scan.planning import plan_files
from floe.spark.compaction import compact
from floe.table import Table
from tests.spark.spark_source_tables import (
    EVENTS_SCHEMA,
    build_events,
    events_rows,
    floe_rows,
    table_files,
)


def _small_files(tmp_path: Path, name: str, *, appends: int = 6, partition: str | None = "cat",
                 version: int = 2) -> Table:
    """Many small files, merge-on-read position deletes and equality deletes."""
    from floe.partitioning import parse_partition_by

    cat = FileSystemCatalog("t", str(tmp_path))
    kwargs: dict[str, Any] = {"properties": {"write.delete.mode": "merge-on-read"},
                              "format_version": version}
    if partition:
        kwargs["spec"] = parse_partition_by(partition, EVENTS_SCHEMA)
    table = cat.create_table(f"db.{name}", EVENTS_SCHEMA, **kwargs)
    for k in range(appends):
        table.append(events_rows(k * 20, k * 20 + 20))
    if version == 2:
        table.delete_where("id IN (1, 22, 43, 64)", mode="merge-on-read")
        table.delete_equal(["id"], pa.table({"id": pa.array([2, 50], pa.int64())}))
    return table


CASES = {
    "binpack": {},
    "binpack-unpartitioned": {"partition": None},
    # one group (unpartitioned): the range partitioning over null, NaN and -0.0 keys
    "sort": {"partition": None, "strategy": "sort", "sort_order": "cat desc nulls last, v",
             "options": {"rewrite-all": "true", "target-file-size-bytes": "2000"}},
    "partial-progress": {"options": {"partial-progress.enabled": "true",
                                     "partial-progress.max-commits": "2",
                                     "min-input-files": "2"}},
    "v1": {"version": 1},
}


@pytest.mark.parametrize("case", list(CASES))
def test_spark_and_local_compaction_give_the_same_rows(spark: SparkSession, tmp_path: Path,
                                                       case: str) -> None:
    args = dict(CASES[case])
    build = {k: args.pop(k) for k in ("partition", "version") if k in args}
    # two tables of one warehouse with the same history: same files sizes, same plans
    a = _small_files(tmp_path / "a", "t", **build)
    b = _small_files(tmp_path / "b", "t", **build)
    before = floe_rows(a)
    assert floe_rows(b) == before
    spark_result = compact(a, spark=spark, **args)
    local_result = local_compact(b, **args)
    assert floe_rows(a) == before == floe_rows(b)
    assert spark_result.rewritten_data_files_count == local_result.rewritten_data_files_count
    assert spark_result.rewritten_data_files_count > 0
    assert len(spark_result.groups) == len(local_result.groups)
    snap = a.refresh().current_snapshot()
    assert snap is not None and snap.summary["operation"] == "replace"
    if args.get("strategy") == "sort":
        _assert_sorted(a, args["sort_order"])


def _assert_sorted(table: Table, order: str) -> None:
    """The files written by the sort hold their rows in the order's first field, and their
    ranges follow one another (the range partitioning)."""
    field, *rest = order.split(",")[0].split()
    descending = "desc" in rest
    ranges = []
    for task in plan_files(table.io, table.refresh().metadata).tasks:
        values = [v for v in pq.read_table(task.data_file.file_path).column(field).to_pylist()
                  if v is not None]
        assert values == sorted(values, reverse=descending), task.data_file.file_path
        if values:
            ranges.append((values[0], values[-1]))
    assert len(ranges) > 1
    ranges.sort(reverse=descending)
    for (_, last), (first, _) in zip(ranges, ranges[1:]):
        assert (first <= last) if descending else (first >= last)


def test_binpack_writes_one_file_per_partition_of_small_input(spark: SparkSession,
                                                              tmp_path: Path) -> None:
    table = _small_files(tmp_path, "few")
    compact(table, spark=spark)
    tasks = plan_files(table.io, table.refresh().metadata).tasks
    assert len(tasks) == 4  # a, b, c and the null category
    assert all(not t.delete_files for t in tasks)  # deletes applied into the new files


def test_compaction_racing_a_position_delete_keeps_the_delete(spark: SparkSession,
                                                              tmp_path: Path) -> None:
    table = _small_files(tmp_path, "race")
    plan = plan_compaction(table)
    assert plan.groups
    table.delete_where("id IN (5, 25)", mode="merge-on-read")
    before = floe_rows(table)
    with pytest.raises(CommitConflict, match="compaction"):
        compact(table, plan, spark=spark)
    assert floe_rows(table) == before
    assert not {5, 25} & {r["id"] for r in before}
    # nothing the failed compaction wrote is left
    on_disk = {str(p) for p in Path(table.location, "data").rglob("*.parquet")}
    live = {t.data_file.file_path for s in table.refresh().snapshots()
            for t in plan_files(table.io, table.metadata, snapshot_id=s.snapshot_id).tasks}
    deletes = {d.path for s in table.snapshots()
               for t in plan_files(table.io, table.metadata, snapshot_id=s.snapshot_id).tasks
               for d in t.delete_files}
    assert on_disk <= live | deletes


def test_compaction_racing_an_equality_delete_keeps_the_delete(spark: SparkSession,
                                                               tmp_path: Path) -> None:
    """The new files keep the starting sequence number: a later equality delete still
    applies to them (Java's use-starting-sequence-number)."""
    table = _small_files(tmp_path, "race_eq")
    plan = plan_compaction(table)
    table.delete_equal(["id"], pa.table({"id": pa.array([7, 27], pa.int64())}))
    before = floe_rows(table)
    compact(table, plan, spark=spark)
    assert floe_rows(table) == before
    assert not {7, 27} & {r["id"] for r in floe_rows(table)}


def test_progress_is_reported_per_group(spark: SparkSession, tmp_path: Path) -> None:
    table = _small_files(tmp_path, "progress")
    reports: list[Progress] = []
    result = compact(table, spark=spark, on_progress=reports.append)
    stages = [p.stage for p in reports]
    assert stages[0] == "planning" and "committing" in stages
    rewriting = [p for p in reports if p.stage == "rewriting"]
    assert len(rewriting) == len(result.groups) + 1
    assert [p.done for p in rewriting] == list(range(len(result.groups) + 1))


def test_a_cancelled_compaction_commits_nothing_and_leaves_no_files(spark: SparkSession,
                                                                    tmp_path: Path) -> None:
    table = _small_files(tmp_path, "cancel")
    before = (table.refresh().metadata_location, table_files(table.location))

    def cancel(p: Progress) -> None:
        if p.stage == "rewriting" and p.done == 1:
            raise Cancelled("stop")

    with pytest.raises(Cancelled):
        compact(table, spark=spark, on_progress=cancel)
    assert (table.refresh().metadata_location, table_files(table.location)) == before


def test_a_failed_group_is_one_clear_error_and_leaves_no_files(spark: SparkSession,
                                                               tmp_path: Path) -> None:
    table = _small_files(tmp_path, "broken")
    plan = plan_compaction(table)
    victim = plan.groups[-1].tasks[-1].data_file.file_path
    Path(victim).unlink()
    before = (table.refresh().metadata_location, table_files(table.location))
    with pytest.raises(NotFound, match="does not exist") as info:
        compact(table, plan, spark=spark)
    assert "\n" not in str(info.value)
    assert (table.refresh().metadata_location, table_files(table.location)) == before


def test_the_cli_compacts_on_spark(spark: SparkSession, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``floe compact --engine spark`` (in this process, on the tests' session, which
    floe.spark.session() reuses): the same rows, one replace snapshot; ``--dry-run`` with
    the Spark engine is refused in one line."""
    import json

    from floe.cli import main

    table = _small_files(tmp_path, "cli")
    before = floe_rows(table)
    assert main(["compact", table.location, "--engine", "spark", "--option",
                 "min-input-files=2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rewritten_data_files_count"] > 0
    snap = table.refresh().current_snapshot()
    assert snap is not None and snap.summary["operation"] == "replace"
    assert floe_rows(table) == before
    assert main(["compact", table.location, "--engine", "spark", "--dry-run"]) != 0
    err = capsys.readouterr().err
    assert "--dry-run plans without an engine" in err and len(err.strip().splitlines()) == 1


def test_a_dry_run_starts_no_spark_job(tmp_path: Path) -> None:
    table = _small_files(tmp_path, "dry")
    result = compact(table, dry_run=True, spark=None, master="no-such-master")
    assert result.dry_run and result.groups
    assert table.refresh().current_snapshot().summary["operation"] != "replace"  # type: ignore


def test_compaction_of_a_table_with_history(spark: SparkSession, tmp_path: Path) -> None:
    h = build_events(tmp_path, "history")
    before = floe_rows(h.table)
    dev = floe_rows(h.table, ref="dev")
    compact(h.table, spark=spark, options={"rewrite-all": "true"})
    assert floe_rows(h.table) == before
    assert floe_rows(h.table, ref="dev") == dev
