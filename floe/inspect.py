"""Metadata tables: what a table's metadata says, as rows of plain JSON-able values.

These rows back the ``floe`` command's ``--json`` output and the explorer's pages, so both
show the same numbers. Keys are snake_case; values are JSON values (partition values and
bounds use the spec's JSON single-value serialisation).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from floe import conversions
from floe.errors import NotFound, ValidationError
from floe.io import FileIO, local_path
from floe.manifest import (
    FileContent,
    ManifestEntry,
    ManifestFile,
    file_content_name,
    read_manifest_list,
)
from floe.metadata import TableMetadata, partition_type_for
from floe.properties import METADATA_PATH
from floe.schema import Schema
from floe.snapshots import Snapshot
from floe.types import NestedField, PrimitiveType, StructType

__all__ = [
    "describe",
    "snapshot_rows",
    "manifest_rows",
    "file_row",
    "file_rows",
    "live_entries",
    "resolve_snapshot",
    "partition_type_for",
    "moved_from",
]

_MANIFEST_CONTENT = {0: "data", 1: "deletes"}


def _schema_json(schema: Schema) -> dict[str, Any]:
    j = schema.to_json()
    return {
        "schema_id": schema.schema_id,
        "identifier_field_ids": list(schema.identifier_field_ids),
        "fields": j["fields"],
    }


def describe(md: TableMetadata, metadata_location: str | None = None) -> dict[str, Any]:
    """The table at a glance: ``floe describe``."""
    return {
        "format_version": md.format_version,
        "table_uuid": str(md.table_uuid),
        "location": md.location,
        "metadata_location": metadata_location,
        "last_updated_ms": md.last_updated_ms,
        "last_sequence_number": md.last_sequence_number,
        "last_column_id": md.last_column_id,
        "last_partition_id": md.last_partition_id,
        "current_snapshot_id": md.current_snapshot_id,
        "current_schema_id": md.current_schema_id,
        "schemas": [_schema_json(s) for s in md.schemas],
        "default_spec_id": md.default_spec_id,
        "partition_specs": [
            {"spec_id": spec.spec_id, "fields": spec.to_json()["fields"]}
            for spec in md.partition_specs
        ],
        "default_sort_order_id": md.default_sort_order_id,
        "sort_orders": [o.to_json() for o in md.sort_orders],
        "properties": dict(md.properties),
        "refs": [
            {
                "name": name,
                "type": str(ref.ref_type),
                "snapshot_id": ref.snapshot_id,
                "min_snapshots_to_keep": ref.min_snapshots_to_keep,
                "max_snapshot_age_ms": ref.max_snapshot_age_ms,
                "max_ref_age_ms": ref.max_ref_age_ms,
            }
            for name, ref in sorted(md.refs.items())
        ],
        "snapshot_count": len(md.snapshots),
    }


def _directory(location: str) -> str:
    """A directory's location, comparable: a ``file:`` URI as its path, no trailing slash."""
    try:
        location = local_path(location)
    except ValidationError:  # s3:// and friends compare as written
        pass
    return location.rstrip("/")


def moved_from(md: TableMetadata, metadata_location: str) -> str | None:
    """The location the metadata names when the metadata file is not where that location
    keeps it (``<location>/metadata``, or ``write.metadata.path``): the table directory was
    moved or copied without rewriting its metadata, whose every file path is absolute and
    still names the old place. None for a table where its metadata says it is."""
    expected = md.properties.get(METADATA_PATH) or md.location.rstrip("/") + "/metadata"
    here = _directory(metadata_location).rpartition("/")[0]
    return None if here == _directory(expected) else md.location


def snapshot_rows(md: TableMetadata) -> list[dict[str, Any]]:
    """One row per snapshot, oldest first: ``floe snapshots``."""
    return [
        {
            "snapshot_id": s.snapshot_id,
            "parent_id": s.parent_snapshot_id,
            "sequence_number": s.sequence_number,
            "timestamp_ms": s.timestamp_ms,
            "operation": s.summary.get("operation"),
            "summary": dict(s.summary),
            "manifest_list": s.manifest_list,
            "schema_id": s.schema_id,
            "is_current": s.snapshot_id == md.current_snapshot_id,
        }
        for s in sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))
    ]


