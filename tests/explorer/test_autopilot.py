"""Policies at work (issue 22, part 3): a tick turns each table a policy finds due into a
normal task run attributed to the policy, inside its window only, once per period, never
while the table has a run or past the global limit; expiry runs its dry run, then the confirm
of exactly that plan, which refuses when a user changed the table meanwhile (the user's change
is kept). Runs execute in this process (Celery's eager mode, or the Celery task function
called inline); the real worker and its beat: tests/explorer/test_autopilot_worker.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from explorer.audit.selectors import entry_words
from explorer.maintenance.autopilot import in_window, policies_tick, policy_follow_up
from explorer.maintenance.metrics import metrics_sweep
from explorer.models import AuditEntry, MaintenancePolicy, TableMetrics, TaskRun
from explorer.tasks.jobs import run_task
from floe.manifest import read_manifest_list
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db

NOON = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "web", "events")  # nine small files in three partitions
    make_table(root, "web.logs", "sessions", appends=3, partition_by="",  # old at once
               properties={"history.expire.max-snapshot-age-ms": "1"})
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    settings.FLOE_TASK_HEARTBEAT_SECONDS = 0
    assert metrics_sweep().recorded == 2
    return root


def _policy(**fields: Any) -> MaintenancePolicy:
    base: dict[str, Any] = {"name": "web-compact", "action": "compact", "catalog": "local",
                            "tables": "web.*", "every_seconds": 3600,
                            "params": {"small_file_ratio": 0.5, "min_input_files": 2},
                            "created_by": None}
    return MaintenancePolicy.objects.create(**{**base, **fields})


def test_a_policy_compacts_the_tables_past_its_threshold_in_its_window_once(
        lake: Path, eager: Any) -> None:
    now = dt.datetime.now(dt.UTC)
    start = now - dt.timedelta(hours=1)
    policy = _policy(window_start=start.strftime("%H:%M"),
                     window_end=(start + dt.timedelta(hours=2)).strftime("%H:%M"))
    assert policies_tick(now=now + dt.timedelta(hours=3)).outside_window == 1
    assert not TaskRun.objects.exists()
    done = eager(lambda: policies_tick(now=now))
    assert done.submitted == 2, done
    runs = list(TaskRun.objects.order_by("id"))
    assert {(r.kind, r.table, r.state, r.policy_id, r.created_via) for r in runs} == {
        ("compact", "events", "SUCCEEDED", policy.pk, "policy"),
        ("compact", "sessions", "SUCCEEDED", policy.pk, "policy")}
    assert load(lake, "web").current_snapshot().summary["total-data-files"] == "3"  # was 9
    entry = AuditEntry.objects.get(task_run_id=runs[0].pk)
    assert (entry.actor_name, entry.actor_via, entry.actor_id) == (
        "policy web-compact", "policy", None)
    assert entry.params["policy"] == "web-compact" and entry.params["policy_tables"] == "web.*"
    assert entry_words(entry) == "policy 'web-compact' on web.* compacted 9 data files into 3"
    # what the policy saw first: why, and the compaction's plan (as the Actions page's preview)
    plan = runs[0].policy_plan
    assert plan["policy"] == "web-compact" and plan["reason"] == "small files 100% > 50%"
    assert len(plan["preview"]["groups"]) == 3  # a group per partition, three files each
    page = Client()
    page.force_login(user_with("vic", "viewer"))
    doc = page.get(f"/tasks/{runs[0].pk}/").content.decode()
    assert "policy <a" in doc and "planned 3 file groups before it ran" in doc
    # the policies page: its last run (when it acted, not when it last looked)
    last = timezone.localtime(max(r.created_at for r in runs))
    assert f"<td>{last:%Y-%m-%d %H:%M:%S}</td></tr>" in page.get("/policies/").content.decode()
    # once per period: a second tick in the same hour does nothing to those tables, even
    # were they still due (as their health is not recorded again here)
    TableMetrics.objects.filter(current=True).update(small_file_ratio=1.0)
    again = eager(lambda: policies_tick(now=dt.datetime.now(dt.UTC)))
    assert (again.not_yet, again.submitted) == (2, 0)
    metrics_sweep()  # the compacted states (the runs recorded them already: nothing new)
    # the next period: the compacted tables are no longer due (their health was recorded)
    TableMetrics.objects.filter(small_file_ratio=1.0, source="task").update(
        small_file_ratio=0.0)  # undo the pretence above: the compacted files are not small
    later = eager(lambda: policies_tick(now=now + dt.timedelta(minutes=61)))
    assert later.submitted == 0 and TaskRun.objects.count() == 2


def _policy_page(run: TaskRun) -> str:
    """The run page's line about the policy, its white space collapsed."""
    page = Client()
    page.force_login(user_with(f"vic{run.pk}", "viewer"))
    doc = page.get(f"/tasks/{run.pk}/").content.decode()
    line = doc[doc.index('id="run-policy"'):]
    return " ".join(line[:line.index("</dd>")].split())


