"""The demo pipeline's steps, run in this session's Spark (the subprocess run of
``pipeline/events.py`` and the Java reader's check of its table are in
tests/interop/test_spark_source_interop.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from floe.catalog.filesystem import FileSystemCatalog
from floe.manifest import FileContent
from floe.scan.planning import plan_files
from floe.spark.pipeline import NAMESPACE, TABLE, run_pipeline
from tests.spark.spark_source_tables import floe_rows


def test_the_pipeline_runs_every_step(spark: SparkSession, tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_pipeline(spark, str(tmp_path), batches=2, rows_per_batch=500,
                          say=lines.append)
    table = FileSystemCatalog("local", str(tmp_path)).load_table(f"{NAMESPACE}.{TABLE}")
    rows = floe_rows(table)
    # 2 batches of 500 (bots deleted), then 500 without bots
    assert len(rows) == result.rows == 400 + 400 + 400
    assert "bot" not in result.rows_by_kind
    assert {r["device"] for r in rows[-400:]} | {r["device"] for r in rows} >= {"ios", None}
    md = table.metadata
    assert [f.name for f in md.schema().fields][-1] == "device"
    assert [str(f.transform) for f in md.spec().fields] == ["day", "bucket[8]"]
    tasks = plan_files(table.io, md).tasks
    assert all(t.spec_id == md.default_spec_id for t in tasks)  # compacted into the new spec
    assert not any(d.content == FileContent.POSITION_DELETES for t in tasks
                   for d in t.delete_files)
    assert result.compaction["rewritten"] > 0
    assert [label for label, _ in result.snapshots] == [
        "append 1", "append 2", "delete bots", "append with devices", "compaction"]
    assert result.expired == 4 and len(table.snapshots()) == 1
    assert len(lines) == 10 and "expired 4 snapshots" in lines[-1]


def test_a_second_run_starts_over(spark: SparkSession, tmp_path: Path) -> None:
    first: Any = run_pipeline(spark, str(tmp_path), batches=1, rows_per_batch=100,
                              say=lambda _: None)
    second = run_pipeline(spark, str(tmp_path), batches=1, rows_per_batch=100,
                          say=lambda _: None)
    assert second.rows == first.rows
    table = FileSystemCatalog("local", str(tmp_path)).load_table(f"{NAMESPACE}.{TABLE}")
    assert {sid for _, sid in first.snapshots}.isdisjoint(s.snapshot_id
                                                          for s in table.snapshots())
