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
from floe.snapshots import Snapshot
from floe.types import NestedField, PrimitiveType, StructType

__all__ = [
    "schema_changes",
    "schema_history",
    "spec_history",
    "schema_for_snapshot",
    "snapshot_diff",
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
