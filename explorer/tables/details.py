"""Reads for one table's pages and API: overview, health, timeline, snapshots, manifests,
files, history and diffs. Every function takes the :class:`floe.table.Table` that
:func:`explorer.tables.selectors.table_load` opened and reads through its ``io`` (which refuses
files outside the catalog's warehouse).

Every number comes from :mod:`floe.inspect` / :mod:`floe.diff` / :mod:`floe.health` (what the
``floe`` command prints). Cost rules (ARCHITECTURE.md): values derived from the metadata,
manifest lists and decoded manifests are cached by file path in :mod:`explorer.cache`
(bounded), a page reads at most the manifests it shows, long lists are paged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pyarrow as pa

from django.utils.safestring import SafeString

from explorer.cache import CACHE
from explorer.catalogs import table_moved
from explorer.sorting import by_key, sort_rows
from explorer.tables import charts, selectors
from explorer.units import sizes_in_text
from floe import inspect
from floe.diff import schema_for_snapshot, schema_history, snapshot_diff, spec_history
from floe.errors import FloeError, NotFound, ValidationError
from floe.health import table_health
from floe.inspect import file_row
from floe.live_rows import live_rows
from floe.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest_list,
)
from floe.scan.manifests import read_entries
from floe.schema import Schema
from floe.snapshots import Snapshot
from floe.table import Table
from floe.types import ListType, MapType, NestedField, StructType

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Health reads the current data manifests only when they hold at most this many entries.
HEALTH_MAX_FILES = 20_000
#: The overview counts live rows (floe.live_rows) when the current snapshot has at most this
#: many files and its data files with deletes hold at most this many rows (read once per
#: metadata file: the count is cached).
LIVE_COUNT_MAX_FILES = 1_000
LIVE_COUNT_MAX_ROWS = 200_000
#: Parent chain shown on a snapshot page.
PARENT_CHAIN_LIMIT = 50

STATUS_NAMES = {s.value: s.name.lower() for s in ManifestEntryStatus}
ENTRY_SORTS = ("file_path", "record_count", "file_size_in_bytes", "sequence_number", "status")


# --- cached reads -----------------------------------------------------------------------------


def _cached(table: Table, what: str, build: Callable[[], T]) -> T:
    """A value derived from the table's (immutable) current metadata file."""
    return CACHE.derived.get_or_load((table.metadata_location, what), build)  # type: ignore[no-any-return]


def _by_id(table: Table) -> dict[int, Snapshot]:
    """Snapshots by id (TableMetadata.snapshot_by_id scans: fine once, not per ancestor)."""
    return _cached(table, "by-id", lambda: {s.snapshot_id: s for s in table.metadata.snapshots})


