"""The life cycle of a task run, driven by the worker (:mod:`explorer.tasks.runtime`):
``task_run_claim`` / ``_started`` / ``_beat`` / ``_wanted`` / ``_artifact`` /
``_attempt_failed`` / ``_finish``, and the reaper (:func:`task_runs_reap`). Every state change
is a conditional UPDATE on the current state; each ending of a table-changing run is audited.
A run's outcome and its heartbeat are written again when the database drops the connection
(a restart): for up to ``DB_RETRY_SECONDS``, on a fresh connection, before giving up.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import (InterfaceError, OperationalError, close_old_connections, connection,
                       transaction)
from django.db.models import F, Q
from django.utils import timezone

from explorer.audit.record import audit_run
from explorer.models import AuditEntry, TaskRun
from explorer.tables import selectors
from explorer.tasks import kinds as task_kinds
from floe.maintenance import Progress

logger = logging.getLogger(__name__)

State = TaskRun.State

#: How long a heartbeat or a run's outcome is written again while the database does not answer
#: (a restart takes seconds), and the pauses between attempts (doubled from the first up to the
#: last: soon after the database is back, well before the reaper takes the run for dead).
DB_RETRY_SECONDS = 30.0
DB_RETRY_PAUSES = (0.25, 1.0)

T = TypeVar("T")


def _db_retrying(what: str, write: Callable[[], T]) -> T:
    """``write()``, again on a fresh connection while the database drops it (OperationalError,
    InterfaceError), for up to DB_RETRY_SECONDS; then the last error. Never inside a caller's
    transaction (a run executed in-process): there the error is the caller's."""
    deadline = time.monotonic() + DB_RETRY_SECONDS
    pause, longest = DB_RETRY_PAUSES
    while True:
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block or time.monotonic() + pause > deadline:
                raise
            logger.warning("%s: the database does not answer (%s); trying again in %.2f s",
                           what, str(exc).strip().splitlines()[0] if str(exc).strip() else
                           type(exc).__name__, pause)
            time.sleep(pause)
            pause = min(pause * 2, longest)
            close_old_connections()  # the broken connection is replaced by the next query


# --- the life cycle, driven by the worker ---------------------------------------------------------


def task_run_claim(*, task_run_id: int) -> TaskRun | None:
    """Move a queued run to RUNNING; None when it is gone, cancelled, or another worker has
    it (a redelivered message then does nothing)."""
    now = timezone.now()
    claimed = TaskRun.objects.filter(pk=task_run_id, state=State.QUEUED).update(
        state=State.RUNNING, started_at=now, heartbeat_at=now, progress=0, stage="starting",
        attempts=F("attempts") + 1, updated_at=now)
    return TaskRun.objects.select_related("source_run").get(pk=task_run_id) if claimed else None


def task_run_started(*, task_run_id: int, metadata_before: str,
                     snapshot_before: int | None) -> None:
    TaskRun.objects.filter(pk=task_run_id).update(metadata_before=metadata_before,
                                                  snapshot_before=snapshot_before)


def _progress_fields(progress: Progress) -> dict[str, Any]:
    return {"stage": progress.stage[:64], "progress_done": progress.done,
            "progress_total": progress.total, "progress_detail": progress.detail[:255],
            "progress": min(99, int((progress.fraction or 0.0) * 100))}


def task_run_beat(*, task_run_id: int, progress: Progress | None = None) -> bool:
    """Write the heartbeat (and progress, when given); False when the run should stop: a
    cancel was requested, or it is no longer RUNNING (the reaper gave up on it)."""
    def write() -> bool:
        now = timezone.now()
        fields: dict[str, Any] = {"heartbeat_at": now, "updated_at": now}
        if progress is not None:
            fields.update(_progress_fields(progress))
        TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING).update(**fields)
        return task_run_wanted(task_run_id=task_run_id)
    return _db_retrying(f"task run {task_run_id}: heartbeat", write)


def task_run_wanted(*, task_run_id: int) -> bool:
    """Still RUNNING and not asked to cancel."""
    return TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING,
                                  cancel_requested_at__isnull=True).exists()


def task_run_artifact(*, task_run_id: int, artifact: str) -> None:
    TaskRun.objects.filter(pk=task_run_id).update(artifact=artifact)


def task_run_attempt_failed(*, task_run_id: int, error: str) -> None:
    """An attempt ended in a commit conflict and the run will try again: its audit entry."""
    run = TaskRun.objects.select_related("created_by").get(pk=task_run_id)
    after = _table_state(run)
    audit_run(run, AuditEntry.Outcome.FAILED, error=error, after=after)
    TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING).update(
        attempts=F("attempts") + 1, metadata_before=after[0], snapshot_before=after[1])


