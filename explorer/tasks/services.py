"""What pages and the API call to submit, cancel, retry and preview tasks, and to fetch an
export's file. Keyword-only, named noun_verb.

* :func:`task_submit` (validate → authorise → record → enqueue after commit),
  :func:`task_cancel`, :func:`task_retry`, :func:`task_preview` (the preview a kind declares,
  of an ``evolve``, ``delete_rows`` or ``compact`` submission: the same parameters, nothing
  queued);
* :func:`export_file_get` (an export's file, for its owner);
* :func:`task_run_send` (a run's message to the broker: after a submission, and again from
  the reaper for a run still queued).

The worker's side of a run is :mod:`explorer.tasks.lifecycle`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from explorer import ratelimit
from explorer.access import permissions
from explorer.audit.record import via_name
from explorer.errors import TaskParamsInvalid
from explorer.models import TaskRun
from explorer.tables import selectors
from explorer.tasks import kinds as task_kinds
from floe.errors import NotFound, ValidationError

logger = logging.getLogger(__name__)

State = TaskRun.State


def task_run_send(*, task_run_id: int) -> None:
    """Send the run's message to the broker, recording when (``sent_at``: the reaper sends a
    run still QUEUED again after FLOE_TASK_REQUEUE_SECONDS). Sending a run twice is harmless:
    the worker's claim moves it out of QUEUED once and refuses any other message for it."""
    from explorer.tasks import jobs  # the worker's side: imported only to send

    # stamped before sending: a send that fails (the broker down) is retried by the reaper
    TaskRun.objects.filter(pk=task_run_id).update(sent_at=timezone.now())
    # The limits travel in the message: the submitting process's settings decide them.
    jobs.run_task.apply_async((task_run_id,),
                               soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
                               time_limit=settings.CELERY_TASK_TIME_LIMIT)


def task_submit(*, kind: Any, params: Any, user: Any, via: str = "session") -> TaskRun:
    """Validate, authorise (maintainer on the catalog), record a QUEUED run and enqueue it
    once the row is committed. TaskParamsInvalid (400) for an unknown kind or a bad
    parameter (nothing is recorded), Forbidden (403), RateLimited (429) for exports."""
    spec = task_kinds.kind_get(kind)
    catalog = task_kinds.submission_catalog(kind=spec.kind, params=params)
    permissions.require_submit(user=user, kind=spec.kind, catalog=catalog)
    validated = task_kinds.params_validate(kind=spec.kind, params=params)
    permissions.require_submit(user=user, kind=spec.kind, catalog=validated.catalog)
    if spec.expensive_read:
        ratelimit.expensive_read_check(identity=f"user:{user.pk}", what=spec.label.lower())
    with transaction.atomic():
        run = TaskRun.objects.create(
            kind=spec.kind, params=validated.params, catalog=validated.catalog,
            namespace=validated.namespace, table=validated.table,
            created_by=user if user is not None and user.is_authenticated else None,
            created_via=via_name(via), source_run=validated.source_run)
        transaction.on_commit(lambda: task_run_send(task_run_id=run.pk))
    return run


def task_submit_for_policy(*, kind: str, params: Any, policy: Any,
                           plan: dict[str, Any] | None = None) -> TaskRun:
    """A run a maintenance policy decided (explorer.maintenance.autopilot): validated as any
    submission, attributed to the policy (no user: the policy's role was checked when it was
    created) with what it planned, enqueued after commit."""
    validated = task_kinds.params_validate(kind=kind, params=params)
    with transaction.atomic():
        run = TaskRun.objects.create(
            kind=kind, params=validated.params, catalog=validated.catalog,
            namespace=validated.namespace, table=validated.table, created_by=None,
            created_via="policy", policy=policy, policy_plan=plan,
            source_run=validated.source_run)
        transaction.on_commit(lambda: task_run_send(task_run_id=run.pk))
    return run


def _run_get(task_run_id: Any) -> TaskRun:
    try:
        return TaskRun.objects.select_related("created_by", "source_run").get(pk=task_run_id)
    except (TaskRun.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"task run {task_run_id} does not exist") from None