def _ancestors(table: Table, snapshot_id: int) -> Iterable[Snapshot]:
    by_id = _by_id(table)
    seen: set[int] = set()
    snap = by_id.get(snapshot_id)
    while snap is not None and snap.snapshot_id not in seen:
        yield snap
        seen.add(snap.snapshot_id)
        snap = by_id.get(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None


def snapshot_get(*, table: Table, snapshot_id: int) -> Snapshot:
    snap = _by_id(table).get(snapshot_id)
    if snap is None:
        raise NotFound(f"snapshot {snapshot_id} does not exist in table {table.identifier}")
    return snap


#: Characters of a metadata file the metadata page shows (a file of 10k snapshots is large).
METADATA_TEXT_LIMIT = 1_000_000


def metadata_file_text(*, table: Table, path: str | None) -> dict[str, Any]:
    """A metadata file of the table, pretty-printed: the current one, or one its metadata log
    names (no other path is read), through the table's confined ``io``."""
    md = table.metadata
    known = {table.metadata_location, *(e.metadata_file for e in md.metadata_log)}
    path = path or table.metadata_location
    if path not in known:
        raise NotFound(f"{path} is not a metadata file of {table.identifier}"
                       " (neither the current one nor one of its metadata log)")
    raw = table.io.read(path)
    try:
        text = json.dumps(json.loads(raw), indent=2)
    except ValueError:
        text = raw.decode("utf-8", "replace")
    return {"path": path, "is_current": path == table.metadata_location, "bytes": len(raw),
            "text": text[:METADATA_TEXT_LIMIT], "truncated": len(text) > METADATA_TEXT_LIMIT}


def snapshot_id_of(*, table: Table, text: str | None, param: str) -> int:
    """The snapshot a query parameter names: a snapshot id, or a branch or tag name (as the
    scan plan and the preview take them). ValidationError naming ``param`` otherwise; an id
    that is no snapshot of the table is NotFound later, from :func:`snapshot_get`."""
    text = (text or "").strip()
    if not text:
        raise ValidationError(
            f"query parameter {param!r} is required: a snapshot id, a branch or a tag")
    ref = table.metadata.refs.get(text)
    if ref is not None:
        return ref.snapshot_id
    try:
        return int(text)
    except ValueError:
        known = ", ".join(sorted(table.metadata.refs)) or "none"
        raise ValidationError(
            f"query parameter {param!r}: {text!r} is neither a snapshot id nor a branch or tag"
            f" of {table.identifier} (its refs: {known})") from None


def _manifest_list(table: Table, snapshot: Snapshot) -> list[ManifestFile]:
    path = snapshot.manifest_list
    if not path:
        raise ValidationError(
            f"snapshot {snapshot.snapshot_id} lists its manifests inline (format v1 without a "
            "manifest list), which floe does not read")
    table.io.guard(path)  # before the cache (floe.io.FileIO.guard)
    return CACHE.derived.get_or_load(  # type: ignore[no-any-return]
        (path, "manifest-list"), lambda: read_manifest_list(table.io, path))


def _manifest_entries(table: Table, manifest: ManifestFile) -> list[ManifestEntry]:
    """Every entry (all statuses) of one manifest, cached by path."""
    table.io.guard(manifest.manifest_path)
    return CACHE.entries.get_or_load(manifest.manifest_path,
                                     lambda: read_entries(table.io, manifest))


def _live(table: Table, manifest: ManifestFile) -> Iterable[ManifestEntry]:
    return (e for e in _manifest_entries(table, manifest) if e.status != ManifestEntryStatus.DELETED)


# --- overview ---------------------------------------------------------------------------------


def schema_tree(schema: Schema) -> list[dict[str, Any]]:
    """A schema's fields as rows of a tree (depth, id, name, dotted path, type, required,
    doc), parents before children: the overview's schema table and the evolve preview's."""
    return _schema_tree(schema.as_struct().fields)


def schema_tree_marked(*, before: Schema, after: Schema) -> list[dict[str, Any]]:
    """``after`` as :func:`schema_tree` rows, each with a ``mark``: "added" (a field id
    ``before`` lacks), "changed" (its path, type, requiredness or doc differ) or ""."""
    old = {r["field_id"]: r for r in schema_tree(before)}
    rows = []
    for row in schema_tree(after):
        was = old.get(row["field_id"])
        mark = "added" if was is None else "changed" if any(
            was[k] != row[k] for k in ("path", "type", "required", "doc")) else ""
        rows.append({**row, "mark": mark})
    return rows


def _schema_tree(fields: Iterable[NestedField], depth: int = 0, prefix: str = "") -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for f in fields:
        t = f.field_type
        kind = "struct" if isinstance(t, StructType) else "list" if isinstance(t, ListType) \
            else "map" if isinstance(t, MapType) else str(t)
        rows.append({"depth": depth, "field_id": f.field_id, "name": f.name, "path": prefix + f.name,
                     "type": kind, "required": f.required, "doc": f.doc})
        children: list[NestedField] = []
        if isinstance(t, StructType):
            children = list(t.fields)
        elif isinstance(t, ListType):
            children = [NestedField(t.element_id, "element", t.element_type, t.element_required)]
        elif isinstance(t, MapType):
            children = [NestedField(t.key_id, "key", t.key_type, True),
                        NestedField(t.value_id, "value", t.value_type, t.value_required)]
        rows += _schema_tree(children, depth + 1, prefix + f.name + ".")
    return rows


def table_overview(*, table: Table) -> dict[str, Any]:
    """``floe describe`` plus the current schema as a tree, refs with their snapshots, the
    totals of the current snapshot's summary and, for a table moved or copied without
    rewriting its metadata, where that metadata points (explorer.catalogs.table_moved)."""
    md = table.metadata
    described = inspect.describe(md, table.metadata_location)
    current = md.current_snapshot()
    summary = dict(current.summary) if current is not None else {}
    refs = []
    for ref in described["refs"]:
        snap = _by_id(table).get(ref["snapshot_id"])
        refs.append({**ref, "timestamp_ms": snap.timestamp_ms if snap else None,
                     "time": iso_time(snap.timestamp_ms if snap else None),
                     "operation": snap.summary.get("operation") if snap else None})
    totals = {key.replace("-", "_"): _int_or_none(summary.get(key)) for key in (
        "total-records", "total-data-files", "total-delete-files", "total-files-size",
        "total-position-deletes", "total-equality-deletes")}
    totals.update(live_rows_get(table=table))
    return {
        **described,
        "refs": refs,
        "schema_tree": schema_tree(md.schema()),
        "spec_list": spec_history(md),
        "order_list": [
            {"order_id": o.order_id, "is_default": o.order_id == md.default_sort_order_id,
             "fields": [f"{f.transform}({md.schema().find_column_name(f.source_id) or f.source_id}) "
                        f"{f.direction} {f.null_order}" for f in o.fields]}
            for o in md.sort_orders],
        "totals": totals,
        "moved": table_moved(table),
    }


def live_rows_get(*, table: Table) -> dict[str, Any]:
    """The rows a read of the current state returns (floe.live_rows): from the summary when
    it has no delete files, counted when the work is bounded, else bounds. ``live_records``
    is the exact count or None; ``live_min``/``live_max`` bound it; ``live_how`` says which.
    Cached per metadata file; a file that cannot be read leaves the bounds."""
    def load() -> dict[str, Any]:
        try:
            rows = live_rows(table.io, table.metadata, max_files=LIVE_COUNT_MAX_FILES,
                             max_rows=LIVE_COUNT_MAX_ROWS, cache=CACHE.live)
        except (FloeError, OSError, pa.ArrowException) as exc:
            logger.warning("live rows of %s not counted: %s", table.identifier, exc)
            rows = live_rows(table.io, table.metadata, max_files=0)
        return {"live_records": rows.count, "live_exact": rows.exact, "live_min": rows.low,
                "live_max": rows.high, "live_how": rows.how,
                "live_files_read": rows.files_read}
    return _cached(table, "live-rows", load)


def iso_time(ms: int | None) -> str | None:
    """A commit time for people: UTC, to the second."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def health_inputs(table: Table, *, file_sizes: bool = True
                  ) -> tuple[list[ManifestFile] | None, list[int] | None, str | None]:
    """What health is judged from beyond the metadata: the current manifest list (one read)
    and, with ``file_sizes``, the live data files' sizes, read only when the list's counts
    say they are at most HEALTH_MAX_FILES (else None); and the error that left them unknown
    (health is a side matter: an unreadable manifest leaves its numbers unknown)."""
    current = table.metadata.current_snapshot()
    manifests: list[ManifestFile] | None = None
    sizes: list[int] | None = None
    try:
        manifests = _manifest_list(table, current) if current is not None else []
        data = [m for m in manifests if m.content == ManifestContent.DATA]
        counts = [(m.added_files_count, m.existing_files_count) for m in data]
        if file_sizes and all(a is not None and e is not None for a, e in counts) and \
                sum((a or 0) + (e or 0) for a, e in counts) <= HEALTH_MAX_FILES:
            sizes = [e.data_file.file_size_in_bytes for m in data for e in _live(table, m)]
    except FloeError as exc:
        logger.warning("health of %s: %s", table.identifier, exc)
        return manifests, None, str(exc)
    return manifests, sizes, None


def table_health_get(*, table: Table) -> list[dict[str, Any]]:
    """Health of the current state: one manifest-list read, plus the current data manifests
    only when the list's counts say they hold at most HEALTH_MAX_FILES live files."""
    manifests, sizes, error = health_inputs(table)
    metrics = table_health(table.metadata, now_ms=int(time.time() * 1000),
                           manifests=manifests, data_file_sizes=sizes)
    if error is not None:
        metrics.append({"key": "unreadable", "label": "Unreadable metadata", "value": None,
                        "threshold": "every file of the current snapshot is readable",
                        "status": "warn", "detail": error})
    for m in metrics:
        v = m["value"]
        m["display"] = "—" if v is None else f"{v:.1%}" if isinstance(v, float) else str(v)
        for key in ("threshold", "detail"):  # the core counts bytes; people read KiB, MiB
            if isinstance(m.get(key), str):
                m[key] = sizes_in_text(m[key])
    return metrics


# --- timeline ---------------------------------------------------------------------------------


#: Timeline columns; from ``added_records`` on, each is the summary key with '-' for '_'.
TIMELINE_COLUMNS = (
    "snapshot_id", "timestamp_ms", "operation", "lane", "added_records", "deleted_records",
    "added_data_files", "deleted_data_files", "added_delete_files", "removed_delete_files",
    "total_records", "total_data_files", "total_delete_files", "total_files_size",
)


def snapshot_timeline(*, table: Table) -> dict[str, Any]:
    return _cached(table, "timeline", lambda: _timeline(table))


def snapshot_charts(*, table: Table) -> dict[str, SafeString]:
    """The timeline's charts as the server draws them (explorer.tables.charts), shown until
    plotly's take their place."""
    def build() -> dict[str, SafeString]:
        timeline = snapshot_timeline(table=table)
        return {"timeline": charts.timeline_svg(timeline), "totals": charts.totals_svg(timeline)}
    return _cached(table, "timeline-charts", build)


def _timeline(table: Table) -> dict[str, Any]:
    """Chart data from snapshot summaries only (no manifest is read): one point per snapshot
    in the lane of the first branch whose history holds it, tags as their own lanes."""
    md = table.metadata
    branches = sorted((n for n, r in md.refs.items() if r.is_branch), key=lambda n: (n != "main", n))
    tags = sorted(n for n, r in md.refs.items() if r.is_tag)
    lane_of: dict[int, str] = {}
    for name in branches:
        for snap in _ancestors(table, md.refs[name].snapshot_id):
            if snap.snapshot_id in lane_of:
                break  # the rest of this history is already in an earlier lane
            lane_of[snap.snapshot_id] = name
    # Columnar (one array per field) keeps 10k snapshots to well under a megabyte of JSON.
    cols: dict[str, list[Any]] = {k: [] for k in TIMELINE_COLUMNS}
    lanes = [*branches, "(no branch)", *(f"tag: {n}" for n in tags)]
    current = None
    for i, row in enumerate(inspect.snapshot_rows(md)):
        s = row["summary"]
        cols["snapshot_id"].append(str(row["snapshot_id"]))
        cols["timestamp_ms"].append(row["timestamp_ms"])
        cols["operation"].append(row["operation"] or "unknown")
        cols["lane"].append(lanes.index(lane_of.get(row["snapshot_id"], "(no branch)")))
        for key in TIMELINE_COLUMNS[4:]:
            cols[key].append(_int_or_none(s.get(key.replace("_", "-"))))
        if row["is_current"]:
            current = i
    if lanes.index("(no branch)") not in cols["lane"]:  # drop the lane when nobody is in it
        gap = lanes.index("(no branch)")
        lanes.pop(gap)
        cols["lane"] = [lane - (lane > gap) for lane in cols["lane"]]
    # Every ref's head is marked in its own lane (a branch sharing main's history has no
    # points of its own, but still shows where it points).
    by_id = _by_id(table)
    tag_points = [{"tag": n, "kind": "tag" if md.refs[n].is_tag else "branch",
                   "snapshot_id": str(md.refs[n].snapshot_id),
                   "timestamp_ms": by_id[md.refs[n].snapshot_id].timestamp_ms,
                   "lane": lanes.index(f"tag: {n}" if md.refs[n].is_tag else n)}
                  for n in [*branches, *tags] if md.refs[n].snapshot_id in by_id]
    # The totals chart draws one line per branch along its own ancestry (a snapshot shared by
    # two branches is on both lines): joining every snapshot in time order would draw drops
    # between branches that no branch ever had.
    index = {int(sid): i for i, sid in enumerate(cols["snapshot_id"])}
    lineages = []
    on_a_branch: set[int] = set()
    for name in branches:
        points = [index[s.snapshot_id] for s in _ancestors(table, md.refs[name].snapshot_id)
                  if s.snapshot_id in index]
        on_a_branch.update(points)
        lineages.append({"name": name, "points": sorted(points, key=lambda i: (
            cols["timestamp_ms"][i], i))})
    if not branches and md.current_snapshot_id is not None:
        points = [index[s.snapshot_id] for s in _ancestors(table, md.current_snapshot_id)
                  if s.snapshot_id in index]
        on_a_branch.update(points)
        lineages.append({"name": "current", "points": sorted(points)})
    orphans = [i for i in range(len(cols["snapshot_id"])) if i not in on_a_branch]
    if orphans:
        lineages.append({"name": "(no branch)", "points": orphans, "unjoined": True})
    return {"columns": cols, "count": len(cols["snapshot_id"]), "current": current,
            "tags": tag_points, "lanes": lanes, "lineages": lineages}


# --- snapshots, manifests, files -----------------------------------------------------------


def snapshot_list(*, table: Table) -> list[dict[str, Any]]:
    """``floe snapshots`` rows, newest first."""
    return _cached(table, "snapshots",
                   lambda: [_with_display(r) for r in reversed(inspect.snapshot_rows(table.metadata))])


def _with_display(row: dict[str, Any]) -> dict[str, Any]:
    s = row["summary"]
    return {**row, "time": iso_time(row["timestamp_ms"]),
            "added_records": _int_or_none(s.get("added-records")),
            "deleted_records": _int_or_none(s.get("deleted-records")),
            "total_records": _int_or_none(s.get("total-records"))}


def snapshot_row(*, table: Table, snapshot_id: int) -> dict[str, Any]:
    snap = snapshot_get(table=table, snapshot_id=snapshot_id)
    return _with_display({
        "snapshot_id": snap.snapshot_id,
        "parent_id": snap.parent_snapshot_id,
        "sequence_number": snap.sequence_number,
        "timestamp_ms": snap.timestamp_ms,
        "operation": snap.summary.get("operation"),
        "summary": dict(snap.summary),
        "manifest_list": snap.manifest_list,
        "schema_id": snap.schema_id,
        "is_current": snap.snapshot_id == table.metadata.current_snapshot_id,
    })


def snapshot_parents(*, table: Table, snapshot_id: int, limit: int = PARENT_CHAIN_LIMIT
                     ) -> tuple[list[dict[str, Any]], bool]:
    """The first ``limit`` ancestors (the snapshot excluded) and whether there are more."""
    chain: list[dict[str, Any]] = []
    for snap in _ancestors(table, snapshot_id):
        if snap.snapshot_id == snapshot_id:
            continue
        if len(chain) == limit:
            return chain, True
        chain.append({"snapshot_id": snap.snapshot_id, "timestamp_ms": snap.timestamp_ms,
                      "time": iso_time(snap.timestamp_ms),
                      "operation": snap.summary.get("operation")})
    return chain, False


def snapshot_manifests(*, table: Table, snapshot_id: int) -> list[dict[str, Any]]:
    """``floe manifests`` rows (floe.inspect.manifest_rows), cached by manifest-list path."""
    snap = snapshot_get(table=table, snapshot_id=snapshot_id)
    return _cached(table, f"manifests:{snap.snapshot_id}", lambda: inspect.manifest_rows(
        table.io, table.metadata, snap, _manifest_list(table, snap)))


def manifest_at(*, table: Table, snapshot_id: int, index: int) -> ManifestFile:
    manifests = _manifest_list(table, snapshot_get(table=table, snapshot_id=snapshot_id))
    if not 0 <= index < len(manifests):
        raise NotFound(f"snapshot {snapshot_id} has no manifest #{index} ({len(manifests)} manifests)")
    return manifests[index]


def manifest_entry_rows(
    *, table: Table, snapshot_id: int, index: int, status: str = "", content: str = "",
    text: str = "", sort: str = "", descending: bool = False,
) -> list[dict[str, Any]]:
    """Entries of ONE manifest (all statuses), filtered (status, content, ``text`` in the
    file path or the partition, case-insensitive) and sorted (explorer.sorting); each row is
    a ``floe files`` row plus its position in the manifest and its status name."""
    manifest = manifest_at(table=table, snapshot_id=snapshot_id, index=index)
    ptypes: dict[int, StructType] = {}
    needle = text.lower()
    rows = []
    for pos, entry in enumerate(_manifest_entries(table, manifest)):
        row = file_row(table.metadata, manifest, entry, ptypes)
        row["position"] = pos
        row["status_name"] = STATUS_NAMES.get(row["status"], str(row["status"]))
        if status and row["status_name"] != status:
            continue
        if content and row["content"] != content:
            continue
        if needle and needle not in row["file_path"].lower() and needle not in " ".join(
                f"{k}={v}" for k, v in (row["partition"] or {}).items()).lower():
            continue
        rows.append(row)
    return sort_rows(rows, by_key(sort), descending) if sort in ENTRY_SORTS else rows


def file_detail(*, table: Table, snapshot_id: int, index: int, position: int) -> dict[str, Any]:
    """One data or delete file with its column statistics decoded by the schema the
    snapshot was written with (its schema id)."""
    snap = snapshot_get(table=table, snapshot_id=snapshot_id)
    manifest = manifest_at(table=table, snapshot_id=snapshot_id, index=index)
    entries = _manifest_entries(table, manifest)
    if not 0 <= position < len(entries):
        raise NotFound(f"manifest {manifest.manifest_path} has no entry #{position}")
    entry = entries[position]
    schema = schema_for_snapshot(table.metadata, snap)
    row = file_row(table.metadata, manifest, entry)
    row["status_name"] = STATUS_NAMES.get(row["status"], str(row["status"]))
    df = entry.data_file
    return {
        "file": row,
        "schema_id": schema.schema_id,
        "sort_order_id": df.sort_order_id,
        "split_offsets": list(df.split_offsets or []),
        "referenced_data_file": df.referenced_data_file,
        "columns": inspect.column_stats(schema, entry),
    }


def snapshot_file_count(*, table: Table, snapshot_id: int) -> int:
    snap = snapshot_get(table=table, snapshot_id=snapshot_id)
    total = 0
    for m in _manifest_list(table, snap):
        if m.added_files_count is None or m.existing_files_count is None:
            total += sum(1 for _ in _live(table, m))
        else:
            total += m.added_files_count + m.existing_files_count
    return total


def snapshot_file_page(*, table: Table, snapshot_id: int, offset: int, limit: int
                       ) -> list[dict[str, Any]]:
    """Rows ``offset``…``offset+limit`` of ``floe files`` for a snapshot (same order), reading
    only the manifests that hold them (the manifest list's counts locate the page)."""
    snap = snapshot_get(table=table, snapshot_id=snapshot_id)
    rows: list[dict[str, Any]] = []
    seen = 0
    ptypes: dict[int, StructType] = {}
    for m in _manifest_list(table, snap):
        if len(rows) >= limit:
            break
        known = None if m.added_files_count is None or m.existing_files_count is None \
            else m.added_files_count + m.existing_files_count
        if known is not None and seen + known <= offset:
            seen += known
            continue
        for entry in _live(table, m):
            if seen >= offset and len(rows) < limit:
                rows.append(file_row(table.metadata, m, entry, ptypes))
            seen += 1
    return rows


# --- history and diff -------------------------------------------------------------------------


def table_history(*, table: Table) -> dict[str, Any]:
    """Snapshot and metadata logs (newest first), schema and spec history."""
    return _cached(table, "history", lambda: _history(table))


def _history(table: Table) -> dict[str, Any]:
    md = table.metadata
    snapshot_log = []
    by_id = _by_id(table)
    for entry in reversed(md.snapshot_log):
        snap = by_id.get(entry.snapshot_id)
        snapshot_log.append({
            "snapshot_id": entry.snapshot_id, "timestamp_ms": entry.timestamp_ms,
            "time": iso_time(entry.timestamp_ms),
            "operation": snap.summary.get("operation") if snap is not None else None,
            "expired": snap is None,
        })
    metadata_log = [{"metadata_file": e.metadata_file, "timestamp_ms": e.timestamp_ms,
                     "time": iso_time(e.timestamp_ms), "is_current": False}
                    for e in reversed(md.metadata_log)]
    metadata_log.insert(0, {"metadata_file": table.metadata_location, "timestamp_ms": md.last_updated_ms,
                            "time": iso_time(md.last_updated_ms), "is_current": True})
    return {
        "snapshot_log": snapshot_log,
        "metadata_log": metadata_log,
        "schemas": list(reversed(schema_history(md))),
        "specs": list(reversed(spec_history(md))),
    }


def table_diff(*, table: Table, from_id: int, to_id: int) -> dict[str, Any]:
    """floe.diff.snapshot_diff over the cached manifest lists and manifests."""
    before = snapshot_get(table=table, snapshot_id=from_id)
    after = snapshot_get(table=table, snapshot_id=to_id)
    return snapshot_diff(
        table.metadata, before, after,
        list_manifests=lambda s: _manifest_list(table, s),
        read_entries=lambda m: _manifest_entries(table, m),
    )


def table_detail(*, table: Table) -> dict[str, Any]:
    """The table list's row, the overview and the health panel in one document (the API)."""
    row = selectors.table_row(table=table)
    fields = {name: getattr(row, name) for name in row.__slots__}  # type: ignore[attr-defined]
    return {**fields, "identifier": row.identifier, **table_overview(table=table),
            "health": table_health_get(table=table)}


class SnapshotFiles:
    """A snapshot's live files as a lazily sliced sequence, for paginators: the length comes
    from the manifest list's counts, a slice reads only the manifests that hold it."""

    def __init__(self, table: Table, snapshot_id: int) -> None:
        self.table, self.snapshot_id = table, snapshot_id
        self._count: int | None = None

    def __len__(self) -> int:
        if self._count is None:
            self._count = snapshot_file_count(table=self.table, snapshot_id=self.snapshot_id)
        return self._count

    def count(self) -> int:
        return len(self)

    def __getitem__(self, key: slice) -> list[dict[str, Any]]:
        start = key.start or 0
        stop = len(self) if key.stop is None else key.stop
        return snapshot_file_page(table=self.table, snapshot_id=self.snapshot_id, offset=start,
                                  limit=max(0, stop - start))