def test_a_manifest_rewrite_records_its_dry_run_as_its_plan(lake: Path, eager: Any) -> None:
    _policy(name="web-manifests", action="rewrite_manifests", params={"manifests": 3})
    assert eager(lambda: policies_tick(now=dt.datetime.now(dt.UTC))).submitted == 2
    for run in TaskRun.objects.order_by("id"):
        assert (run.kind, run.state) == ("rewrite_manifests", "SUCCEEDED")
        preview, result = run.policy_plan["preview"], run.result
        assert run.policy_plan["reason"] == "3 manifests ≥ 3"
        # what it planned is what it did: three manifests of three files each into one
        assert (preview["manifests_before"], preview["manifests_after"]) == (3, 1)
        assert preview["rewritten_manifests"]["count"] == result["rewritten_manifests"]["count"]
        assert preview["added_manifests_count"] == result["added_manifests"]["count"] == 1
        assert preview["entries"] == result["entries"] == (9 if run.table == "events" else 3)
        table = load(lake, run.namespace, run.table)
        manifests = read_manifest_list(table.io, table.current_snapshot().manifest_list)
        assert len(manifests) == preview["manifests_after"]
        assert (f"planned to rewrite 3 manifests into 1 (3 → 1 manifests, "
                f"{preview['entries']} entries) before it ran") in _policy_page(run)


def test_partition_statistics_record_the_snapshot_and_manifests_they_read(
        lake: Path, eager: Any) -> None:
    policy = _policy(name="web-stats", action="compute_partition_stats", tables="web.events")
    now = dt.datetime.now(dt.UTC)
    assert eager(lambda: policies_tick(now=now)).submitted == 1
    (run,) = TaskRun.objects.all()
    preview, result = run.policy_plan["preview"], run.result
    assert (run.state, preview["snapshot_id"]) == ("SUCCEEDED", result["snapshot_id"])
    assert (preview["stats_file_exists"], result["reused"], result["committed"]) == (
        False, False, True)
    assert (preview["manifests"], preview["entries"], preview["incremental_from"]) == (
        3, 9, result["incremental_from"])  # three appends, a file per partition each
    assert (f"planned to read 3 manifests listing 9 files of snapshot {result['snapshot_id']} "
            "before it ran") in _policy_page(run)
    # the next period: the snapshot has its file, so the plan (and the run) do nothing
    TaskRun.objects.filter(policy=policy).update(created_at=now - dt.timedelta(hours=2))
    assert eager(lambda: policies_tick(now=now)).submitted == 1
    again = TaskRun.objects.exclude(pk=run.pk).get()
    assert again.policy_plan["preview"]["stats_file_exists"] and again.result["reused"]
    assert again.policy_plan["preview"]["manifests"] == 0
    assert (f"planned nothing (snapshot {result['snapshot_id']} has partition statistics "
            "already) before it ran") in _policy_page(again)


