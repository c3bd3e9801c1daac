"""Reads of the explorer's own records: task runs, the audit trail, a table's audit (Floe's
entries merged with the table's own history, so commits by other engines are not lost from
view), grants. Each list is filtered to the catalogs the user may read
(:func:`explorer.access.permissions.visible_catalogs`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from django.db.models import QuerySet

from explorer.access import permissions
from explorer.models import REST_ACTIONS, REST_TABLE_ACTIONS, AuditEntry, CatalogGrant, TaskRun
from floe.diff import metadata_changes
from floe.errors import FloeError, NotFound, ValidationError
from floe.metadata import TableMetadata
from floe.table import Table

__all__ = [
    "AUDIT_CSV_COLUMNS",
    "AuditRow",
    "audit_csv",
    "audit_entries",
    "audit_json",
    "audit_rows_described",
    "entry_words",
    "grants_list",
    "summary_engine",
    "table_audit",
    "task_run_get",
    "task_runs",
    "time_parse",
]

#: Snapshot summary keys that name the engine that wrote a snapshot. Spark 3.5 with Iceberg
#: 1.10 writes engine-name=spark, engine-version=3.5.8, iceberg-version="Apache Iceberg 1.10.2
#: (commit …)", app-id and spark.app.id; Flink and Trino write engine-name / engine-version;
#: floe writes engine-name=floe and its version (its Spark data source also
#: floe.spark.write-id). PyIceberg (0.12) writes no engine key.
ENGINE_KEYS = ("engine-name", "engine-version", "app-id", "spark.app.id", "iceberg-version",
               "floe.spark.write-id")
#: How engine-name values are written for people.
ENGINE_NAMES = {"floe": "Floe", "spark": "Spark", "flink": "Flink", "trino": "Trino", "presto": "Presto",
                "hive": "Hive", "impala": "Impala", "dremio": "Dremio", "snowflake": "Snowflake"}
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
    "id", "created_at", "actor_name", "actor_via", "action", "description", "catalog",
    "namespace", "table",
    "outcome", "metadata_before", "metadata_after", "snapshot_before", "snapshot_after",
    "started_at", "finished_at", "duration_ms", "task_run_id", "error", "params", "result")


def _value(entry: AuditEntry, column: str) -> Any:
    if column == "description":
        return entry_words(entry)
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
    #: What happened, in words (:func:`audit_rows_described` fills it for versions, from the
    #: metadata before and after; a Floe entry that made no version has its entry's words).
    description: str = ""
    #: The version before this one in the metadata log (None: the first one the log keeps).
    previous_file: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _operation(snap: Any) -> str | None:
    op = snap.operation if snap is not None else None
    return None if op is None else str(getattr(op, "value", op))


def summary_engine(summary: dict[str, str]) -> str | None:
    """The engine a snapshot summary names, for people: ``Spark 3.5.8 · Apache Iceberg 1.10.2
    · app local-1795631505398``, ``Floe 0.1.0``; None when it names none (PyIceberg)."""
    parts: list[str] = []
    name = (summary.get("engine-name") or "").strip()
    if name:
        version = (summary.get("engine-version") or "").strip()
        parts.append(f"{ENGINE_NAMES.get(name.lower(), name)} {version}".strip())
    if summary.get("floe.spark.write-id"):
        parts.append("Spark through floe's data source")
    library = (summary.get("iceberg-version") or "").strip()
    if library:
        parts.append(library.split(" (commit", 1)[0])
    app = summary.get("spark.app.id") or summary.get("app-id")
    if app:
        parts.append(f"app {app}")
    return " · ".join(parts) or None


def _rest_engine(entry: AuditEntry) -> str | None:
    """The client a change through the Iceberg REST catalog came from (its headers)."""
    engine = (entry.params or {}).get("engine") if entry.actor_via == "rest" else None
    return str(engine) if engine else None


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
    as its last-updated-ms, as Java and floe write them); :func:`audit_rows_described` then
    says what each version of a page did."""
    md = table.metadata
    ns = ".".join(table.identifier.namespace)
    entries = list(AuditEntry.objects.filter(
        catalog=table.catalog.name, namespace=ns, table=table.identifier.name,
        action__in=[*TaskRun.Kind.values, *REST_TABLE_ACTIONS]).order_by("created_at", "id"))
    by_after = {e.metadata_after: e for e in entries if e.metadata_after
                and e.metadata_after != e.metadata_before}
    added_at: dict[int, Any] = {s.timestamp_ms: s for s in md.snapshots}
    current_at = {e.timestamp_ms: e.snapshot_id for e in md.snapshot_log}
    versions = [(e.metadata_file, e.timestamp_ms) for e in md.metadata_log]
    versions.append((table.metadata_location, md.last_updated_ms))
    rows: list[AuditRow] = []
    used: set[int] = set()
    for i, (location, ts) in enumerate(versions):
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
            summary={k: summary[k] for k in SUMMARY_COUNTS if k in summary},
            previous_file=versions[i - 1][0] if i else None)
        if entry is None:
            rows.append(AuditRow(source="external", engine=summary_engine(summary), **common))
            continue
        used.add(entry.pk)
        rows.append(AuditRow(source="floe", actor=entry.actor_name, actor_via=entry.actor_via,
                             action=entry.action, outcome=entry.outcome, error=entry.error,
                             entry_id=entry.pk, task_run_id=entry.task_run_id,
                             engine=summary_engine(summary) or _rest_engine(entry), **common))
    for entry in entries:
        if entry.pk in used:
            continue
        rows.append(AuditRow(
            timestamp_ms=_ms(entry.finished_at or entry.created_at), source="floe",
            metadata_file=entry.metadata_after or None, actor=entry.actor_name,
            actor_via=entry.actor_via, action=entry.action, outcome=entry.outcome,
            error=entry.error, entry_id=entry.pk, task_run_id=entry.task_run_id,
            current_snapshot_id=entry.snapshot_after, description=entry_words(entry)))
    rows.sort(key=lambda r: (r.timestamp_ms, r.entry_id or 0), reverse=True)
    return [r for r in rows
            if (actor is None or r.actor == actor) and (action is None or r.action == action)
            and (source is None or r.source == source)
            and (since_ms is None or r.timestamp_ms >= since_ms)
            and (until_ms is None or r.timestamp_ms < until_ms)]


