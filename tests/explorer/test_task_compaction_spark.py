"""The compaction task's Spark branch (floe.spark.compaction), tested only where it can be
imported (PySpark and Java): with engine ``auto`` a plan whose input exceeds
FLOE_COMPACTION_SPARK_MIN_BYTES runs on Spark, with the same result as the local engine. Run
in this process (the Celery task function, inline) on the tests' one SparkSession; the worker
transport is covered by the other task tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from explorer.models import AuditEntry, TaskRun
from explorer.tasks import services
from explorer.tasks.jobs import run_task
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from tests.explorer.tasks_support import load, make_table, user_with

pytest.importorskip("floe.spark.compaction")

pytestmark = [pytest.mark.django_db, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark() -> Any:
    from tests.spark.spark_fixtures import spark_session

    return spark_session()  # the one session; the task's floe.spark.session() reuses it


def test_auto_runs_a_big_enough_plan_on_spark(spark: Any, tmp_path: Path, settings: Any
                                              ) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    settings.FLOE_COMPACTION_SPARK_MIN_BYTES = 0  # every plan is "big"
    make_table(tmp_path, "ns", appends=4)
    before = load(tmp_path, "ns")
    expected = plan_to_table(before.io, plan_files(before.io, before.metadata)).sort_by("id")
    preview = services.task_preview(
        kind="compact", params={"namespace": "ns", "table": "events",
                                "options": {"min-input-files": 2}},
        user=user_with("vic", "viewer"), identity="test")
    assert preview["engine"] == "spark" and "exceeds" in preview["engine_reason"]
    run = services.task_submit(kind="compact", params={
        "namespace": "ns", "table": "events", "options": {"min-input-files": 2}},
        user=user_with("mia", "maintainer"))
    run_task(run.pk)
    run = TaskRun.objects.get(pk=run.pk)
    assert run.state == "SUCCEEDED", run.error
    assert (run.result["engine"], run.result["rewritten_data_files_count"]) == ("spark", 12)
    after = load(tmp_path, "ns")
    assert len(plan_files(after.io, after.metadata).tasks) == 3
    assert plan_to_table(after.io, plan_files(after.io, after.metadata)).sort_by("id").equals(
        expected)
    assert AuditEntry.objects.get(task_run_id=run.pk).snapshot_after == \
        after.current_snapshot().snapshot_id  # type: ignore[union-attr]
