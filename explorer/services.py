"""Writes: submitting, cancelling and retrying tasks, the task-run life cycle the worker drives,
the reaper, grants, and the audit trail they write. Keyword-only, named noun_verb.

What pages and the API call:

* :func:`task_submit` (validate → authorise → record → enqueue after commit),
  :func:`task_cancel`, :func:`task_retry`, :func:`task_preview` (the preview of an ``evolve``,
  ``delete_rows`` or ``compact`` submission: the same parameters, nothing queued);
* :func:`export_file_get` (an export's file, for its owner);
* :func:`grant_add`, :func:`grant_remove` (admins), :func:`grant_bootstrap` (the
  ``floe_grant`` command); :func:`user_create`, :func:`user_active_set`,
  :func:`token_create`, :func:`token_revoke` (admins of every catalog, from the site).

What the worker calls (:mod:`explorer.task_runtime`): ``task_run_claim`` / ``_started`` /
``_beat`` / ``_wanted`` / ``_artifact`` / ``_attempt_failed`` / ``_finish`` and
:func:`task_runs_reap`. Every state change is a conditional UPDATE on the current state.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from explorer import permissions, ratelimit, selectors, task_kinds
from explorer.catalogs import LOCAL_CATALOG, catalog_info
from explorer.errors import AccessInvalid, TaskParamsInvalid
from explorer.models import AuditEntry, CatalogGrant, TaskRun
from floe.errors import NotFound, ValidationError
from floe.maintenance import Progress

logger = logging.getLogger(__name__)

# Broken tables named in a task result, at most (the result is a JSON column).
MAX_LISTED_ERRORS = 100

State = TaskRun.State


def _via(via: str) -> str:
    return via if via in ("session", "token", "command", "system") else "session"


# --- submitting, cancelling, retrying -------------------------------------------------------------


def _enqueue(task_run_id: int) -> None:
    from explorer import tasks  # tasks import this module

    # The limits travel in the message: the submitting process's settings decide them.
    tasks.run_task.apply_async((task_run_id,),
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
            created_via=_via(via), source_run=validated.source_run)
        transaction.on_commit(lambda: _enqueue(run.pk))
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
    if run.kind in (TaskRun.Kind.EXPIRE, TaskRun.Kind.ORPHANS):
        params = {"dry_run_task_id": run.source_run_id}
    return task_submit(kind=run.kind, params=params, user=user, via=via)


def task_preview(*, kind: Any, params: Any, user: Any, identity: str) -> dict[str, Any]:
    """The preview of a submission (same parameters, nothing queued): for ``evolve`` the new
    schema / spec / sort order with the compatibility verdict, for ``delete_rows`` the files
    and an estimated row count, for ``compact`` the file groups and the engine. Expire and
    orphan removal preview with their dry-run tasks. Needs read access; rate limited."""
    from explorer import selectors_changes as changes

    spec = task_kinds.kind_get(kind)
    if not spec.preview:
        raise TaskParamsInvalid("kind", f"{spec.kind} has no preview (previews: evolve, "
                                        "delete_rows, compact; expire_snapshots and "
                                        "remove_orphan_files have dry-run tasks)")
    permissions.require_read(
        user=user, catalog=task_kinds.submission_catalog(kind=spec.kind, params=params))
    ratelimit.expensive_read_check(identity=identity, what=f"the preview of {spec.kind}")
    v = task_kinds.params_validate(kind=spec.kind, params=params)
    table = selectors.table_load(catalog=v.catalog, namespace=v.namespace, name=v.table)
    p = v.params
    if spec.kind == TaskRun.Kind.EVOLVE:
        return changes.schema_change_preview(
            table=table, changes=p["changes"], allow_incompatible=p["allow_incompatible"])
    if spec.kind == TaskRun.Kind.DELETE_ROWS:
        return changes.delete_preview(table=table, filter=p["filter"], mode=p.get("mode"),
                                      branch=p["branch"])
    return changes.compaction_preview(table=table, params=p)


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
    now = timezone.now()
    fields: dict[str, Any] = {"heartbeat_at": now, "updated_at": now}
    if progress is not None:
        fields.update(_progress_fields(progress))
    TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING).update(**fields)
    return task_run_wanted(task_run_id=task_run_id)


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
    _audit_run(run, AuditEntry.Outcome.FAILED, error=error, after=after)
    TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING).update(
        attempts=F("attempts") + 1, metadata_before=after[0], snapshot_before=after[1])


def task_run_finish(*, task_run_id: int, state: str, result: dict[str, Any] | None = None,
                    error: str = "", after: tuple[str, int | None] | None = None,
                    progress: Progress | None = None) -> None:
    """RUNNING → SUCCEEDED / FAILED / CANCELLED, recording how far it got (``progress``: its
    milestone, explorer.task_outcomes), then the audit entry of a table change (also when the
    reaper failed the run meanwhile: the change happened, the trail says so)."""
    now = timezone.now()
    fields: dict[str, Any] = {"state": state, "result": result, "error": error,
                              "finished_at": now, "updated_at": now}
    if progress is not None:
        fields.update(_progress_fields(progress))
    if state == State.SUCCEEDED:
        fields["progress"] = 100
    outcome = {State.SUCCEEDED: AuditEntry.Outcome.SUCCEEDED,
               State.CANCELLED: AuditEntry.Outcome.CANCELLED}.get(state, AuditEntry.Outcome.FAILED)
    with transaction.atomic():  # whoever sees the run finished sees its audit entry
        if not TaskRun.objects.filter(pk=task_run_id, state=State.RUNNING).update(**fields):
            logger.warning("task run %s finished (%s) after it was no longer running",
                           task_run_id, state)
        run = TaskRun.objects.select_related("created_by").get(pk=task_run_id)
        if task_kinds.KINDS[run.kind].changes_table:
            _audit_run(run, outcome, result=result, error=error, after=after or ("", None),
                       finished_at=now)


# --- the reaper -----------------------------------------------------------------------------------


def _table_state(run: TaskRun) -> tuple[str, int | None]:
    try:
        return selectors.table_pointer(catalog=run.catalog, namespace=run.namespace,
                                       name=run.table)
    except Exception:  # noqa: BLE001 - a table that cannot be read has no state to record
        return "", None


def task_runs_reap(*, now: datetime | None = None) -> dict[str, int]:
    """Fail the runs whose heartbeat stopped (their worker was killed) and remove expired and
    abandoned export files. Safe to run anywhere, any number of times at once."""
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
                _audit_run(run, AuditEntry.Outcome.FAILED, error=error, after=after,
                           finished_at=now, via="system")
        failed += 1
        logger.warning("task run %s: %s", run.pk, error)
    return {"failed_runs": failed, "removed_exports": _exports_sweep(now)}


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


# --- the audit trail ------------------------------------------------------------------------------


def _audit_run(run: TaskRun, outcome: str, *, after: tuple[str, int | None],
               result: dict[str, Any] | None = None, error: str = "",
               finished_at: datetime | None = None, via: str | None = None) -> AuditEntry:
    """The entry of one run (or attempt) of a table-changing task."""
    finished_at = finished_at or timezone.now()
    user = run.created_by
    duration = None
    if run.started_at is not None:
        duration = int((finished_at - run.started_at).total_seconds() * 1000)
    return AuditEntry.objects.create(
        actor_id=user.pk if user is not None else None,
        actor_name=user.get_username() if user is not None else "",
        actor_via=via or run.created_via, action=run.kind, params=run.params,
        catalog=run.catalog, namespace=run.namespace, table=run.table,
        metadata_before=run.metadata_before, snapshot_before=run.snapshot_before,
        metadata_after=after[0], snapshot_after=after[1], outcome=outcome, result=result,
        error=error, started_at=run.started_at, finished_at=finished_at, duration_ms=duration,
        task_run_id=run.pk)


def _audit_grant(*, actor: Any, via: str, action: str, grant: CatalogGrant) -> None:
    now = timezone.now()
    user = actor if actor is not None and actor.is_authenticated else None
    AuditEntry.objects.create(
        actor_id=user.pk if user else None, actor_name=user.get_username() if user else "",
        actor_via=_via(via), action=action, catalog=grant.catalog,
        params={"user": grant.user.get_username(), "role": grant.role},
        outcome=AuditEntry.Outcome.SUCCEEDED, started_at=now, finished_at=now, duration_ms=0)


# --- grants ---------------------------------------------------------------------------------------


def _grant_check(*, username: Any, catalog: Any, role: Any) -> tuple[Any, str, str]:
    if not isinstance(username, str) or not username:
        raise AccessInvalid("user", "user must be a user name")
    if not isinstance(catalog, str) or not catalog:
        raise AccessInvalid("catalog", "catalog must be a catalog name or *")
    if not isinstance(role, str) or role.lower() not in CatalogGrant.Role.values:
        raise AccessInvalid("role", f"role {role!r} is not one of "
                                    f"{', '.join(CatalogGrant.Role.values)}")
    if catalog != CatalogGrant.EVERY_CATALOG:
        try:
            catalog_info(catalog)
        except NotFound as exc:
            raise AccessInvalid("catalog", str(exc)) from None
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    if user is None:
        raise AccessInvalid("user", f"user {username!r} does not exist")
    return user, catalog, role.lower()


def _grant_put(*, actor: Any, via: str, username: Any, catalog: Any, role: Any
               ) -> CatalogGrant:
    user, catalog, role = _grant_check(username=username, catalog=catalog, role=role)
    with transaction.atomic():
        grant, _ = CatalogGrant.objects.update_or_create(
            user=user, catalog=catalog,
            defaults={"role": role,
                      "granted_by": actor if actor is not None and actor.is_authenticated
                      else None})
        _audit_grant(actor=actor, via=via, action="grant_add", grant=grant)
    return grant


def grant_add(*, actor: Any, username: Any, catalog: Any, role: Any,
              via: str = "session") -> CatalogGrant:
    """Give ``username`` ``role`` on ``catalog`` (``*``: every catalog), replacing the role
    they had there. Needs admin on that catalog."""
    if not isinstance(catalog, str) or not catalog:
        raise AccessInvalid("catalog", "catalog must be a catalog name or *")
    permissions.require_administer(user=actor, catalog=catalog)
    return _grant_put(actor=actor, via=via, username=username, catalog=catalog, role=role)


def grant_remove(*, actor: Any, grant_id: Any, via: str = "session") -> None:
    """Revoke a grant. Needs admin on its catalog."""
    try:
        grant = CatalogGrant.objects.select_related("user").get(pk=grant_id)
    except (CatalogGrant.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"grant {grant_id} does not exist") from None
    permissions.require_administer(user=actor, catalog=grant.catalog)
    with transaction.atomic():
        _audit_grant(actor=actor, via=via, action="grant_remove", grant=grant)
        grant.delete()


def grant_bootstrap(*, username: str, catalog: str, role: str) -> CatalogGrant:
    """``manage.py floe_grant USER CATALOG ROLE``: whoever runs the command on the server
    may grant (how the first admin is made)."""
    return _grant_put(actor=None, via="command", username=username, catalog=catalog, role=role)


def grant_revoke_bootstrap(*, username: str, catalog: str) -> str | None:
    """``manage.py floe_grant USER CATALOG --revoke``: the role revoked, or None."""
    grant = CatalogGrant.objects.select_related("user").filter(
        user__username=username, catalog=catalog).first()
    if grant is None:
        return None
    with transaction.atomic():
        _audit_grant(actor=None, via="command", action="grant_remove", grant=grant)
        grant.delete()
    return grant.role


# --- users and API tokens (admins of every catalog, from the site) -----------------------------


def _audit_access(*, actor: Any, via: str, action: str, user: Any, **params: Any) -> None:
    """A change to a user or a token: an entry of catalog ``*`` (users reach every catalog).
    Never the token's key nor the password."""
    now = timezone.now()
    who = actor if actor is not None and actor.is_authenticated else None
    AuditEntry.objects.create(
        actor_id=who.pk if who else None, actor_name=who.get_username() if who else "",
        actor_via=_via(via), action=action, catalog=CatalogGrant.EVERY_CATALOG,
        params={"user": user.get_username(), **params},
        outcome=AuditEntry.Outcome.SUCCEEDED, started_at=now, finished_at=now, duration_ms=0)