def _metadata_at(table: Table, location: str) -> TableMetadata:
    """A metadata file of the table, read through its confined io, parsed once per path
    (metadata files never change)."""
    if location == table.metadata_location:
        return table.metadata
    return table.catalog.read_metadata(location)


def _version_words(table: Table, row: AuditRow) -> str:
    """What the version ``row`` made did: its metadata compared with the one before it (the
    previous entry of the log; for the oldest the log keeps, the file its own log names)."""
    assert row.metadata_file is not None
    try:
        after = _metadata_at(table, row.metadata_file)
        previous = row.previous_file
        if previous is None and after.metadata_log:
            previous = after.metadata_log[-1].metadata_file
        if previous is None:
            return "; ".join(metadata_changes(None, after))
        try:
            before = _metadata_at(table, previous)
        except (FloeError, OSError) as exc:
            return (f"cannot tell what changed: the version before it cannot be read ({exc})")
        return "; ".join(metadata_changes(before, after))
    except (FloeError, OSError) as exc:
        return f"cannot tell what changed: {exc}"


def audit_rows_described(*, table: Table, rows: Iterable[AuditRow]) -> list[AuditRow]:
    """``rows`` with ``description`` filled for the versions among them (each read with the
    version before it: call it for the rows a page shows, not for a whole long log)."""
    return [replace(r, description=_version_words(table, r))
            if r.metadata_file is not None and not r.description else r for r in rows]


# --- an entry in words ----------------------------------------------------------------------------


def _where(catalog: str) -> str:
    return "every catalog" if catalog == CatalogGrant.EVERY_CATALOG else f"catalog {catalog}"


def _count(value: Any) -> int | None:
    """A count in a task result: a number, or a capped list ``{"count": n, …}``."""
    if isinstance(value, dict):
        value = value.get("count")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _task_words(entry: AuditEntry) -> str:
    """A succeeded task's change, from its parameters and result."""
    p, r, kind = entry.params or {}, entry.result or {}, entry.action
    K = TaskRun.Kind
    name, sid = p.get("name"), p.get("snapshot_id")
    before, after = entry.snapshot_before, entry.snapshot_after
    ref_at = (r.get("refs") or {}).get(name) if name else None
    since = f" from {before}" if before is not None else ""
    if kind == K.ROLLBACK:
        return f"rolled back main{since} to {after}"
    if kind == K.SET_CURRENT:
        return f"set main{since} to {after}"
    if kind == K.CHERRY_PICK:
        return f"cherry-picked {sid} onto main (now {after})"
    if kind in (K.BRANCH_CREATE, K.TAG_CREATE):
        what = "branch" if kind == K.BRANCH_CREATE else "tag"
        return f"{what} {name} created on {ref_at if ref_at is not None else sid or after}"
    if kind in (K.BRANCH_REPLACE, K.TAG_REPLACE):
        what = "branch" if kind == K.BRANCH_REPLACE else "tag"
        return f"{what} {name} moved to {sid}"
    if kind == K.BRANCH_RENAME:
        return f"branch {name} renamed to {p.get('new_name')}"
    if kind in (K.BRANCH_REMOVE, K.TAG_REMOVE):
        return f"{'branch' if kind == K.BRANCH_REMOVE else 'tag'} {name} removed"
    if kind == K.BRANCH_FAST_FORWARD:
        return f"fast-forwarded {name} to {p.get('to')}"
    if kind == K.REF_RETENTION:
        return f"retention of {name} changed"
    if kind == K.EVOLVE:
        changes = [f"{c.get('op')} {c.get('path') or c.get('term') or c.get('field') or ''}"
                   .strip() for c in p.get("changes") or [] if isinstance(c, dict)]
        return "evolved: " + ", ".join(changes)
    if kind == K.DELETE_ROWS:
        summary = r.get("summary") or {}
        rows = summary.get("deleted-records") or summary.get("added-position-deletes")
        return (f"deleted rows where {p.get('filter')}"
                + (f" ({int(rows):,} rows)" if str(rows or "").isdigit() else ""))
    if kind == K.COMPACT:
        n, m = _count(r.get("rewritten_data_files_count")), _count(r.get("added_data_files_count"))
        return (f"compacted {_plural(n, 'data file')} into {m:,}" if n is not None and m is not None
                else "compacted data files")
    if kind == K.REWRITE_MANIFESTS:
        n, m = _count(r.get("rewritten_manifests")), _count(r.get("added_manifests"))
        return (f"rewrote {_plural(n, 'manifest')} into {m:,}" if n is not None and m is not None
                else "rewrote manifests")
    if kind == K.EXPIRE:
        n, files = _count(r.get("expired_snapshot_ids")), _count(r.get("deleted_files"))
        return ", ".join(w for w in (
            f"expired {_plural(n, 'snapshot')}" if n is not None else "expired snapshots",
            f"deleted {_plural(files, 'file')}" if files is not None else "") if w)
    if kind == K.ORPHANS:
        files = _count(r.get("deleted_files"))
        return (f"removed {_plural(files, 'orphan file')}" if files is not None
                else "removed orphan files")
    if kind == K.COMPUTE_PARTITION_STATS:
        return f"partition statistics written for snapshot {r.get('snapshot_id') or after}"
    return str(TaskRun.Kind(kind).label) if kind in TaskRun.Kind.values else kind


