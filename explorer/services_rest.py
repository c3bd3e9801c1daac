"""The Iceberg REST catalog the site serves (``/iceberg/``, api/views_iceberg.py): the one
:class:`floe.rest_server.RestServer` over the explorer's catalogs, who may do what (the
explorer's roles), and the audit trail of what REST clients changed.

Roles per catalog (:mod:`explorer.permissions`): a viewer loads and lists; a maintainer also
commits, creates, registers, renames and drops tables; an admin also creates, drops and
changes namespaces and drops tables with purge. Every change is an :class:`AuditEntry`
(``actor_via`` ``rest``, actions :data:`explorer.models.REST_ACTIONS`) with the user, the
engine that sent it (from the client's headers), the metadata file and current snapshot
before and after; a commit whose outcome is unknown is recorded as failed with the reason.
Refusals (4xx) are in the request log only.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings

from explorer import permissions
from explorer.catalogs import catalog_get, catalog_storage_properties
from explorer.models import AuditEntry
from floe.rest_server import Access, Change, Forbidden, Operation, RestServer

__all__ = ["audit_changes", "authorize", "engine_of", "rest_server"]

log = logging.getLogger("explorer.iceberg")

_server: RestServer | None = None
_lock = threading.Lock()

#: Request headers that say which client sent a request, in the order they are shown.
ENGINE_HEADERS = ("x-client-version", "user-agent", "x-client-git-commit-short")
_ROLE_FOR = {Access.READ: "viewer", Access.WRITE: "maintainer", Access.ADMIN: "admin"}


def _vended(catalog: str) -> dict[str, str]:
    names = settings.FLOE_ICEBERG_VENDED_PROPERTIES
    if not names:
        return {}
    props = catalog_storage_properties(catalog)
    return {k: props[k] for k in names if k in props}


def rest_server() -> RestServer:
    """The server (one per process: it keeps the Idempotency-Key answers), its limits read
    from the settings on each call."""
    global _server
    with _lock:
        if _server is None:
            _server = RestServer(catalog_get, vended_config=_vended)
        _server.max_body_bytes = int(settings.FLOE_ICEBERG_MAX_BODY)
        return _server


def authorize(user: Any, operation: Operation) -> None:
    """Forbidden (403) unless ``user``'s role on the operation's catalog allows it."""
    catalog = operation.catalog
    if catalog is None:  # /v1/config without a warehouse: answered 400 by the server
        return
    allowed = {Access.READ: permissions.can_read, Access.WRITE: permissions.can_change,
               Access.ADMIN: permissions.can_administer}[operation.access]
    if not allowed(user=user, catalog=catalog):
        what = operation.name
        if operation.name == "dropTable" and operation.access is Access.ADMIN:
            what = "dropTable with purgeRequested"
        raise Forbidden(f"user {user.get_username()!r} may not {what} in catalog {catalog!r}: "
                        f"that needs the {_ROLE_FOR[operation.access]} role on it")


def engine_of(headers: Mapping[str, str]) -> str:
    """The client, as its headers name it: ``PyIceberg 0.12.0``, ``Apache Iceberg 1.10.2
    (commit …) · Spark…``, ``duckdb/1.5.5 …``; empty when it sends none."""
    parts: list[str] = []
    seen: list[str] = []
    for name in ENGINE_HEADERS:
        value = " ".join((headers.get(name) or "").split())
        same = value.lower().replace("/", " ")  # PyIceberg/0.12.0 is PyIceberg 0.12.0
        if value and not any(same in s or s in same for s in seen):
            parts.append(value)
            seen.append(same)
    text = " · ".join(parts)
    return text[:200]


def _outcome(change: Change) -> str:
    return (AuditEntry.Outcome.SUCCEEDED if change.outcome == "succeeded"
            else AuditEntry.Outcome.FAILED)


def audit_changes(*, user: Any, engine: str, operation: Operation, changes: Iterable[Change],
                  started_at: dt.datetime, finished_at: dt.datetime) -> list[AuditEntry]:
    """One audit entry per change a REST request made (or may have made)."""
    entries = []
    duration = int((finished_at - started_at).total_seconds() * 1000)
    for change in changes:
        params: dict[str, Any] = {"engine": engine, "operation": operation.name,
                                  **dict(change.detail)}
        if change.outcome != "succeeded":
            params["outcome"] = change.outcome
        entries.append(AuditEntry.objects.create(
            actor_id=user.pk, actor_name=user.get_username(), actor_via="rest",
            action=f"rest_{change.action}", params=params, catalog=change.catalog,
            namespace=".".join(change.namespace), table=change.table or "",
            metadata_before=change.metadata_before or "",
            metadata_after=change.metadata_after or "",
            snapshot_before=change.snapshot_before, snapshot_after=change.snapshot_after,
            outcome=_outcome(change), error=change.error, started_at=started_at,
            finished_at=finished_at, duration_ms=duration))
    return entries
