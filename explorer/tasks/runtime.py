"""Running one TaskRun in a worker: claim, heartbeat, progress, cooperative cancel, retries on
a commit conflict, the outcome and its audit entry.

* **Progress**: the core's ``on_progress`` callbacks (:class:`floe.maintenance.Progress`) go
  to :meth:`RunContext.on_progress`, which only keeps the latest report; the heartbeat writes
  it to the row with ``heartbeat_at`` every ``FLOE_TASK_HEARTBEAT_SECONDS``. In a worker the
  heartbeat is a small thread (so a run beats while the core is busy between reports); a run
  executed in-process (tests, eager mode) beats from the callback itself.
* **Cancel**: a cancel request sets ``cancel_requested_at`` on the row; the heartbeat sees it
  and the next progress report raises :class:`floe.maintenance.Cancelled`, which stops the
  operation between steps with nothing half-done committed. Operations without progress
  reports get :meth:`RunContext.guard` as the last operation of their transaction: it reads
  the flag right before the commit and raises Cancelled there (the transaction then deletes
  what it wrote).
* **Retries**: kinds that plan afresh on every run (:attr:`KindSpec.retry_on_conflict`) run
  again on :class:`floe.errors.CommitConflict`, up to ``FLOE_TASK_CONFLICT_RETRIES`` times;
  each attempt that ends gets its own audit entry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import close_old_connections, connections

from explorer.maintenance import autopilot
from explorer.maintenance.metrics import metrics_record
from explorer.models import TableMetrics, TaskRun
from explorer.tables import selectors
from explorer.tasks import lifecycle
from explorer.tasks.kinds import KINDS
from explorer.tasks.outcomes import milestone
from explorer.tasks.runners import Runner
from floe.catalog.config import redact
from floe.errors import CommitConflict, FloeError
from floe.maintenance import Cancelled, Progress
from floe.metadata import TableMetadata
from floe.table.snapshot_producer import PendingOperation
from floe.table.transaction import Transaction
from floe.table.updates import TableUpdate

__all__ = ["RunContext", "execute"]

logger = logging.getLogger(__name__)

#: Seconds between attempts after a commit conflict (times the attempt number).
CONFLICT_BACKOFF = 0.5


class _CancelGuard(PendingOperation):
    """The last operation of a transaction: refuses the commit when a cancel was requested
    (read from the database right before the commit)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def apply(self, base: TableMetadata) -> list[TableUpdate]:
        self.ctx.check_cancelled(fresh=True)
        return []