_ACCESS_WORDS = {
    "grant_add": "gave {user} the {role} role on {where}",
    "grant_remove": "took the {role} role on {where} from {user}",
    "user_create": "created user {user}",
    "user_deactivate": "deactivated user {user}",
    "user_activate": "reactivated user {user}",
    "token_create": "created an API token for {user}",
    "token_revoke": "revoked the API token of {user}",
}


_REST_WORDS = {
    "rest_commit": "committed {updates}",
    "rest_create_table": "created the table",
    "rest_register_table": "registered the table from {metadata_location}",
    "rest_rename_table": "renamed the table to {to}",
    "rest_drop_table": "dropped the table{purged}",
    "rest_create_namespace": "created the namespace",
    "rest_drop_namespace": "dropped the namespace",
    "rest_update_namespace_properties": "changed the namespace's properties",
}


def _rest_words(entry: AuditEntry) -> str:
    """A change made through the Iceberg REST catalog: what, through which client."""
    p = entry.params or {}
    updates = p.get("updates") if isinstance(p.get("updates"), list) else []
    words = _REST_WORDS[entry.action].format(
        updates=", ".join(str(u) for u in updates) or "no change",
        metadata_location=p.get("metadata_location", "?"), to=p.get("to", "?"),
        purged=" and purged its files" if p.get("purge") else "")
    if entry.outcome != AuditEntry.Outcome.SUCCEEDED:
        words += f": {p.get('outcome') or entry.outcome}"
    engine = p.get("engine")
    return f"{words} through the REST catalog" + (f" ({engine})" if engine else "")


def entry_words(entry: AuditEntry) -> str:
    """What an audit entry records, in words: ``tag v1 created on 2571…``, ``rolled back main
    from A to B``, ``compacted 144 data files into 36``, ``gave bob the maintainer role on
    catalog local``; a run that did not succeed says what it was asked and how it ended."""
    if entry.action in REST_ACTIONS:
        return _rest_words(entry)
    p = entry.params or {}
    if p.get("policy") and entry.actor_via == "policy":  # "policy 'x' on web.* compacted …"
        asked = {k: v for k, v in p.items() if k not in ("policy", "policy_tables")}
        plain = AuditEntry(action=entry.action, params=asked, outcome=entry.outcome,
                           result=entry.result, catalog=entry.catalog,
                           namespace=entry.namespace, table=entry.table,
                           snapshot_before=entry.snapshot_before,
                           snapshot_after=entry.snapshot_after,
                           metadata_before=entry.metadata_before,
                           metadata_after=entry.metadata_after)
        return f"policy '{p['policy']}' on {p.get('policy_tables') or '*'} {entry_words(plain)}"
    template = _ACCESS_WORDS.get(entry.action)
    if template is not None:
        return template.format(user=p.get("user", "?"), role=p.get("role", "?"),
                               where=_where(entry.catalog))
    if entry.outcome == AuditEntry.Outcome.SUCCEEDED:
        return _task_words(entry)
    label = (str(TaskRun.Kind(entry.action).label) if entry.action in TaskRun.Kind.values
             else entry.action)
    asked = ", ".join(f"{k} {v}" for k, v in sorted(p.items())
                      if k not in ("catalog", "namespace", "table") and not isinstance(
                          v, (dict, list)) and v not in (None, ""))
    return f"{label}{f' ({asked})' if asked else ''}: {entry.outcome}"


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