def _user_get(user_id: Any) -> Any:
    try:
        return get_user_model().objects.get(pk=user_id)
    except (get_user_model().DoesNotExist, ValueError, TypeError):
        raise NotFound(f"user {user_id} does not exist") from None


def user_create(*, actor: Any, username: Any, password: Any, via: str = "session") -> Any:
    """A new active user (no role beyond FLOE_DEFAULT_ROLE until granted one). The name
    follows Django's rules and must be free; the password passes the site's password
    validators. Needs admin on every catalog."""
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError as DjangoValidationError

    permissions.require_manage_users(user=actor)
    model = get_user_model()
    name = username.strip() if isinstance(username, str) else ""
    if not name:
        raise AccessInvalid("user", "give a user name")
    try:
        model.username_validator(name)
    except DjangoValidationError as exc:
        raise AccessInvalid("user", f"user name {name!r}: {' '.join(exc.messages)}") from None
    longest = model._meta.get_field(model.USERNAME_FIELD).max_length
    if longest is not None and len(name) > longest:
        raise AccessInvalid("user", f"a user name has at most {longest} characters")
    if model.objects.filter(**{f"{model.USERNAME_FIELD}__iexact": name}).exists():
        raise AccessInvalid("user", f"user {name!r} already exists")
    if not isinstance(password, str) or not password:
        raise AccessInvalid("password", "give a password")
    try:
        validate_password(password, model(**{model.USERNAME_FIELD: name}))
    except DjangoValidationError as exc:
        raise AccessInvalid("password", " ".join(exc.messages)) from None
    with transaction.atomic():
        user = model.objects.create_user(**{model.USERNAME_FIELD: name}, password=password)
        _audit_access(actor=actor, via=via, action="user_create", user=user)
    return user


