"""Reads of the explorer's own records: task runs, the audit trail, a table's audit (Floe's
entries merged with the table's own history, so commits by other engines are not lost from
view), grants. Each list is filtered to the catalogs the user may read
(:func:`explorer.permissions.visible_catalogs`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db.models import QuerySet

from explorer import permissions
from explorer.models import AuditEntry, CatalogGrant, TaskRun
from floe.errors import NotFound, ValidationError
from floe.table import Table

__all__ = [
    "AUDIT_CSV_COLUMNS",
    "AuditRow",
    "audit_csv",
    "audit_entries",
    "audit_json",
    "grants_list",
    "table_audit",
    "task_run_get",
    "task_runs",
    "time_parse",
]

#: Snapshot summary keys that name the engine that wrote a snapshot (Spark writes
#: engine-name / engine-version / app-id; older writers spark.app.id).
ENGINE_KEYS = ("engine-name", "engine-version", "app-id", "spark.app.id", "iceberg-version")
#: Summary counts shown for each version of a table.
SUMMARY_COUNTS = ("added-data-files", "deleted-data-files", "added-delete-files",
                  "removed-delete-files", "added-records", "deleted-records",
                  "added-position-deletes", "added-files-size", "removed-files-size",
                  "total-records", "total-data-files")


def time_parse(value: str | None, what: str) -> dt.datetime | None:
    """Epoch milliseconds or ISO-8601 (UTC without an offset); None for empty."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        if text.lstrip("-").isdigit():
            return dt.datetime.fromtimestamp(int(text) / 1000, tz=dt.UTC)
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise ValidationError(f"{what} {text!r} is neither epoch milliseconds nor an ISO-8601 "
                              "time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _visible(qs: QuerySet[Any], user: Any) -> QuerySet[Any]:
    catalogs = permissions.visible_catalogs(user=user)
    return qs if catalogs is None else qs.filter(catalog__in=catalogs)


# --- task runs ---------------------------------------------------------------------------------


def task_runs(*, user: Any, catalog: str | None = None, namespace: str | None = None,
              table: str | None = None, created_by: str | None = None,
              state: str | None = None, kind: str | None = None) -> QuerySet[TaskRun]:
    """Task runs newest first, in catalogs the user may read, filtered by table, creator
    (user name), state, kind."""
    qs = _visible(TaskRun.objects.select_related("created_by"), user)
    if state and state.upper() not in TaskRun.State.values:
        raise ValidationError(f"state {state!r} is not one of {', '.join(TaskRun.State.values)}")
    if kind and kind not in TaskRun.Kind.values:
        raise ValidationError(f"kind {kind!r} is not one of {', '.join(TaskRun.Kind.values)}")
    for column, value in (("catalog", catalog), ("namespace", namespace), ("table", table),
                          ("created_by__username", created_by), ("kind", kind)):
        if value:
            qs = qs.filter(**{column: value})
    if state:
        qs = qs.filter(state=state.upper())
    return qs


def task_run_get(*, user: Any, task_run_id: Any) -> TaskRun:
    """One run the user may see (NotFound otherwise: a run of an unreadable catalog does not
    exist for them)."""
    try:
        return task_runs(user=user).get(pk=task_run_id)
    except (TaskRun.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"task run {task_run_id} does not exist") from None


# --- the audit trail ---------------------------------------------------------------------------


def audit_entries(*, user: Any, catalog: str | None = None, namespace: str | None = None,
                  table: str | None = None, actor: str | None = None,
                  action: str | None = None, since: dt.datetime | None = None,
                  until: dt.datetime | None = None) -> QuerySet[AuditEntry]:
    """Audit entries newest first, in catalogs the user may read, filtered by table, actor
    (user name), action (a task kind, grant_add, grant_remove) and time (``since`` inclusive,
    ``until`` exclusive, by when the change finished)."""
    qs = _visible(AuditEntry.objects.all(), user)
    for column, value in (("catalog", catalog), ("namespace", namespace), ("table", table),
                          ("actor_name", actor), ("action", action)):
        if value:
            qs = qs.filter(**{column: value})
    if since is not None:
        qs = qs.filter(finished_at__gte=since)
    if until is not None:
        qs = qs.filter(finished_at__lt=until)
    return qs


AUDIT_CSV_COLUMNS = (
    "id", "created_at", "actor_name", "actor_via", "action", "catalog", "namespace", "table",
    "outcome", "metadata_before", "metadata_after", "snapshot_before", "snapshot_after",
    "started_at", "finished_at", "duration_ms", "task_run_id", "error", "params", "result")


def _value(entry: AuditEntry, column: str) -> Any:
    value = getattr(entry, column)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    return {c: _value(entry, c) for c in AUDIT_CSV_COLUMNS}


def audit_csv(entries: Iterable[AuditEntry]) -> Iterator[str]:
    """CSV text, a header line then one line per entry (params and result as JSON)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(AUDIT_CSV_COLUMNS)
    yield flush()
    for entry in entries:
        row = audit_json(entry)
        row["params"] = json.dumps(row["params"], sort_keys=True)
        row["result"] = "" if row["result"] is None else json.dumps(row["result"], sort_keys=True)
        writer.writerow(["" if row[c] is None else row[c] for c in AUDIT_CSV_COLUMNS])
        yield flush()


# --- one table's audit: Floe's entries and the table's own history ------------------------------


@dataclass(frozen=True)
class AuditRow:
    """One line of a table's audit page, newest first.

    A metadata version of the table (``metadata_file`` set) is attributed to the Floe entry
    that produced it (``source="floe"``: its metadata_after, or a snapshot it committed) or to
    ``"external"`` (another engine: ``engine`` and the snapshot summary say what is known).
    A Floe entry that produced no version still in the metadata log (failed, cancelled, or
    older than the log) is a line of its own with ``metadata_file`` None or absent from the
    log."""

    timestamp_ms: int
    source: str
    metadata_file: str | None = None
    is_current: bool = False
    actor: str | None = None
    actor_via: str | None = None
    action: str | None = None
    outcome: str | None = None
    error: str = ""
    entry_id: int | None = None
    task_run_id: int | None = None
    snapshot_id: int | None = None
    operation: str | None = None
    engine: str | None = None
    current_snapshot_id: int | None = None
    summary: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _operation(snap: Any) -> str | None:
    op = snap.operation if snap is not None else None
    return None if op is None else str(getattr(op, "value", op))


def _engine(summary: dict[str, str]) -> str | None:
    parts = [f"{k}={summary[k]}" for k in ENGINE_KEYS if summary.get(k)]
    return ", ".join(parts) or None


def _ms(when: dt.datetime | None) -> int:
    return int(when.timestamp() * 1000) if when is not None else 0


def _made_by(entry: AuditEntry, snap: Any) -> bool:
    """Whether ``entry``'s run committed ``snap``: one of the snapshots it names (a
    compaction's, or the one it left current), written while it ran (a rollback leaves an
    old snapshot current; that one it did not write)."""
    ids = set((entry.result or {}).get("snapshot_ids") or [])
    if entry.snapshot_after is not None:
        ids.add(entry.snapshot_after)
    if snap.snapshot_id not in ids or entry.started_at is None:
        return False
    return _ms(entry.started_at) <= snap.timestamp_ms <= _ms(entry.finished_at)


def table_audit(*, table: Table, actor: str | None = None, action: str | None = None,
                source: str | None = None, since_ms: int | None = None,
                until_ms: int | None = None) -> list[AuditRow]:
    """Every metadata version in the table's metadata log (and the current one), each
    attributed to a Floe user or to "external", merged with Floe's entries for the table that
    made no version; newest first. Reads only the current metadata file (versions are matched
    to snapshots by commit time: a version that adds a snapshot has the snapshot's timestamp
    as its last-updated-ms, as Java and floe write them)."""
    md = table.metadata
    ns = ".".join(table.identifier.namespace)
    entries = list(AuditEntry.objects.filter(
        catalog=table.catalog.name, namespace=ns, table=table.identifier.name,
        action__in=TaskRun.Kind.values).order_by("created_at", "id"))
    by_after = {e.metadata_after: e for e in entries if e.metadata_after
                and e.metadata_after != e.metadata_before}
    added_at: dict[int, Any] = {s.timestamp_ms: s for s in md.snapshots}
    current_at = {e.timestamp_ms: e.snapshot_id for e in md.snapshot_log}
    versions = [(e.metadata_file, e.timestamp_ms) for e in md.metadata_log]
    versions.append((table.metadata_location, md.last_updated_ms))
    rows: list[AuditRow] = []
    used: set[int] = set()
    for location, ts in versions:
        snap = added_at.get(ts)
        entry = by_after.get(location) or (
            next((e for e in entries if _made_by(e, snap)), None) if snap is not None else None)
        summary = dict(snap.summary) if snap is not None else {}
        common: dict[str, Any] = dict(
            timestamp_ms=ts, metadata_file=location,
            is_current=location == table.metadata_location,
            snapshot_id=snap.snapshot_id if snap is not None else None,
            operation=_operation(snap),
            current_snapshot_id=current_at.get(ts),
            summary={k: summary[k] for k in SUMMARY_COUNTS if k in summary})
        if entry is None:
            rows.append(AuditRow(source="external", engine=_engine(summary), **common))
            continue
        used.add(entry.pk)
        rows.append(AuditRow(source="floe", actor=entry.actor_name, actor_via=entry.actor_via,
                             action=entry.action, outcome=entry.outcome, error=entry.error,
                             entry_id=entry.pk, task_run_id=entry.task_run_id,
                             engine=_engine(summary), **common))
    for entry in entries:
        if entry.pk in used:
            continue
        rows.append(AuditRow(
            timestamp_ms=_ms(entry.finished_at or entry.created_at), source="floe",
            metadata_file=entry.metadata_after or None, actor=entry.actor_name,
            actor_via=entry.actor_via, action=entry.action, outcome=entry.outcome,
            error=entry.error, entry_id=entry.pk, task_run_id=entry.task_run_id,
            current_snapshot_id=entry.snapshot_after))
    rows.sort(key=lambda r: (r.timestamp_ms, r.entry_id or 0), reverse=True)
    return [r for r in rows
            if (actor is None or r.actor == actor) and (action is None or r.action == action)
            and (source is None or r.source == source)
            and (since_ms is None or r.timestamp_ms >= since_ms)
            and (until_ms is None or r.timestamp_ms < until_ms)]


# --- grants ---------------------------------------------------------------------------------------


def grants_list(*, user: Any, catalog: str | None = None) -> QuerySet[CatalogGrant]:
    """The grants of the catalogs the user administers (every grant for admins of ``*``)."""
    qs = CatalogGrant.objects.select_related("user", "granted_by")
    if catalog:
        qs = qs.filter(catalog=catalog)
    if permissions.can_administer(user=user, catalog=CatalogGrant.EVERY_CATALOG):
        return qs
    names = set(qs.values_list("catalog", flat=True).distinct())
    allowed = [c for c in names if c != CatalogGrant.EVERY_CATALOG
               and permissions.can_administer(user=user, catalog=c)]
    return qs.filter(catalog__in=allowed)