def resolve_snapshot(md: TableMetadata, snapshot_id: int | None = None) -> Snapshot | None:
    """The snapshot with this id, or the current one (None for a table with no snapshot)."""
    if snapshot_id is None:
        return md.current_snapshot()
    snap = md.snapshot_by_id(snapshot_id)
    if snap is None:
        raise NotFound(f"snapshot {snapshot_id} does not exist in table {md.location}")
    return snap


def _json_value(field: NestedField, value: Any) -> Any:
    if value is None or not isinstance(field.field_type, PrimitiveType):
        return value
    return conversions.to_json_value(field.field_type, value)


def _partition_json(ptype: StructType, values: tuple[Any, ...] | Any) -> dict[str, Any]:
    return {f.name: _json_value(f, v) for f, v in zip(ptype.fields, tuple(values), strict=False)}


def partition_json(md: TableMetadata, spec_id: int, partition: Sequence[Any]) -> dict[str, Any]:
    """A partition tuple of spec ``spec_id`` as ``{partition field name: JSON value}``."""
    spec = md.spec_by_id(spec_id)
    if spec is None or spec.is_unpartitioned:
        return {}
    return _partition_json(partition_type_for(md, spec), partition)


def _bound_json(field: NestedField, raw: bytes | None) -> Any:
    if raw is None or not isinstance(field.field_type, PrimitiveType):
        return None
    t = field.field_type
    return conversions.to_json_value(t, conversions.from_bytes(t, raw))


def _bound_text(field: NestedField, raw: bytes | None) -> str | None:
    """A bound as Iceberg prints it (floe.conversions.to_human_string): ``true``, ``0.1`` for
    a float32, ``NaN``, ``-Infinity``, ISO dates and times."""
    if raw is None or not isinstance(field.field_type, PrimitiveType):
        return None
    t = field.field_type
    return conversions.to_human_string(t, conversions.from_bytes(t, raw))


def manifest_rows(
    io: FileIO, md: TableMetadata, snapshot: Snapshot | None,
    manifests: list[ManifestFile] | None = None,
) -> list[dict[str, Any]]:
    """The manifest list of a snapshot with counts and decoded partition summaries.

    ``manifests``: the snapshot's manifest list when the caller has it decoded already.
    """
    if snapshot is None:
        return []
    rows = []
    for m in manifests if manifests is not None else _manifests(io, snapshot):
        spec = md.spec_by_id(m.partition_spec_id)
        ptype = partition_type_for(md, spec) if spec is not None else StructType()
        summaries = []
        for pfield, summary in zip(ptype.fields, m.partitions or [], strict=False):
            summaries.append(
                {
                    "field": pfield.name,
                    "contains_null": summary.contains_null,
                    "contains_nan": summary.contains_nan,
                    "lower_bound": _bound_json(pfield, summary.lower_bound),
                    "upper_bound": _bound_json(pfield, summary.upper_bound),
                    "lower_bound_text": _bound_text(pfield, summary.lower_bound),
                    "upper_bound_text": _bound_text(pfield, summary.upper_bound),
                }
            )
        rows.append(
            {
                "path": m.manifest_path,
                "length": m.manifest_length,
                "partition_spec_id": m.partition_spec_id,
                "content": _MANIFEST_CONTENT.get(int(m.content), str(m.content)),
                "sequence_number": m.sequence_number,
                "min_sequence_number": m.min_sequence_number,
                "added_snapshot_id": m.added_snapshot_id,
                "added_files_count": m.added_files_count,
                "existing_files_count": m.existing_files_count,
                "deleted_files_count": m.deleted_files_count,
                "added_rows_count": m.added_rows_count,
                "existing_rows_count": m.existing_rows_count,
                "deleted_rows_count": m.deleted_rows_count,
                "partitions": summaries,
            }
        )
    return rows


def _manifests(io: FileIO, snapshot: Snapshot) -> list[ManifestFile]:
    if snapshot.manifest_list:
        return read_manifest_list(io, snapshot.manifest_list)
    raise ValidationError(
        f"snapshot {snapshot.snapshot_id} lists its manifests inline (format v1 without a "
        "manifest list), which floe does not read"
    )