class RunContext:
    """What a runner gets: the run's parameters, the progress callback, the cancel checks."""

    def __init__(self, run: TaskRun, *, threaded: bool, soft_time_limit: float | None = None
                 ) -> None:
        self.run = run
        # The soft time limit checked at every progress report too: Celery's timer looks
        # only once a second, this stops a reporting run at its first report past the limit.
        self._deadline = (time.monotonic() + soft_time_limit) if soft_time_limit else None
        self.run_id: int = run.pk
        self.params: dict[str, Any] = dict(run.params)
        self.threaded = threaded
        self.interval = float(settings.FLOE_TASK_HEARTBEAT_SECONDS)
        self._lock = threading.Lock()
        self._latest: Progress | None = None
        self._written: Progress | None = None
        # the latest report of each stage, oldest stage first (explorer.tasks.outcomes.milestone)
        self._stages: dict[str, Progress] = {}
        self._last_beat = 0.0
        self._cancel = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- progress and cancel --------------------------------------------------------------

    def on_progress(self, progress: Progress) -> None:
        """The core's callback: keep the report; raise Cancelled when a cancel is pending and
        SoftTimeLimitExceeded past the soft time limit."""
        with self._lock:
            self._latest = progress
            self._stages.pop(progress.stage, None)
            self._stages[progress.stage] = progress
        if not self.threaded and time.monotonic() - self._last_beat >= self.interval:
            self.beat()
        self.check_cancelled()
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise SoftTimeLimitExceeded(f"task run {self.run_id} ran past its soft time limit")

    def milestone(self) -> Progress | None:
        """How far the run got, in the terms of its outer stage (what it ends recorded with)."""
        with self._lock:
            return milestone(list(self._stages.values()))

    def report(self, stage: str, done: int = 0, total: int | None = None,
               detail: str = "") -> None:
        self.on_progress(Progress(stage, done, total, detail))

    def check_cancelled(self, *, fresh: bool = False) -> None:
        """Raise Cancelled when a cancel was requested (``fresh``: asked of the database now,
        not as of the last heartbeat)."""
        if fresh:
            self._cancel_seen(lifecycle.task_run_wanted(task_run_id=self.run_id))
        if self._cancel.is_set():
            raise Cancelled(f"task run {self.run_id} was cancelled")

    def _cancel_seen(self, wanted: bool) -> None:
        if not wanted:
            self._cancel.set()

    def artifact(self, relative: str) -> None:
        """Record the run's file (an export's, relative to FLOE_EXPORT_DIR)."""
        lifecycle.task_run_artifact(task_run_id=self.run_id, artifact=relative)

    def guard(self) -> PendingOperation:
        return _CancelGuard(self)

    def commit(self, txn: Transaction) -> None:
        """Commit ``txn`` with the cancel guard last (nothing staged: nothing to commit)."""
        if txn.operations:
            txn.add_operation(self.guard())
        txn.commit()

    # -- heartbeat ---------------------------------------------------------------------------

    def beat(self) -> None:
        """Write the heartbeat and the latest progress; learn about a cancel request."""
        with self._lock:
            latest = self._latest
        changed = latest is not None and latest != self._written
        if self.threaded:
            # in a worker no request cycle replaces a connection the database dropped (a
            # restart): without this a heartbeat never recovers (never inside a transaction:
            # in-process runs beat from within the caller's)
            close_old_connections()
        try:
            wanted = lifecycle.task_run_beat(task_run_id=self.run_id,
                                            progress=latest if changed else None)
        except Exception:  # a busy database must not kill the run; the next beat retries
            logger.warning("task run %s: heartbeat failed", self.run_id, exc_info=True)
            return
        self._last_beat = time.monotonic()
        if changed:
            self._written = latest
        self._cancel_seen(wanted)

    def _beat_forever(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                self.beat()
        finally:
            connections.close_all()  # this thread's connections only (they are per thread)

    def start(self) -> None:
        self.beat()
        if self.threaded:
            self._thread = threading.Thread(target=self._beat_forever,
                                            name=f"heartbeat-{self.run_id}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.threaded:
            close_old_connections()  # the run's outcome is written next (see beat)


def _one_line(exc: BaseException) -> str:
    text = redact(str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _after(run: TaskRun) -> tuple[str, int | None]:
    """The table's metadata file and current snapshot now ("" when it cannot be read)."""
    try:
        return selectors.table_pointer(catalog=run.catalog, namespace=run.namespace,
                                       name=run.table)
    except Exception:  # noqa: BLE001 - a table that cannot be read has no "after"
        logger.warning("task run %s: cannot read %s after the run", run.pk, run.identifier,
                       exc_info=True)
        return "", None


def execute(task_run_id: int, *, threaded: bool,
            runner_for: Callable[[str], Runner] | None = None,
            soft_time_limit: float | None = None) -> None:
    """Claim and run a task run; record the outcome (and the audit entry of a change).
    The work is the runner its kind declares (``runner_for``: another, for tests);
    ``soft_time_limit`` (seconds from the claim) is also checked at every progress report."""
    run = lifecycle.task_run_claim(task_run_id=task_run_id)
    if run is None:
        logger.info("task run %s is gone or already claimed", task_run_id)
        return
    spec = KINDS[run.kind]
    if spec.table_scoped:
        before, snapshot = _after(run)
        lifecycle.task_run_started(task_run_id=run.pk, metadata_before=before,
                                  snapshot_before=snapshot)
        run.refresh_from_db()
    ctx = RunContext(run, threaded=threaded, soft_time_limit=soft_time_limit)
    runner = spec.runner if runner_for is None else runner_for(run.kind)
    ctx.start()
    try:
        attempt = 0
        while True:
            attempt += 1
            try:
                result = runner(ctx)
            except CommitConflict as exc:
                if not spec.retry_on_conflict or attempt > settings.FLOE_TASK_CONFLICT_RETRIES:
                    raise
                logger.info("task run %s: %s; running it again", run.pk, exc)
                lifecycle.task_run_attempt_failed(
                    task_run_id=run.pk, error=f"{_one_line(exc)} (attempt {attempt}; running "
                                              "it again)")
                time.sleep(CONFLICT_BACKOFF * attempt)
                ctx.check_cancelled(fresh=True)
                continue
            break
    except Cancelled:
        ctx.stop()
        lifecycle.task_run_finish(task_run_id=run.pk, state=TaskRun.State.CANCELLED,
                                 error="cancelled", after=_after(run) if spec.table_scoped
                                 else None, progress=ctx.milestone())
        return
    except SoftTimeLimitExceeded:
        ctx.stop()
        lifecycle.task_run_finish(
            task_run_id=run.pk, state=TaskRun.State.FAILED,
            error="stopped: the soft time limit (FLOE_TASK_SOFT_TIME_LIMIT) was exceeded",
            after=_after(run) if spec.table_scoped else None, progress=ctx.milestone())
        raise
    except Exception as exc:
        ctx.stop()
        if not isinstance(exc, FloeError):
            logger.exception("task run %s failed", run.pk)
        lifecycle.task_run_finish(task_run_id=run.pk, state=TaskRun.State.FAILED,
                                 error=_one_line(exc) if isinstance(exc, FloeError)
                                 else f"{type(exc).__name__}: {redact(str(exc))}",
                                 after=_after(run) if spec.table_scoped else None,
                                 progress=ctx.milestone())
        return
    ctx.stop()
    after = _after(run) if spec.table_scoped else None
    lifecycle.task_run_finish(task_run_id=run.pk, state=TaskRun.State.SUCCEEDED, result=result,
                             after=after, progress=ctx.milestone())
    if spec.changes_table and after is not None and after[0] and after[0] != run.metadata_before:
        _record_health(run)
    if run.policy_id is not None:
        try:
            run.refresh_from_db()
            autopilot.policy_follow_up(run)
        except Exception:  # noqa: BLE001 - the next period plans again
            logger.exception("task run %s: its policy's next step could not be submitted",
                             run.pk)


def _record_health(run: TaskRun) -> None:
    """The health of the state the run's commit made (explorer.maintenance.metrics)."""
    try:
        table = selectors.table_load(catalog=run.catalog, namespace=run.namespace,
                                     name=run.table)
    except Exception:  # noqa: BLE001 - the run succeeded; its health row is a side matter
        logger.warning("task run %s: the table could not be read for its health", run.pk)
        return
    metrics_record(table=table, source=TableMetrics.Source.TASK, external=False)
