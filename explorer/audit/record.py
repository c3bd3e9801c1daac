"""Writing the audit trail of what the site changes: one :class:`AuditEntry` per run (or
attempt) of a table-changing task, per grant given or taken, per user or token change. (The
REST catalog's entries are written by :mod:`explorer.rest.services`; reading the trail is
:mod:`explorer.audit.selectors`.)"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from explorer.models import AuditEntry, CatalogGrant, TaskRun

__all__ = ["audit_access", "audit_grant", "audit_run", "via_name"]


def via_name(via: str) -> str:
    """How a change came in, as the audit names it (an unknown one counts as the site's)."""
    return via if via in ("session", "token", "command", "system", "policy") else "session"


def audit_run(run: TaskRun, outcome: str, *, after: tuple[str, int | None],
               result: dict[str, Any] | None = None, error: str = "",
               finished_at: datetime | None = None, via: str | None = None) -> AuditEntry:
    """The entry of one run (or attempt) of a table-changing task."""
    finished_at = finished_at or timezone.now()
    user = run.created_by
    duration = None
    if run.started_at is not None:
        duration = int((finished_at - run.started_at).total_seconds() * 1000)
    params = run.params
    name = user.get_username() if user is not None else ""
    if run.policy_id is not None:  # the policy's change (its name, pattern and why)
        policy = run.policy
        name = f"policy {policy.name}" if policy is not None else "a removed policy"
        params = {**run.params, "policy": policy.name if policy else None,
                  "policy_tables": policy.tables if policy else None}
    return AuditEntry.objects.create(
        actor_id=user.pk if user is not None else None,
        actor_name=name[:150],
        actor_via=via or run.created_via, action=run.kind, params=params,
        catalog=run.catalog, namespace=run.namespace, table=run.table,
        metadata_before=run.metadata_before, snapshot_before=run.snapshot_before,
        metadata_after=after[0], snapshot_after=after[1], outcome=outcome, result=result,
        error=error, started_at=run.started_at, finished_at=finished_at, duration_ms=duration,
        task_run_id=run.pk)


def audit_grant(*, actor: Any, via: str, action: str, grant: CatalogGrant) -> None:
    now = timezone.now()
    user = actor if actor is not None and actor.is_authenticated else None
    AuditEntry.objects.create(
        actor_id=user.pk if user else None, actor_name=user.get_username() if user else "",
        actor_via=via_name(via), action=action, catalog=grant.catalog,
        params={"user": grant.user.get_username(), "role": grant.role},
        outcome=AuditEntry.Outcome.SUCCEEDED, started_at=now, finished_at=now, duration_ms=0)


def audit_access(*, actor: Any, via: str, action: str, user: Any, **params: Any) -> None:
    """A change to a user or a token: an entry of catalog ``*`` (users reach every catalog).
    Never the token's key nor the password."""
    now = timezone.now()
    who = actor if actor is not None and actor.is_authenticated else None
    AuditEntry.objects.create(
        actor_id=who.pk if who else None, actor_name=who.get_username() if who else "",
        actor_via=via_name(via), action=action, catalog=CatalogGrant.EVERY_CATALOG,
        params={"user": user.get_username(), **params},
        outcome=AuditEntry.Outcome.SUCCEEDED, started_at=now, finished_at=now, duration_ms=0)