def user_active_set(*, actor: Any, user_id: Any, active: bool, via: str = "session") -> Any:
    """Deactivate a user (they can no longer sign in, their token stops working, they keep
    their grants for when they come back) or reactivate them. Not oneself; a superuser only
    by a superuser. Needs admin on every catalog."""
    permissions.require_manage_users(user=actor)
    user = _user_get(user_id)
    if user.pk == actor.pk:
        raise AccessInvalid("active", "you cannot deactivate or reactivate yourself")
    if user.is_superuser and not actor.is_superuser:
        raise AccessInvalid("active", f"{user.get_username()} is a superuser: only a "
                                      "superuser may change that account")
    if user.is_active == active:
        return user
    with transaction.atomic():
        user.is_active = active
        user.save(update_fields=["is_active"])
        _audit_access(actor=actor, via=via, user=user,
                      action="user_activate" if active else "user_deactivate")
    return user


def token_create(*, actor: Any, user_id: Any, via: str = "session") -> str:
    """A new API token for a user (replacing the one they had): its key, to be shown once
    (``Authorization: Token KEY``). Needs admin on every catalog."""
    from rest_framework.authtoken.models import Token

    permissions.require_manage_users(user=actor)
    user = _user_get(user_id)
    if not user.is_active:
        raise AccessInvalid("user", f"{user.get_username()} is deactivated: reactivate them "
                                    "first")
    with transaction.atomic():
        replaced = Token.objects.filter(user=user).delete()[0] > 0
        token = Token.objects.create(user=user)
        _audit_access(actor=actor, via=via, action="token_create", user=user,
                      replaced=replaced)
    return str(token.key)