def task_cancel(*, task_run_id: int, user: Any) -> TaskRun:
    """Cancel a run: a queued one at once (it will never run), a running one cooperatively
    (it stops at its next step or right before its commit, committing nothing half-done).
    Cancelling a cancelled run is a no-op; a finished one is a ValidationError."""
    run = _run_get(task_run_id)
    permissions.require_cancel(user=user, run=run)
    now = timezone.now()
    who = user if user is not None and user.is_authenticated else None
    if TaskRun.objects.filter(pk=run.pk, state=State.QUEUED).update(
            state=State.CANCELLED, cancel_requested_at=now, cancelled_by=who, finished_at=now,
            error="cancelled before it started", updated_at=now):
        logger.info("task run %s cancelled before it started", run.pk)
    else:  # the first request's time stays: a second one changes nothing
        TaskRun.objects.filter(pk=run.pk, state=State.RUNNING,
                               cancel_requested_at__isnull=True).update(
            cancel_requested_at=now, cancelled_by=who, updated_at=now)
    run.refresh_from_db()
    if run.state not in (State.RUNNING, State.CANCELLED):
        raise ValidationError(f"task run {run.pk} already finished ({run.state}); there is "
                              "nothing to cancel")
    return run


def task_retry(*, task_run_id: int, user: Any, via: str = "session") -> TaskRun:
    """Submit a finished run (failed, cancelled, or any other) again with the same kind and
    parameters, validated and authorised afresh."""
    run = _run_get(task_run_id)
    if not run.is_finished:
        raise ValidationError(f"task run {run.pk} is still {run.state}; retry it when it "
                              "finished")
    params = dict(run.params)
    if task_kinds.kind_get(run.kind).dry_run_of is not None:  # a confirm step: its dry run
        params = {"dry_run_task_id": run.source_run_id}
    return task_submit(kind=run.kind, params=params, user=user, via=via)


def task_preview(*, kind: Any, params: Any, user: Any, identity: str) -> dict[str, Any]:
    """The preview of a submission (same parameters, nothing queued): for ``evolve`` the new
    schema / spec / sort order with the compatibility verdict, for ``delete_rows`` the files
    and an estimated row count, for ``compact`` the file groups and the engine, for
    ``rewrite_manifests`` the manifests before and after, for ``compute_partition_stats``
    the manifests it would read. Expire and orphan removal preview with their dry-run tasks. Needs read access; rate limited."""
    spec = task_kinds.kind_get(kind)
    if spec.preview is None:
        previews = ", ".join(k for k, s in task_kinds.KINDS.items() if s.preview is not None)
        raise TaskParamsInvalid("kind", f"{spec.kind} has no preview (previews: {previews}; "
                                        "expire_snapshots and remove_orphan_files have "
                                        "dry-run tasks)")
    permissions.require_read(
        user=user, catalog=task_kinds.submission_catalog(kind=spec.kind, params=params))
    ratelimit.expensive_read_check(identity=identity, what=f"the preview of {spec.kind}")
    v = task_kinds.params_validate(kind=spec.kind, params=params)
    table = selectors.table_load(catalog=v.catalog, namespace=v.namespace, name=v.table)
    return spec.preview(table=table, params=v.params)


def export_file_get(*, task_run_id: int, user: Any) -> Path:
    """The file of a finished export, for the user who exported it only."""
    run = _run_get(task_run_id)
    if run.kind != TaskRun.Kind.EXPORT:
        raise NotFound(f"task run {run.pk} is not an export")
    permissions.require_download(user=user, run=run)
    if run.state != State.SUCCEEDED:
        raise NotFound(f"export {run.pk} has no file: it is {run.state}")
    path = Path(settings.FLOE_EXPORT_DIR) / run.artifact if run.artifact else None
    if path is None or not path.is_file():
        raise NotFound(f"the file of export {run.pk} was removed (exports are kept "
                       f"{settings.FLOE_EXPORT_MAX_AGE} s)")
    return path