def test_paused_busy_and_limited_policies_do_nothing_more(lake: Path, settings: Any,
                                                          django_capture_on_commit_callbacks: Any
                                                          ) -> None:
    policy = _policy(paused=True)
    now = dt.datetime.now(dt.UTC)
    assert policies_tick(now=now).policies == 0 and not TaskRun.objects.exists()
    policy.paused = False
    policy.save()
    # a run of the user's is queued on web.events: the policy leaves that table alone
    TaskRun.objects.create(kind="rewrite_manifests", catalog="local", namespace="web",
                           table="events", params={})
    settings.FLOE_POLICY_MAX_RUNS = 1
    with django_capture_on_commit_callbacks(execute=False):  # runs stay queued
        done = policies_tick(now=now)
    assert (done.submitted, done.table_busy) == (1, 1)
    (queued,) = TaskRun.objects.filter(policy=policy)
    assert (queued.table, queued.state) == ("sessions", "QUEUED")
    # the limit: one policy run queued, so another policy submits nothing this period
    make_table(lake, "other", "t", appends=3, partition_by="")  # three manifests
    assert metrics_sweep().recorded == 1
    _policy(name="all-manifests", action="rewrite_manifests", tables="*",
            params={"manifests": 2})
    with django_capture_on_commit_callbacks(execute=False):
        limited = policies_tick(now=now)
    # all-manifests: events and sessions busy, other.t waits for the limit; web-compact:
    # events busy, sessions acted on in this period
    assert (limited.at_limit, limited.table_busy, limited.not_yet) == (1, 3, 1)
    assert TaskRun.objects.filter(policy__isnull=False).count() == 1


def test_expiry_confirms_its_dry_run_and_a_users_commit_in_between_is_kept(
        lake: Path, django_capture_on_commit_callbacks: Any) -> None:
    _policy(name="web-expire", action="expire_snapshots", tables="web.logs.*",
            params={"retain_last": 1})  # due: its snapshots are past the table's max age
    with django_capture_on_commit_callbacks(execute=False):
        assert policies_tick(now=dt.datetime.now(dt.UTC)).submitted == 1
    (dry,) = TaskRun.objects.filter(kind="expire_snapshots_dry_run")
    with django_capture_on_commit_callbacks(execute=False):
        run_task(dry.pk)  # the worker's run; its confirm step is submitted after it
    dry.refresh_from_db()
    assert dry.state == "SUCCEEDED" and dry.result["expired_snapshot_ids"]["count"] == 2
    (confirm,) = TaskRun.objects.filter(source_run=dry)
    assert (confirm.kind, confirm.policy_id, confirm.state) == (
        "expire_snapshots", dry.policy_id, "QUEUED")
    # a user deletes rows before the confirm runs
    table = load(lake, "web.logs", "sessions")
    table.delete_where("id < 10")
    kept = load(lake, "web.logs", "sessions").metadata_location
    run_task(confirm.pk)
    confirm.refresh_from_db()
    assert confirm.state == "FAILED" and "changed since dry run" in confirm.error
    after = load(lake, "web.logs", "sessions")
    assert after.metadata_location == kept  # the user's delete stands, nothing expired
    # a dry run that found nothing to do has no confirm
    dry.result = {**dry.result, "nothing_to_do": True}
    assert policy_follow_up(dry) is None


def test_windows_across_midnight() -> None:
    p = MaintenancePolicy(window_start="22:00", window_end="02:00")
    assert in_window(p, NOON.replace(hour=23)) and in_window(p, NOON.replace(hour=1))
    assert not in_window(p, NOON) and not in_window(p, NOON.replace(hour=2))
    assert in_window(MaintenancePolicy(), NOON)


def test_a_paused_table_is_left_alone(lake: Path, eager: Any) -> None:
    _policy()
    api = client_for(user_with("mia", "maintainer"))
    paused = api.post("/api/policies/pause-table/", {"catalog": "local", "namespace": "web",
                                                     "table": "events"}, format="json")
    assert paused.status_code == 200 and paused.json()["paused"] is True
    plan = {d["table"]: d for d in api.get("/api/policies/preview/").json()}
    assert plan["events"]["due"] is False
    assert plan["events"]["reason"].startswith("policies paused on this table")
    assert eager(lambda: policies_tick()).submitted == 1  # sessions only
    assert list(TaskRun.objects.values_list("table", flat=True)) == ["sessions"]
    assert api.post("/api/policies/resume-table/", {"catalog": "local", "namespace": "web",
                                                    "table": "events"},
                    format="json").json()["paused"] is False
    assert plan and client_for(user_with("vic", "viewer")).post(
        "/api/policies/pause-table/", {"catalog": "local", "namespace": "web",
                                       "table": "events"}, format="json").status_code == 403
    missing = api.post("/api/policies/pause-table/", {"catalog": "local", "namespace": "web",
                                                      "table": "nope"}, format="json")
    assert missing.status_code == 400 and missing.json()["param"] == "table"