def token_revoke(*, actor: Any, user_id: Any, via: str = "session") -> bool:
    """Revoke a user's API token; False when they had none. Needs admin on every catalog."""
    from rest_framework.authtoken.models import Token

    permissions.require_manage_users(user=actor)
    user = _user_get(user_id)
    with transaction.atomic():
        if not Token.objects.filter(user=user).delete()[0]:
            return False
        _audit_access(actor=actor, via=via, action="token_revoke", user=user)
    return True


# --- work of the refresh_table_stats task ---------------------------------------------------------


def table_stats_refresh(
    *, catalog_name: str = LOCAL_CATALOG, namespace: str | None = None,
    on_progress: Callable[[Progress], None] = lambda _: None,
) -> dict[str, Any]:
    """Read the current metadata of every table (or every table of one namespace) and total
    their snapshot summaries. Reads only; changes no table."""
    catalog = selectors.catalog_get(name=catalog_name)
    refs = selectors.catalog_table_refs(catalog=catalog.name, namespace=namespace)
    totals = {"data_files": 0, "delete_files": 0, "records": 0, "files_size": 0}
    broken: list[dict[str, str]] = []
    broken_count = 0
    for done, ref in enumerate(refs, start=1):
        (row,) = selectors.table_rows(refs=[ref])
        if row.error is not None:
            broken_count += 1
            if len(broken) < MAX_LISTED_ERRORS:
                broken.append({"table": row.identifier, "error": row.error})
        else:
            for key in totals:
                totals[key] += getattr(row, key) or 0
        on_progress(Progress("reading tables", done, len(refs), ref.identifier))
    return {
        "catalog": catalog.name,
        "namespace": namespace,
        "tables": len(refs),
        "broken_tables": broken_count,
        "totals": totals,
        "errors": broken,
    }
