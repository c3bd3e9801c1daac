"""Creating file-system tables and appending rows to them (spec "File System Tables").

This is the smallest writer that produces tables other engines read: Parquet data files
with field ids and metrics, one new manifest per append (a *fast append*: the manifests of
the parent snapshot are carried over unchanged), a manifest list, and the next
``metadata/v<N>.metadata.json`` published with a no-replace write, then the version hint.
The commit loop with conflict retries and validation lives with the transactions.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections import defaultdict
from typing import Any

import pyarrow as pa

from floe.catalog.filesystem import (
    load_table_metadata,
    metadata_file_location,
    version_hint_location,
)
from floe.errors import CommitConflict, ValidationError
from floe.io import FileIO
from floe.io.parquet import from_arrow_value, write_parquet
from floe.manifest import (
    DataFile,
    FileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestListWriter,
    ManifestWriter,
    read_manifest_list,
)
from floe.metadata import TableMetadata, new_table_metadata, serialize_metadata
from floe.partitioning import UNPARTITIONED, PartitionSpec
from floe.schema import Schema
from floe.snapshots import MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder
from floe.transforms import transform_arrow
from floe.types import PrimitiveType

__all__ = ["create_table", "append", "new_snapshot_id"]


def new_snapshot_id() -> int:
    """A positive random 63-bit id, as Java derives from a random UUID."""
    u = uuid.uuid4().int
    return ((u >> 64) ^ (u & 0xFFFFFFFFFFFFFFFF)) & 0x7FFFFFFFFFFFFFFF


def _publish(io: FileIO, table_location: str, version: int, md: TableMetadata) -> str:
    """Write ``v<version>.metadata.json`` only if nobody else did, then the hint."""
    location = metadata_file_location(table_location, version)
    try:
        io.write(location, serialize_metadata(md), overwrite=False)
    except FileExistsError:
        raise CommitConflict(
            f"{location} was written by another writer; reload the table and retry"
        ) from None
    io.write(version_hint_location(table_location), str(version).encode(), overwrite=True)
    return location


def create_table(
    io: FileIO,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec = UNPARTITIONED,
    sort_order: SortOrder = UNSORTED_SORT_ORDER,
    properties: dict[str, str] | None = None,
    format_version: int = 2,
) -> tuple[str, TableMetadata]:
    """Create an empty table at ``table_location``; fails if one exists there."""
    if io.exists(metadata_file_location(table_location, 1)):
        raise ValidationError(f"a table already exists at {table_location}")
    md = new_table_metadata(schema, spec, sort_order, table_location, properties, format_version)
    return _publish(io, table_location, 1, md), md


def _partition_rows(
    md: TableMetadata, rows: pa.Table
) -> list[tuple[tuple[Any, ...], pa.Table]]:
    spec, schema = md.spec(), md.schema()
    if spec.is_unpartitioned:
        return [((), rows)]
    keys = []
    for pf, pfield in zip(spec.fields, spec.partition_type(schema).fields, strict=True):
        source = schema.find_field(pf.source_id)
        column = rows.column(schema.find_column_name(pf.source_id) or source.name)
        values = transform_arrow(pf.transform, source.field_type, column.combine_chunks())
        result_type = pfield.field_type
        assert isinstance(result_type, PrimitiveType)
        keys.append([from_arrow_value(result_type, v) for v in values.to_pylist()])
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*keys, strict=True)):
        groups[key].append(i)
    return [(key, rows.take(pa.array(idx))) for key, idx in groups.items()]


def _summary(
    parent: Snapshot | None, files: list[DataFile], operation: str = "append"
) -> dict[str, str]:
    added_records = sum(f.record_count for f in files)
    added_size = sum(f.file_size_in_bytes for f in files)
    prev = parent.summary if parent is not None else {}

    def total(key: str, added: int) -> str:
        return str(int(prev.get(key, "0")) + added)

    partitions = {f.partition for f in files}
    return {
        "operation": operation,
        "added-data-files": str(len(files)),
        "added-records": str(added_records),
        "added-files-size": str(added_size),
        "changed-partition-count": str(len(partitions)),
        "total-records": total("total-records", added_records),
        "total-files-size": total("total-files-size", added_size),
        "total-data-files": total("total-data-files", len(files)),
        "total-delete-files": total("total-delete-files", 0),
        "total-position-deletes": total("total-position-deletes", 0),
        "total-equality-deletes": total("total-equality-deletes", 0),
    }


def append(
    io: FileIO, table_location: str, rows: pa.Table, *, timestamp_ms: int | None = None
) -> tuple[str, TableMetadata]:
    """Append rows as new data files in one snapshot (a fast append) and commit it."""
    base_location, base = load_table_metadata(io, table_location)
    version = _version_of(base_location)
    schema, spec = base.schema(), base.spec()
    now = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    snapshot_id = new_snapshot_id()
    sequence_number = base.last_sequence_number + 1 if base.format_version >= 2 else 0
    commit_uuid = uuid.uuid4()

    files: list[DataFile] = []
    for n, (partition, part_rows) in enumerate(_partition_rows(base, rows)):
        data, metrics = write_parquet(part_rows, schema)
        sub = spec.partition_to_path(partition, schema) if not spec.is_unpartitioned else ""
        name = f"{n:05d}-0-{commit_uuid}-00001.parquet"
        path = "/".join(p for p in (base.location.rstrip("/"), "data", sub, name) if p)
        io.write(path, data)
        files.append(
            DataFile(
                content=FileContent.DATA,
                file_path=path,
                file_format=FileFormat.PARQUET,
                partition=partition,
                record_count=metrics.record_count,
                file_size_in_bytes=metrics.file_size_in_bytes,
                column_sizes=metrics.column_sizes,
                value_counts=metrics.value_counts,
                null_value_counts=metrics.null_value_counts,
                nan_value_counts=metrics.nan_value_counts,
                lower_bounds=metrics.lower_bounds,
                upper_bounds=metrics.upper_bounds,
                split_offsets=metrics.split_offsets,
                sort_order_id=0,
                spec_id=spec.spec_id,
            )
        )

    meta_dir = f"{base.location.rstrip('/')}/metadata"
    manifest_path = f"{meta_dir}/{commit_uuid}-m0.avro"
    writer = ManifestWriter(
        io, manifest_path, spec=spec, schema=schema, format_version=base.format_version,
        snapshot_id=snapshot_id, content=ManifestContent.DATA,
    )
    for f in files:
        writer.add(ManifestEntry(ManifestEntryStatus.ADDED, snapshot_id, None, None, f))
    new_manifest = writer.close()

    parent = base.current_snapshot()
    manifests = [new_manifest]
    if parent is not None and parent.manifest_list:
        manifests += read_manifest_list(io, parent.manifest_list)
    list_path = f"{meta_dir}/snap-{snapshot_id}-1-{commit_uuid}.avro"
    list_writer = ManifestListWriter(
        io, list_path, format_version=base.format_version, snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id if parent else None,
        sequence_number=sequence_number,
    )
    list_writer.add_manifests(manifests)
    list_writer.close()

    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent.snapshot_id if parent else None,
        sequence_number=sequence_number,
        timestamp_ms=now,
        manifest_list=list_path,
        summary=_summary(parent, files),
        schema_id=schema.schema_id,
    )
    md = dataclasses.replace(
        base,
        last_sequence_number=max(base.last_sequence_number, sequence_number),
        last_updated_ms=now,
        current_snapshot_id=snapshot_id,
        snapshots=base.snapshots + (snapshot,),
        snapshot_log=base.snapshot_log + (SnapshotLogEntry(now, snapshot_id),),
        metadata_log=base.metadata_log + (MetadataLogEntry(base.last_updated_ms, base_location),),
        refs={**base.refs, "main": SnapshotRef(snapshot_id, "branch")},
    )
    return _publish(io, base.location, version + 1, md), md


def _version_of(metadata_location: str) -> int:
    name = metadata_location.rsplit("/", 1)[-1]
    if not name.startswith("v"):
        raise ValidationError(f"{metadata_location} is not a file-system table version")
    return int(name[1:].split(".", 1)[0])
