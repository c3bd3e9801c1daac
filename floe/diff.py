"""Differences between table states: schema evolution, partition-spec history, and the files
added / removed between any two snapshots.

Rows are plain JSON-able values like :mod:`floe.inspect`'s, so the explorer's pages, its API
and scripts show the same thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from floe.inspect import file_row
from floe.manifest import ManifestEntry, ManifestEntryStatus, ManifestFile
from floe.metadata import TableMetadata
from floe.schema import Schema, index_by_id
from floe.snapshots import Operation, Snapshot, SnapshotRef
from floe.types import NestedField, PrimitiveType, StructType

__all__ = [
    "schema_changes",
    "schema_history",
    "spec_history",
    "schema_for_snapshot",
    "snapshot_diff",
    "metadata_changes",
    "snapshot_words",
]

# Kinds of schema change, in the order they are listed.
ADDED, DROPPED, RENAMED, PROMOTED, REQUIRED, OPTIONAL, DOC = (
    "added", "dropped", "renamed", "promoted", "made-required", "made-optional", "doc-changed"
)


def _type_text(field: NestedField) -> str:
    return str(field.field_type) if isinstance(field.field_type, PrimitiveType) else \
        type(field.field_type).__name__.removesuffix("Type").lower()


def schema_changes(old: Schema | None, new: Schema) -> list[dict[str, Any]]:
    """Field-level changes from ``old`` to ``new``, matched by field id (spec "Schema
    Evolution": ids, not names, identify columns). ``old=None`` lists every field as added."""
    before = index_by_id(old.as_struct()) if old is not None else {}
    after = index_by_id(new.as_struct())
    changes: list[dict[str, Any]] = []

    def change(kind: str, fid: int, name: str | None, old_v: Any = None, new_v: Any = None) -> None:
        changes.append({"change": kind, "field_id": fid, "name": name, "old": old_v, "new": new_v})

    for fid in sorted(set(before) | set(after)):
        o, n = before.get(fid), after.get(fid)
        if o is None and n is not None:
            change(ADDED, fid, new.find_column_name(fid), None, _type_text(n))
        elif n is None and o is not None and old is not None:
            change(DROPPED, fid, old.find_column_name(fid), _type_text(o), None)
        elif o is not None and n is not None and old is not None:
            name = new.find_column_name(fid)
            if o.name != n.name:
                change(RENAMED, fid, name, old.find_column_name(fid), name)
            if _type_text(o) != _type_text(n):
                change(PROMOTED, fid, name, _type_text(o), _type_text(n))
            if o.required != n.required:
                change(REQUIRED if n.required else OPTIONAL, fid, name, o.required, n.required)
            if (o.doc or None) != (n.doc or None):
                change(DOC, fid, name, o.doc, n.doc)
    return changes


def schema_history(md: TableMetadata) -> list[dict[str, Any]]:
    """Each schema in id order with the changes from the schema before it."""
    rows = []
    previous: Schema | None = None
    for schema in sorted(md.schemas, key=lambda s: s.schema_id):
        rows.append({
            "schema_id": schema.schema_id,
            "is_current": schema.schema_id == md.current_schema_id,
            "field_count": len(index_by_id(schema.as_struct())),
            "changes": schema_changes(previous, schema),
        })
        previous = schema
    return rows


def _spec_field_text(md: TableMetadata, source_id: int, transform: Any, name: str) -> str:
    source = None
    for schema in [md.schema(), *sorted(md.schemas, key=lambda s: -s.schema_id)]:
        source = schema.find_column_name(source_id)
        if source is not None:
            break
    return f"{name} = {transform}({source if source is not None else f'#{source_id}'})"


def spec_history(md: TableMetadata) -> list[dict[str, Any]]:
    """Each partition spec in id order with its fields and the fields added / removed
    relative to the spec before it (matched by partition field id)."""
    rows = []
    previous: dict[int, str] = {}
    for spec in sorted(md.partition_specs, key=lambda s: s.spec_id):
        fields = {
            f.field_id: _spec_field_text(md, f.source_id, f.transform, f.name) for f in spec.fields
        }
        rows.append({
            "spec_id": spec.spec_id,
            "is_default": spec.spec_id == md.default_spec_id,
            "fields": [{"field_id": fid, "text": text} for fid, text in fields.items()],
            "added": [fields[fid] for fid in fields if fid not in previous],
            "removed": [previous[fid] for fid in previous if fid not in fields],
        })
        previous = fields
    return rows


def schema_for_snapshot(md: TableMetadata, snapshot: Snapshot | None) -> Schema:
    """The schema a snapshot was written with (its ``schema-id``), else the current one."""
    if snapshot is not None and snapshot.schema_id is not None:
        schema = md.schema_by_id(snapshot.schema_id)
        if schema is not None:
            return schema
    return md.schema()


ManifestLister = Callable[[Snapshot], list[ManifestFile]]
EntryReader = Callable[[ManifestFile], Iterable[ManifestEntry]]


def _live_files(
    md: TableMetadata, manifests: Iterable[ManifestFile], read: EntryReader,
    ptypes: dict[int, StructType],
) -> dict[str, dict[str, Any]]:
    files: dict[str, dict[str, Any]] = {}
    for m in manifests:
        for entry in read(m):
            if entry.status != ManifestEntryStatus.DELETED:
                files[entry.data_file.file_path] = file_row(md, m, entry, ptypes)
    return files


def snapshot_diff(
    md: TableMetadata, from_snapshot: Snapshot | None, to_snapshot: Snapshot | None, *,
    list_manifests: ManifestLister, read_entries: EntryReader,
) -> dict[str, Any]:
    """Files added and removed (by path, from both snapshots' live entries) going from one
    snapshot to another, the rows they hold, and the schema and spec changes.

    Manifests are immutable and named by path: a manifest in both manifest lists holds the
    same live files on both sides, so it is never read. ``read_entries`` is where callers
    plug in a cache.
    """
    before = list_manifests(from_snapshot) if from_snapshot is not None else []
    after = list_manifests(to_snapshot) if to_snapshot is not None else []
    shared = {m.manifest_path for m in before} & {m.manifest_path for m in after}
    ptypes: dict[int, StructType] = {}
    old = _live_files(md, (m for m in before if m.manifest_path not in shared), read_entries,
                      ptypes)
    new = _live_files(md, (m for m in after if m.manifest_path not in shared), read_entries, ptypes)
    added = [row for path, row in sorted(new.items()) if path not in old]
    removed = [row for path, row in sorted(old.items()) if path not in new]

    def rows(files: list[dict[str, Any]], content: str) -> int:
        return sum(f["record_count"] for f in files if f["content"] == content)

    def spec_ids(manifests: list[ManifestFile]) -> list[int]:
        return sorted({m.partition_spec_id for m in manifests})

    from_schema = schema_for_snapshot(md, from_snapshot) if from_snapshot is not None else None
    to_schema = schema_for_snapshot(md, to_snapshot)
    return {
        "from_snapshot_id": from_snapshot.snapshot_id if from_snapshot is not None else None,
        "to_snapshot_id": to_snapshot.snapshot_id if to_snapshot is not None else None,
        "manifests_shared": len(shared),
        "manifests_read": len(before) + len(after) - 2 * len(shared),
        "added_files": added,
        "removed_files": removed,
        "added_data_files": sum(1 for f in added if f["content"] == "data"),
        "removed_data_files": sum(1 for f in removed if f["content"] == "data"),
        "added_delete_files": sum(1 for f in added if f["content"] != "data"),
        "removed_delete_files": sum(1 for f in removed if f["content"] != "data"),
        "added_rows": rows(added, "data"),
        "removed_rows": rows(removed, "data"),
        "added_bytes": sum(f["file_size_in_bytes"] for f in added),
        "removed_bytes": sum(f["file_size_in_bytes"] for f in removed),
        "from_schema_id": from_schema.schema_id if from_schema is not None else None,
        "to_schema_id": to_schema.schema_id,
        "schema_changes": schema_changes(from_schema, to_schema)
        if from_schema is None or from_schema.schema_id != to_schema.schema_id else [],
        "from_spec_ids": spec_ids(before),
        "to_spec_ids": spec_ids(after),
    }


# --- one commit in words ------------------------------------------------------------------------

#: Properties named one by one in a commit's words; more are counted.
PROPERTIES_NAMED = 4


def _n(count: int, noun: str, plural: str | None = None) -> str:
    """``1 data file``, ``1,024 data files``."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def _summary_int(summary: dict[str, str], key: str) -> int:
    try:
        return int(summary.get(key, "0"))
    except ValueError:
        return 0


def snapshot_words(snapshot: Snapshot) -> str:
    """What a snapshot did, from its operation and summary counts (spec "Snapshots"; Java's
    SnapshotSummary keys): ``appended 1,000 rows in 3 data files``, ``compacted 144 data files
    into 36``, ``deleted 2 data files (40 rows)``, ``rewrote 4 manifests into 1``."""
    s = dict(snapshot.summary)
    added, deleted = _summary_int(s, "added-data-files"), _summary_int(s, "deleted-data-files")
    rows_in, rows_out = _summary_int(s, "added-records"), _summary_int(s, "deleted-records")
    deletes_in = _summary_int(s, "added-delete-files")
    deletes_out = _summary_int(s, "removed-delete-files")
    position = _summary_int(s, "added-position-deletes")
    equality = _summary_int(s, "added-equality-deletes")
    op = snapshot.operation
    parts: list[str] = []
    if op == Operation.REPLACE:
        created = _summary_int(s, "manifests-created")
        replaced = _summary_int(s, "manifests-replaced")
        if added or deleted:
            parts.append(f"compacted {_n(deleted, 'data file')} into {added:,}")
        elif created or replaced:
            parts.append(f"rewrote {_n(replaced, 'manifest')} into {created:,}")
        if deletes_in:
            parts.append(f"wrote {_n(deletes_in, 'delete file')}")
        if deletes_out:
            parts.append(f"removed {_n(deletes_out, 'delete file')}")
        return ", ".join(parts) or "replaced nothing (no file changed)"
    if added:
        parts.append(f"added {_n(rows_in, 'row')} in {_n(added, 'data file')}"
                     if op != Operation.APPEND else
                     f"appended {_n(rows_in, 'row')} in {_n(added, 'data file')}")
    if deleted:
        parts.append(f"removed {_n(deleted, 'data file')} ({_n(rows_out, 'row')})")
    if deletes_in:
        what = [w for w in (_n(position, "position delete") if position else "",
                            _n(equality, "equality delete") if equality else "") if w]
        parts.append(f"added {_n(deletes_in, 'delete file')}"
                     + (f" ({', '.join(what)})" if what else ""))
    if deletes_out:
        parts.append(f"removed {_n(deletes_out, 'delete file')}")
    if not parts:
        return f"{op} with no file changed" if op is not None else "no file changed"
    return (f"{op}: " if op not in (Operation.APPEND, None) else "") + ", ".join(parts)


def _ref_kind(ref: SnapshotRef) -> str:
    return "tag" if ref.is_tag else "branch"


def _descends(md: TableMetadata, snapshot_id: int, ancestor_id: int) -> bool:
    """Whether ``ancestor_id`` is ``snapshot_id`` or one of its ancestors in ``md``."""
    seen: set[int] = set()
    current: int | None = snapshot_id
    while current is not None and current not in seen:
        if current == ancestor_id:
            return True
        seen.add(current)
        snap = md.snapshot_by_id(current)
        current = snap.parent_snapshot_id if snap is not None else None
    return False


def _retention(ref: SnapshotRef) -> tuple[Any, ...]:
    return (ref.min_snapshots_to_keep, ref.max_snapshot_age_ms, ref.max_ref_age_ms)


def _ref_words(old: TableMetadata, new: TableMetadata, new_snapshots: set[int]) -> list[str]:
    """Refs created, removed, renamed, moved (rolled back, fast-forwarded, set) and their
    retention changed. A ref that moved to a snapshot this commit added is told with it."""
    words: list[str] = []
    gone = {n: r for n, r in old.refs.items() if n not in new.refs}
    made = {n: r for n, r in new.refs.items() if n not in old.refs}
    for name, ref in sorted(made.items()):
        twin = next((o for o, r in gone.items() if r.snapshot_id == ref.snapshot_id
                     and r.ref_type == ref.ref_type and _retention(r) == _retention(ref)), None)
        if twin is not None:
            del gone[twin]
            words.append(f"{_ref_kind(ref)} {twin} renamed to {name}")
        elif ref.snapshot_id not in new_snapshots:
            words.append(f"{_ref_kind(ref)} {name} created on {ref.snapshot_id}")
    for name, ref in sorted(gone.items()):
        words.append(f"{_ref_kind(ref)} {name} removed (it was on {ref.snapshot_id})")
    for name in sorted(set(old.refs) & set(new.refs)):
        before, after = old.refs[name], new.refs[name]
        a, b = before.snapshot_id, after.snapshot_id
        if a != b and b not in new_snapshots:
            kind = _ref_kind(after)
            if kind == "branch" and _descends(new, a, b):
                words.append(f"rolled back {name} from {a} to {b}")
            elif kind == "branch" and _descends(new, b, a):
                words.append(f"fast-forwarded {name} from {a} to {b}")
            else:
                words.append(f"{kind} {name} moved from {a} to {b}")
        if _retention(before) != _retention(after):
            words.append(f"retention of {_ref_kind(after)} {name} changed")
    return words


def _snapshot_added_words(new: TableMetadata, snap: Snapshot) -> str:
    on = sorted(n for n, r in new.refs.items() if r.snapshot_id == snap.snapshot_id
                and r.is_branch)
    where = f" on {', '.join(on)}" if on else " (staged: on no branch)"
    return f"snapshot {snap.snapshot_id}{where}: {snapshot_words(snap)}"


_SCHEMA_WORDS: dict[str, Callable[[dict[str, Any]], str]] = {
    ADDED: lambda c: f"added {c['name']}",
    DROPPED: lambda c: f"dropped {c['name']}",
    RENAMED: lambda c: f"renamed {c['old']} to {c['new']}",
    PROMOTED: lambda c: f"promoted {c['name']} from {c['old']} to {c['new']}",
    REQUIRED: lambda c: f"made {c['name']} required",
    OPTIONAL: lambda c: f"made {c['name']} optional",
    DOC: lambda c: f"changed the doc of {c['name']}",
}


def _schema_words(old: TableMetadata, new: TableMetadata) -> list[str]:
    if old.current_schema_id == new.current_schema_id:
        return []
    changes = [_SCHEMA_WORDS[c["change"]](c) for c in schema_changes(old.schema(), new.schema())]
    head = f"schema {old.current_schema_id} → {new.current_schema_id}"
    return [f"{head}: {', '.join(changes)}" if changes else head]


def _spec_words(old: TableMetadata, new: TableMetadata) -> list[str]:
    if old.default_spec_id == new.default_spec_id:
        return []

    def fields(md: TableMetadata) -> dict[int, str]:
        return {f.field_id: _spec_field_text(md, f.source_id, f.transform, f.name)
                for f in md.spec().fields}

    before, after = fields(old), fields(new)
    changes = [f"added {after[i]}" for i in after if i not in before] + [
        f"removed {before[i]}" for i in before if i not in after]
    if not after:
        changes = ["unpartitioned"]
    head = f"partition spec {old.default_spec_id} → {new.default_spec_id}"
    return [f"{head}: {', '.join(changes)}" if changes else head]


def _order_words(old: TableMetadata, new: TableMetadata) -> list[str]:
    if old.default_sort_order_id == new.default_sort_order_id:
        return []
    schema = new.schema()
    fields = []
    for f in new.sort_order().fields:
        column = schema.find_column_name(f.source_id) or f"#{f.source_id}"
        term = column if str(f.transform) == "identity" else f"{f.transform}({column})"
        fields.append(f"{term} {f.direction} {str(f.null_order).replace('-', ' ')}")
    order = ", ".join(fields) or "unsorted"
    return [f"sort order {old.default_sort_order_id} → {new.default_sort_order_id}: {order}"]


def _property_words(old: TableMetadata, new: TableMetadata) -> list[str]:
    changed = {k: v for k, v in new.properties.items() if old.properties.get(k) != v}
    removed = sorted(k for k in old.properties if k not in new.properties)
    words = []
    if changed:
        named = [f"{k}={v}" for k, v in sorted(changed.items())]
        words.append("set " + (", ".join(named) if len(named) <= PROPERTIES_NAMED
                               else _n(len(named), "property", "properties")))
    if removed:
        words.append("removed " + (", ".join(removed) if len(removed) <= PROPERTIES_NAMED
                                   else _n(len(removed), "property", "properties")))
    return words


def _statistics_words(old: TableMetadata, new: TableMetadata) -> list[str]:
    words = []
    for what, before, after in (
            ("table statistics", old.statistics, new.statistics),
            ("partition statistics", old.partition_statistics, new.partition_statistics)):
        paths = {f.statistics_path for f in before}
        for f in after:
            if f.statistics_path not in paths:
                words.append(f"{what} written for snapshot {f.snapshot_id}")
        kept = {f.statistics_path for f in after}
        dropped = [f for f in before if f.statistics_path not in kept]
        if dropped:
            words.append(f"{what} of {_n(len(dropped), 'snapshot')} removed")
    return words


def metadata_changes(old: TableMetadata | None, new: TableMetadata) -> list[str]:
    """What one commit did, in words, from the metadata before it (``None``: the table was
    created by it) and after it: snapshots added (with what their summaries say) and expired,
    branches and tags created, removed, renamed, rolled back, fast-forwarded or moved, schema,
    partition spec and sort order changes, properties, statistics files, format upgrades.
    Snapshot ids are written out in full. Engine-neutral: Java, PyIceberg and floe write the
    same metadata."""
    words: list[str] = []
    if old is None:
        spec = ", ".join(_spec_field_text(new, f.source_id, f.transform, f.name)
                         for f in new.spec().fields)
        words.append(f"table created (format v{new.format_version}, "
                     f"{_n(len(new.schema().fields), 'column')}, "
                     + (f"partitioned by {spec})" if spec else "unpartitioned)"))
        for snap in sorted(new.snapshots, key=lambda s: s.sequence_number):
            words.append(_snapshot_added_words(new, snap))
        return words
    if old.format_version != new.format_version:
        words.append(f"format version {old.format_version} → {new.format_version}")
    if old.location != new.location:
        words.append(f"location changed to {new.location}")
    words += _schema_words(old, new) + _spec_words(old, new) + _order_words(old, new)
    before = {s.snapshot_id for s in old.snapshots}
    added = [s for s in new.snapshots if s.snapshot_id not in before]
    new_ids = {s.snapshot_id for s in added}
    for snap in sorted(added, key=lambda s: s.sequence_number):
        words.append(_snapshot_added_words(new, snap))
    words += _ref_words(old, new, new_ids)
    after = {s.snapshot_id for s in new.snapshots}
    expired = [i for i in before if i not in after]
    if expired:
        words.append(f"expired {_n(len(expired), 'snapshot')}")
    for what, o, n in (("schema", {s.schema_id for s in old.schemas},
                        {s.schema_id for s in new.schemas}),
                       ("partition spec", {p.spec_id for p in old.partition_specs},
                        {p.spec_id for p in new.partition_specs})):
        gone = sorted(o - n)
        if gone:
            words.append(f"removed unused {what}{'s' if len(gone) > 1 else ''} "
                         + ", ".join(map(str, gone)))
    words += _property_words(old, new) + _statistics_words(old, new)
    return words or ["no change to the table's schema, snapshots, refs or properties"]
