"""Maintenance policies on the real worker with its beat (issue 22): the worker's sweep
records a new table's health, its policy tick finds the table past a policy's threshold and
compacts it, once, its plan recorded first, attributed to the policy in the audit trail; a
second policy on the same table never runs beside the first; a paused policy does nothing."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from explorer.models import AuditEntry, MaintenancePolicy, TableMetrics, TaskRun
from tests.explorer.tasks_support import Worker, load, make_table, unique, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_policy_compacts_a_table_on_the_workers_beat(on_worker: Worker) -> None:
    ns = unique("autopilot")
    make_table(on_worker.warehouse, ns)  # nine small files in three partitions
    make_table(on_worker.warehouse, ns + "_paused")
    window = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    MaintenancePolicy.objects.create(
        name=f"{ns}-compact", action="compact", catalog="local", tables=f"{ns}.*",
        params={"small_file_ratio": 0.5, "min_input_files": 2}, every_seconds=3600,
        window_start=window.strftime("%H:%M"),
        window_end=(window + dt.timedelta(hours=3)).strftime("%H:%M"))
    MaintenancePolicy.objects.create(  # due on its schedule: every tick finds it due
        name=f"{ns}-orphans", action="remove_orphan_files", catalog="local",
        tables=f"{ns}.*", params={"older_than_days": 1}, every_seconds=3600)
    MaintenancePolicy.objects.create(
        name=f"{ns}-paused", action="compact", catalog="local", tables=f"{ns}_paused.*",
        params={"small_file_ratio": 0.5, "min_input_files": 2}, paused=True)
    pilot = on_worker.variant("autopilot", FLOE_POLICY_TICK_SECONDS="1",
                              FLOE_METRICS_SWEEP_SECONDS="1")
    pilot.start(beat=True, concurrency=1, name="pilot")
    try:
        run = wait_for(lambda: TaskRun.objects.filter(
            namespace=ns, policy__name=f"{ns}-compact", state="SUCCEEDED").first(), 120,
            "the policy's compaction", interval=0.5, on_timeout=pilot.log_tail)
        other = wait_for(lambda: TaskRun.objects.filter(
            namespace=ns, policy__name=f"{ns}-orphans", state__in=(
                "SUCCEEDED", "FAILED")).first(), 120, "the other policy's dry run",
            interval=0.5, on_timeout=pilot.log_tail)
        time.sleep(3)  # three more ticks: the policies acted for their period already
    finally:
        pilot.stop()
    runs = list(TaskRun.objects.filter(namespace=ns).order_by("started_at"))
    # the compaction, and the orphan removal's dry run (no orphans: no confirm step)
    assert sorted((r.policy.name, r.kind) for r in runs) == [
        (f"{ns}-compact", "compact"), (f"{ns}-orphans", "remove_orphan_files_dry_run")]
    assert other.state == "SUCCEEDED" and other.result["nothing_to_do"], other.error
    first, second = runs
    assert first.finished_at <= second.started_at  # never at once on one table
    assert run.policy_plan["reason"] == "small files 100% > 50%"
    assert len(run.policy_plan["preview"]["groups"]) == 3  # planned before it ran
    assert load(on_worker.warehouse, ns).current_snapshot().summary["total-data-files"] == "3"
    entry = AuditEntry.objects.get(task_run_id=run.pk)
    assert (entry.action, entry.actor_name, entry.actor_via, entry.outcome) == (
        "compact", f"policy {ns}-compact", "policy", "succeeded")
    assert TableMetrics.objects.filter(namespace=ns, current=True, source="task").exists()
    assert not TaskRun.objects.filter(namespace=ns + "_paused").exists()  # paused
