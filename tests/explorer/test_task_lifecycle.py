"""The life of a task run on a real worker: queued → running (heartbeat, progress from the
core's callbacks) → succeeded / failed / cancelled; cancel while queued and while running; a
worker killed mid-compaction is reaped and a retry works; retries on commit conflicts only;
the reaper and exports' expiry. The SQLite broker and, where Redis runs, Redis."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from explorer.models import AuditEntry, TaskRun
from explorer.tasks import lifecycle
from explorer.tasks.kinds import KINDS
from explorer.tasks.runtime import RunContext, execute
from floe.errors import CommitConflict
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from tests.explorer.conftest import point_celery_at
from tests.explorer.tasks_support import (
    Worker,
    client_for,
    finished,
    load,
    make_table,
    unique,
    user_with,
    wait_for,
)

BIG_NS = unique("lifecycle_big")


@pytest.fixture(scope="session")
def big(worker_warehouse: Path) -> str:
    """A table of 1,600 small files (800,000 rows): reading or rewriting it takes seconds."""
    make_table(worker_warehouse / "warehouse", BIG_NS, appends=4, rows_per_append=200_000,
               partition_by="bucket(400, id)")
    return BIG_NS


def submit(client: APIClient, kind: str, ns: str, **params: Any) -> int:
    response = client.post("/api/tasks/", {"kind": kind, "params": {
        "namespace": ns, "table": "events", **params}}, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def poll(run_id: int) -> dict[str, Any]:
    run = TaskRun.objects.get(pk=run_id)
    return {"state": run.state, "stage": run.stage, "done": run.progress_done,
            "total": run.progress_total, "progress": run.progress, "beat": run.heartbeat_at}


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_queued_running_succeeded_with_heartbeat_and_progress(on_any_worker: Worker, big: str
                                                              ) -> None:
    client = client_for(user_with("mia", "maintainer"))
    run_id = submit(client, "export", big, format="csv")
    seen: list[dict[str, Any]] = []

    def done() -> bool:
        seen.append(poll(run_id))
        return seen[-1]["state"] in ("SUCCEEDED", "FAILED", "CANCELLED")

    wait_for(done, 120, "the export", interval=0.05, on_timeout=on_any_worker.log_tail)
    run = TaskRun.objects.get(pk=run_id)
    assert run.state == "SUCCEEDED", (run.error, on_any_worker.log_tail())
    running = [s for s in seen if s["state"] == "RUNNING"]
    assert running, "the run was never seen running"
    assert len({s["beat"] for s in running}) >= 2, "the heartbeat did not advance"
    exporting = [s for s in running if s["stage"] == "exporting" and s["done"]]
    assert exporting and exporting[-1]["total"] >= exporting[-1]["done"]
    assert all(s["progress"] < 100 for s in running)
    assert (run.progress, run.result["rows"]) == (100, 800_000)
    assert run.started_at and run.finished_at and run.created_at <= run.started_at


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_cancel_mid_export_leaves_no_partial_file(on_any_worker: Worker, big: str) -> None:
    client = client_for(user_with("mia", "maintainer"))
    run_id = submit(client, "export", big, format="csv")
    folder = on_any_worker.export_dir / str(run_id)
    wait_for(lambda: folder.is_dir() and any(p.suffix == ".part" for p in folder.iterdir()),
             60, "the export to start writing", interval=0.02,
             on_timeout=on_any_worker.log_tail)
    response = client.post(f"/api/tasks/{run_id}/cancel/")
    assert response.status_code == 200 and response.json()["cancel_requested"]
    run = finished(run_id, worker=on_any_worker)
    assert run.state == "CANCELLED", (run.state, run.error)
    assert run.cancelled_by.username == "mia"  # type: ignore[union-attr]
    assert not folder.exists()
    assert client.post(f"/api/tasks/{run_id}/cancel/").status_code == 200  # again: no-op
    assert not AuditEntry.objects.filter(task_run_id=run_id).exists()  # exports change nothing


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_queued_task_cancelled_before_it_starts_never_runs(on_worker: Worker) -> None:
    ns = unique("queued")
    make_table(on_worker.warehouse, ns)
    before = load(on_worker.warehouse, ns)
    client = client_for(user_with("mia", "maintainer"))
    idle = on_worker.variant("idle")  # nobody consumes its queue yet
    point_celery_at(idle.broker_url, idle.queue)
    run_id = submit(client, "rollback", ns, snapshot_id=before.snapshots()[0].snapshot_id)
    assert TaskRun.objects.get(pk=run_id).state == "QUEUED"
    response = client.post(f"/api/tasks/{run_id}/cancel/")
    assert response.json()["state"] == "CANCELLED"
    idle.start(beat=False, concurrency=1, name="idle")
    try:
        response = client.post("/api/tasks/", {"kind": "refresh_table_stats", "params": {
            "namespace": ns}}, format="json")  # queued behind the cancelled one
        assert finished(response.json()["id"], worker=idle).state == "SUCCEEDED"
    finally:
        idle.stop()
        point_celery_at(on_worker.broker_url, on_worker.queue)
    run = TaskRun.objects.get(pk=run_id)
    assert (run.state, run.started_at, run.error) == ("CANCELLED", None,
                                                       "cancelled before it started")
    assert load(on_worker.warehouse, ns).metadata_location == before.metadata_location


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_worker_killed_mid_compaction_is_reaped_and_a_retry_works(on_worker: Worker) -> None:
    ns = unique("killed")
    # big enough that the worker is seen mid-rewrite (heartbeats every 0.3 s): with two
    # appends the compaction could finish in about a second, before a rewriting heartbeat
    make_table(on_worker.warehouse, ns, appends=5, rows_per_append=200_000,
               partition_by="bucket(400, id)")
    before = load(on_worker.warehouse, ns)
    plan_before = plan_files(before.io, before.metadata)
    rows_before = plan_to_table(before.io, plan_before).num_rows
    client = client_for(user_with("mia", "maintainer"))
    doomed = on_worker.variant("doomed").start(beat=False, concurrency=1, name="doomed")
    point_celery_at(doomed.broker_url, doomed.queue)
    try:
        run_id = submit(client, "compact", ns, options={"min-input-files": 2})
        wait_for(lambda: poll(run_id)["stage"] in ("rewriting", "writing")
                 and poll(run_id)["done"] > 0, 60, "the compaction to rewrite",
                 interval=0.05, on_timeout=doomed.log_tail)
        doomed.kill()
    finally:
        doomed.kill()
        point_celery_at(on_worker.broker_url, on_worker.queue)
    # the session worker's beat runs the reaper every second; heartbeats time out after 4 s
    run = finished(run_id, timeout=60, worker=on_worker)
    assert run.state == "FAILED" and "the worker stopped" in run.error, run.error
    table = load(on_worker.warehouse, ns)
    assert table.metadata_location == before.metadata_location  # one commit, never reached
    assert plan_to_table(table.io, plan_files(table.io, table.metadata)).num_rows == rows_before
    entry = AuditEntry.objects.get(task_run_id=run_id)
    assert (entry.outcome, entry.actor_name, entry.actor_via) == ("failed", "mia", "system")
    retry = client.post(f"/api/tasks/{run_id}/retry/")
    assert retry.status_code == 201
    again = finished(retry.json()["id"], timeout=120, worker=on_worker)
    assert again.state == "SUCCEEDED", again.error
    assert again.result["rewritten_data_files_count"] == len(plan_before.tasks) == 2000
    compacted = load(on_worker.warehouse, ns)
    assert len(plan_files(compacted.io, compacted.metadata).tasks) == 400
    assert plan_to_table(compacted.io, plan_files(compacted.io, compacted.metadata)).num_rows \
        == rows_before


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_soft_time_limit_fails_the_run_and_removes_the_partial_export(
        on_worker: Worker, big: str, settings: Any) -> None:
    # The limits travel in the message, from the submitting process's settings. The soft
    # one is checked at every progress report (Celery's own timer looks once a second), so
    # an export reporting throughout stops at its first report past it.
    settings.CELERY_TASK_SOFT_TIME_LIMIT, settings.CELERY_TASK_TIME_LIMIT = 0.2, 30
    client = client_for(user_with("mia", "maintainer"))
    run_id = submit(client, "export", big, format="csv")
    run = finished(run_id, worker=on_worker)
    assert run.state == "FAILED" and "soft time limit" in run.error, run.error
    assert not (on_worker.export_dir / str(run_id)).exists()


# --- in-process: retries, the reaper, export expiry ---------------------------------------------


def _conflicting(times: int, calls: list[int]) -> Any:
    def runner(ctx: RunContext) -> dict[str, Any]:
        calls.append(1)
        if len(calls) <= times:
            raise CommitConflict("a concurrent commit won")
        return {"ok": True}
    return lambda kind: runner


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "conflicts", "state", "calls"), [
    ("compact", 2, "SUCCEEDED", 3),        # retried up to FLOE_TASK_CONFLICT_RETRIES (2)
    ("compact", 3, "FAILED", 3),           # bounded
    ("rollback", 1, "FAILED", 1),          # a rollback never runs again over a new commit
])
def test_commit_conflicts_are_retried_for_kinds_that_plan_afresh_only(
        tmp_path: Path, settings: Any, kind: str, conflicts: int, state: str, calls: int) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "retry")
    run = TaskRun.objects.create(kind=kind, catalog="local", namespace="retry", table="events",
                                 params={"namespace": "retry", "table": "events"})
    made: list[int] = []
    execute(run.pk, threaded=False, runner_for=_conflicting(conflicts, made))
    run.refresh_from_db()
    assert (run.state, len(made), run.attempts) == (state, calls, calls)
    assert AuditEntry.objects.filter(task_run_id=run.pk).count() == calls  # one per attempt
    if state == "FAILED":
        assert run.error.startswith("CommitConflict: ")


@pytest.mark.django_db
def test_other_errors_are_not_retried(tmp_path: Path, settings: Any) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "boom")
    run = TaskRun.objects.create(kind="compact", catalog="local", namespace="boom",
                                 table="events", params={})
    calls: list[int] = []

    def broken(ctx: RunContext) -> dict[str, Any]:
        calls.append(1)
        raise ValueError("disk on fire")

    execute(run.pk, threaded=False, runner_for=lambda kind: broken)
    run.refresh_from_db()
    assert (run.state, run.error, len(calls)) == ("FAILED", "ValueError: disk on fire", 1)


@pytest.mark.django_db
def test_the_reaper_fails_stale_runs_only(tmp_path: Path, settings: Any) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "reap")
    now = timezone.now()
    stale = TaskRun.objects.create(
        kind="compact", catalog="local", namespace="reap", table="events", state="RUNNING",
        started_at=now - dt.timedelta(minutes=5), heartbeat_at=now - dt.timedelta(minutes=2))
    alive = TaskRun.objects.create(kind="compact", catalog="local", namespace="reap",
                                   table="events", state="RUNNING", started_at=now,
                                   heartbeat_at=now)
    queued = TaskRun.objects.create(kind="compact", catalog="local", namespace="reap",
                                    table="events")
    assert lifecycle.task_runs_reap(now=now)["failed_runs"] == 1
    assert lifecycle.task_runs_reap(now=now)["failed_runs"] == 0  # idempotent
    states = {r.pk: r.state for r in TaskRun.objects.all()}
    assert states == {stale.pk: "FAILED", alive.pk: "RUNNING", queued.pk: "QUEUED"}
    entry = AuditEntry.objects.get(task_run_id=stale.pk)
    assert entry.outcome == "failed" and entry.actor_via == "system"
    assert entry.metadata_after == load(tmp_path, "reap").metadata_location


@pytest.mark.django_db(transaction=True)
def test_an_outcome_written_twice_is_audited_once(tmp_path: Path, settings: Any) -> None:
    """The finish is written again when its answer was lost (the database dropped the
    connection after committing it): the second write finds it done and adds nothing; a run
    the reaper failed meanwhile still gets the entry of how it really ended."""
    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "twice")
    now = timezone.now()
    run = TaskRun.objects.create(kind="compact", catalog="local", namespace="twice",
                                 table="events", state="RUNNING", started_at=now,
                                 heartbeat_at=now)
    result = {"rewritten_files": 9, "added_files": 3}
    for _ in range(2):
        lifecycle.task_run_finish(task_run_id=run.pk, state="SUCCEEDED", result=result)
    assert list(AuditEntry.objects.filter(task_run_id=run.pk).values_list("outcome", flat=True)
                ) == ["succeeded"]
    reaped = TaskRun.objects.create(kind="compact", catalog="local", namespace="twice",
                                    table="events", state="FAILED", error="the worker stopped",
                                    started_at=now, heartbeat_at=now)
    lifecycle.task_run_finish(task_run_id=reaped.pk, state="SUCCEEDED", result=result)
    assert AuditEntry.objects.get(task_run_id=reaped.pk).outcome == "succeeded"


@pytest.mark.django_db
def test_the_reaper_sends_a_queued_run_again_and_it_runs_once(
        tmp_path: Path, settings: Any, eager: Any) -> None:
    """A run whose message the broker lost stays QUEUED: the reaper sends it again after
    FLOE_TASK_REQUEUE_SECONDS, once per period; a second message for it runs nothing."""
    from explorer.tasks import jobs

    settings.FLOE_WAREHOUSE = str(tmp_path)
    settings.FLOE_TASK_REQUEUE_SECONDS = 300
    make_table(tmp_path, "resend")
    now = timezone.now()
    lost = TaskRun.objects.create(kind="tag_create", catalog="local", namespace="resend",
                                  table="events", params={"name": "v1"},
                                  sent_at=now - dt.timedelta(seconds=301))
    recent = TaskRun.objects.create(kind="tag_create", catalog="local", namespace="resend",
                                    table="events", params={"name": "v2"},
                                    sent_at=now - dt.timedelta(seconds=10))

    done = eager(lambda: lifecycle.task_runs_reap(now=now))
    assert done["resent_runs"] == 1
    lost.refresh_from_db()
    recent.refresh_from_db()
    assert (lost.state, lost.attempts, recent.state) == ("SUCCEEDED", 1, "QUEUED")
    assert lost.sent_at is not None and lost.sent_at >= now
    # sent twice more: the message the broker kept after all, and another reaper's
    eager(lambda: jobs.run_task.apply_async((lost.pk,)))
    eager(lambda: lifecycle.task_runs_reap(now=now + dt.timedelta(hours=1)))
    lost.refresh_from_db()
    assert (lost.state, lost.attempts) == ("SUCCEEDED", 1)
    assert [e.outcome for e in AuditEntry.objects.filter(task_run_id=lost.pk)] == ["succeeded"]
    assert "v1" in load(tmp_path, "resend").metadata.refs


@pytest.mark.django_db
def test_the_reaper_removes_expired_and_abandoned_exports(tmp_path: Path, settings: Any) -> None:
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    settings.FLOE_EXPORT_MAX_AGE = 3600
    now = timezone.now()

    def export(state: str, finished_ago: float | None) -> TaskRun:
        run = TaskRun.objects.create(
            kind="export", catalog="local", state=state,
            finished_at=None if finished_ago is None
            else now - dt.timedelta(seconds=finished_ago))
        folder = settings.FLOE_EXPORT_DIR / str(run.pk)
        folder.mkdir(parents=True)
        (folder / "t.parquet").write_bytes(b"x")
        TaskRun.objects.filter(pk=run.pk).update(artifact=f"{run.pk}/t.parquet")
        return run

    fresh, old = export("SUCCEEDED", 60), export("SUCCEEDED", 7200)
    failed, running = export("FAILED", 5), export("RUNNING", None)
    stray = settings.FLOE_EXPORT_DIR / "999999"
    stray.mkdir()
    assert lifecycle.task_runs_reap(now=now)["removed_exports"] == 3
    left = sorted(int(p.name) for p in settings.FLOE_EXPORT_DIR.iterdir())
    assert left == sorted([fresh.pk, running.pk])
    old.refresh_from_db()
    failed.refresh_from_db()
    fresh.refresh_from_db()
    assert (old.artifact, failed.artifact) == ("", "") and fresh.artifact


@pytest.mark.django_db
def test_the_cancel_guard_stops_a_change_right_before_its_commit(tmp_path: Path,
                                                                 settings: Any) -> None:
    """Operations without progress reports: the cancel is read right before the commit and
    nothing is committed (the files a delete wrote are removed)."""
    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "guard")
    before = load(tmp_path, "guard")
    files_before = set(_files(tmp_path))
    run = TaskRun.objects.create(kind="delete_rows", catalog="local", namespace="guard",
                                 table="events",
                                 params={"filter": "id < 50", "mode": None, "branch": "main"})

    def cancel_then_delete(ctx: RunContext) -> dict[str, Any]:
        TaskRun.objects.filter(pk=ctx.run_id).update(cancel_requested_at=timezone.now())
        return KINDS["delete_rows"].runner(ctx)

    execute(run.pk, threaded=False, runner_for=lambda kind: cancel_then_delete)
    run.refresh_from_db()
    assert run.state == "CANCELLED"
    assert load(tmp_path, "guard").metadata_location == before.metadata_location
    assert set(_files(tmp_path)) == files_before  # the rewritten files were deleted
    assert AuditEntry.objects.get(task_run_id=run.pk).outcome == "cancelled"


def _files(root: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