def task_run_finish(*, task_run_id: int, state: str, result: dict[str, Any] | None = None,
                    error: str = "", after: tuple[str, int | None] | None = None,
                    progress: Progress | None = None) -> None:
    """RUNNING → SUCCEEDED / FAILED / CANCELLED, recording how far it got (``progress``: its
    milestone, explorer.tasks.outcomes), then the audit entry of a table change (also when the
    reaper failed the run meanwhile: the change happened, the trail says so). Written again
    while the database does not answer (one transaction: all of it or nothing each time)."""
    outcome = {State.SUCCEEDED: AuditEntry.Outcome.SUCCEEDED,
               State.CANCELLED: AuditEntry.Outcome.CANCELLED}.get(state, AuditEntry.Outcome.FAILED)

    def write() -> None:
        now = timezone.now()
        fields: dict[str, Any] = {"state": state, "result": result, "error": error,
                                  "finished_at": now, "updated_at": now}
        if progress is not None:
            fields.update(_progress_fields(progress))
        if state == State.SUCCEEDED:
            fields["progress"] = 100
        with transaction.atomic():  # whoever sees the run finished sees its audit entry
            written = TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING).update(
                **fields)
            run = TaskRun.objects.select_related("created_by").get(pk=task_run_id)
            if not written:
                if (run.state, run.result, run.error) == (state, result, error):
                    return  # an earlier attempt was committed, its answer lost: done already
                logger.warning("task run %s finished (%s) after it was no longer running",
                               task_run_id, state)
            if task_kinds.KINDS[run.kind].changes_table:
                audit_run(run, outcome, result=result, error=error, after=after or ("", None),
                           finished_at=now)
    _db_retrying(f"task run {task_run_id}: its outcome", write)


# --- the reaper -----------------------------------------------------------------------------------


def _table_state(run: TaskRun) -> tuple[str, int | None]:
    try:
        return selectors.table_pointer(catalog=run.catalog, namespace=run.namespace,
                                       name=run.table)
    except Exception:  # noqa: BLE001 - a table that cannot be read has no state to record
        return "", None


def task_runs_reap(*, now: datetime | None = None) -> dict[str, int]:
    """Fail the runs whose heartbeat stopped (their worker was killed), send again the runs
    still queued long after their message was sent (:func:`_queued_resend`), and remove expired
    and abandoned export files. Safe to run anywhere, any number of times at once."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.FLOE_TASK_HEARTBEAT_TIMEOUT)
    stale = TaskRun.objects.filter(state=State.RUNNING).filter(
        Q(heartbeat_at__lt=stale_before)
        | Q(heartbeat_at__isnull=True, started_at__lt=stale_before))
    failed = 0
    for run in stale.select_related("created_by"):
        beat = run.heartbeat_at or run.started_at
        error = (f"the worker stopped: no heartbeat since {beat:%Y-%m-%d %H:%M:%S} UTC (it was "
                 "killed or lost); the table is at its state before or after the last commit")
        after = _table_state(run) if task_kinds.KINDS[run.kind].changes_table else None
        with transaction.atomic():
            if not TaskRun.objects.filter(pk=run.pk, state=State.RUNNING,
                                          heartbeat_at=run.heartbeat_at).update(
                    state=State.FAILED, error=error, finished_at=now, updated_at=now):
                continue  # it beat, finished or was reaped meanwhile
            if after is not None:
                audit_run(run, AuditEntry.Outcome.FAILED, error=error, after=after,
                           finished_at=now, via="system")
        failed += 1
        logger.warning("task run %s: %s", run.pk, error)
    return {"failed_runs": failed, "resent_runs": _queued_resend(now),
            "removed_exports": _exports_sweep(now)}


def _queued_resend(now: datetime) -> int:
    """Send again the message of each run still QUEUED FLOE_TASK_REQUEUE_SECONDS after it was
    sent: a broker restarted without its data (or crashed) lost it, and the run would stay
    queued forever. At most once per period per run (a conditional UPDATE of ``sent_at``, so
    reapers running at once send it once). A run merely waiting behind busy workers gets a
    second message too, which is harmless: :func:`task_run_claim` moves the run out of QUEUED
    once, and the worker that gets the other message finds it claimed and does nothing."""
    from explorer.tasks import services  # the sending side

    due_before = now - timedelta(seconds=settings.FLOE_TASK_REQUEUE_SECONDS)
    due = TaskRun.objects.filter(state=State.QUEUED).filter(
        Q(sent_at__lt=due_before) | Q(sent_at__isnull=True, created_at__lt=due_before))
    resent = 0
    for run_id, sent_at in due.values_list("pk", "sent_at"):
        if not TaskRun.objects.filter(pk=run_id, state=State.QUEUED, sent_at=sent_at).update(
                sent_at=now):
            continue  # claimed, cancelled or sent again by another reaper meanwhile
        try:
            services.task_run_send(task_run_id=run_id)
        except Exception:  # noqa: BLE001 - the broker down: the next period sends it again
            logger.warning("task run %s: cannot send it again", run_id, exc_info=True)
            continue
        resent += 1
        logger.warning("task run %s was still queued %s s after it was sent: sent again",
                       run_id, int(settings.FLOE_TASK_REQUEUE_SECONDS))
    return resent


def _exports_sweep(now: datetime) -> int:
    """Remove export files older than FLOE_EXPORT_MAX_AGE, and the directories of exports
    that failed, were cancelled or are unknown (a worker killed mid-export leaves one)."""
    root = Path(settings.FLOE_EXPORT_DIR)
    if not root.is_dir():
        return 0
    expired_before = now - timedelta(seconds=settings.FLOE_EXPORT_MAX_AGE)
    removed = 0
    for directory in root.iterdir():
        if not directory.is_dir() or not directory.name.isdigit():
            continue
        run = TaskRun.objects.filter(pk=int(directory.name), kind=TaskRun.Kind.EXPORT).first()
        if run is not None and (run.state in (State.QUEUED, State.RUNNING) or (
                run.state == State.SUCCEEDED and run.finished_at is not None
                and run.finished_at >= expired_before)):
            continue
        shutil.rmtree(directory, ignore_errors=True)
        removed += 1
        if run is not None and run.artifact:
            TaskRun.objects.filter(pk=run.pk).update(artifact="")
    return removed