def live_entries(
    io: FileIO, snapshot: Snapshot | None
) -> Iterator[tuple[ManifestFile, ManifestEntry]]:
    """Every live (added or existing) entry of a snapshot, data and delete manifests alike
    (from the persistent manifest cache when it has them, floe.scan.manifest_store)."""
    from floe.scan.manifests import read_live_entries

    if snapshot is None:
        return
    for m in _manifests(io, snapshot):
        (live,) = read_live_entries(io, [m], cache=None, processes=False)
        for entry in live:
            yield m, entry


def file_rows(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    """Live data and delete files of a snapshot: ``floe files``."""
    return list(iter_file_rows(io, md, snapshot))


def iter_file_rows(io: FileIO, md: TableMetadata, snapshot: Snapshot | None
                   ) -> Iterator[dict[str, Any]]:
    """:func:`file_rows` one at a time (one manifest decoded at a time)."""
    ptypes: dict[int, StructType] = {}
    partitions: dict[tuple[int, tuple[Any, ...]], dict[str, Any]] = {}
    for m, entry in live_entries(io, snapshot):
        yield file_row(md, m, entry, ptypes, partitions)


def file_row(
    md: TableMetadata, manifest: ManifestFile, entry: ManifestEntry,
    ptypes: dict[int, StructType] | None = None,
    partitions: dict[tuple[int, tuple[Any, ...]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One row of ``floe files`` for a single entry, so callers that read only some manifests
    (pages, diffs) produce the same rows as :func:`file_rows`. ``ptypes`` and ``partitions``
    remember partition types and partitions as JSON across the rows of one listing (files
    share partitions)."""
    ptypes = {} if ptypes is None else ptypes
    df = entry.data_file
    spec_id = manifest.partition_spec_id
    if spec_id not in ptypes:
        spec = md.spec_by_id(spec_id)
        ptypes[spec_id] = partition_type_for(md, spec) if spec is not None else StructType()
    content = int(df.content)
    key = (spec_id, tuple(df.partition))
    try:
        part = None if partitions is None else partitions.get(key)
    except TypeError:  # an unhashable partition value: converted for this row only
        part, partitions = None, None
    if part is None:
        part = _partition_json(ptypes[spec_id], df.partition)
        if partitions is not None:
            partitions[key] = part
    part = dict(part)  # each row its own (a caller may change it)
    row: dict[str, Any] = {
        "content": file_content_name(content),
        "file_path": df.file_path,
        "file_format": str(df.file_format),
        "spec_id": spec_id,
        "partition": part,
        "record_count": df.record_count,
        "file_size_in_bytes": df.file_size_in_bytes,
        "status": int(entry.status),
        "snapshot_id": entry.snapshot_id,
        "sequence_number": entry.sequence_number,
        "file_sequence_number": entry.file_sequence_number,
        "manifest_path": manifest.manifest_path,
    }
    if content == FileContent.EQUALITY_DELETES:
        row["equality_ids"] = list(df.equality_ids or [])
    return row


def column_stats(schema: Schema, entry: ManifestEntry) -> list[dict[str, Any]]:
    """Per-column statistics of one file, decoded with the schema's names and types: bounds
    as JSON single values (``lower_bound``, ``upper_bound``) and as text for people
    (``lower_bound_text``, ``upper_bound_text``)."""
    df = entry.data_file
    maps = {
        "column_size": df.column_sizes or {},
        "value_count": df.value_counts or {},
        "null_value_count": df.null_value_counts or {},
        "nan_value_count": df.nan_value_counts or {},
    }
    lower, upper = df.lower_bounds or {}, df.upper_bounds or {}
    ids = set(lower) | set(upper)
    for mapping in maps.values():
        ids.update(mapping)
    out = []
    for fid in sorted(ids):
        name = schema.find_column_name(fid)
        field = schema.find_field(fid) if name is not None else None
        row: dict[str, Any] = {"field_id": fid, "name": name}
        row.update({key: mapping.get(fid) for key, mapping in maps.items()})
        row["lower_bound"] = _bound_json(field, lower.get(fid)) if field else None
        row["upper_bound"] = _bound_json(field, upper.get(fid)) if field else None
        row["lower_bound_text"] = _bound_text(field, lower.get(fid)) if field else None
        row["upper_bound_text"] = _bound_text(field, upper.get(fid)) if field else None
        out.append(row)
    return out
