"""Writing delete files (spec "Row-level Deletes"): position deletes and equality deletes as
Parquet, placed and named the way Iceberg Java's ``OutputFileFactory`` places the delete files
Spark writes, with the metrics Java keeps for them.

* Location: the table's data directory (``write.data.path`` or ``<location>/data``), then the
  partition path of the delete file's spec, then
  ``<partition id:05d>-<task id>-<operation uuid>-<file count:05d>-deletes.parquet``
  (Java's file factory with the ``deletes`` suffix).
* Compression: ``write.parquet.compression-codec`` (zstd), as data files.
* Position deletes (spec "Position Delete Files"): the schema ``file_path`` (id 2147483546,
  string) and ``pos`` (id 2147483545, long), both required, rows sorted by file path then
  position. Metrics as ``MetricsConfig.forPositionDelete`` + ``PositionDeleteWriter``: both
  columns in ``full`` mode (untruncated bounds), no value / null / NaN counts for them, and
  no bounds either when the file references more than one data file. When it references
  exactly one, ``referenced_data_file`` names it (Java leaves that field unset for Parquet
  position deletes and lets readers infer it from the equal ``file_path`` bounds, which are
  kept too).
* Equality deletes (spec "Equality Delete Files"): the table schema projected to the
  equality columns (nested structs kept, as Java's delete schema ``schema.select(...)``), the
  key rows as data, ``equality_ids``, sort order 0 (``FileMetadata`` default), and the metrics
  ``write.metadata.metrics.*`` asks for on those columns.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from floe.errors import ValidationError
from floe.io import FileIO
from floe.io.parquet import ParquetFileMetrics, to_arrow_type
from floe.manifest import DataFile, FileContent, FileFormat
from floe.metadata import TableMetadata
from floe.partitioning import PartitionSpec
from floe.properties import PARQUET_COMPRESSION, PARQUET_COMPRESSION_DEFAULT
from floe.scan.delete_index import FILE_PATH_FIELD_ID, POS_FIELD_ID, POSITION_DELETE_SCHEMA
from floe.schema import Schema
from floe.table.writer import FULL, data_dir, metrics_modes, write_data_file
from floe.types import NestedField, PrimitiveType, StructType

__all__ = [
    "POSITION_DELETE_SCHEMA",
    "delete_file_location",
    "equality_delete_schema",
    "write_equality_deletes",
    "write_position_deletes",
]

#: Spec "Position Delete Files": the reserved columns, both required.
_POSITION_IDS = (FILE_PATH_FIELD_ID, POS_FIELD_ID)


def _spec(md: TableMetadata, spec_id: int) -> PartitionSpec:
    spec = md.spec_by_id(spec_id)
    if spec is None:
        raise ValidationError(f"table {md.location} has no partition spec {spec_id}")
    return spec


def _partition_path(md: TableMetadata, spec: PartitionSpec, partition: tuple[Any, ...]) -> str:
    """The spec's partition path, typed by the newest schema holding its source columns (an
    old spec may partition by a column the current schema dropped)."""
    if spec.is_unpartitioned:
        return ""
    last: ValidationError | None = None
    for schema in [md.schema(), *sorted(md.schemas, key=lambda s: -s.schema_id)]:
        try:
            return spec.partition_to_path(tuple(partition), schema)
        except (ValidationError, KeyError) as e:
            last = e if isinstance(e, ValidationError) else ValidationError(str(e))
    raise last or ValidationError(f"spec {spec.spec_id} has no partition path")


def delete_file_location(md: TableMetadata, spec_id: int, partition: tuple[Any, ...], *,
                         operation_id: uuid.UUID | str, task_id: int = 0, count: int = 1
                         ) -> str:
    """Where Java's ``OutputFileFactory`` (suffix ``deletes``) puts a delete file: the data
    directory, the partition path of ``spec_id``, then the file name."""
    name = f"{0:05d}-{task_id}-{operation_id}-{count:05d}-deletes.parquet"
    sub = _partition_path(md, _spec(md, spec_id), partition)
    return "/".join(p for p in (data_dir(md), sub, name) if p)


def _compression(md: TableMetadata) -> str:
    return md.properties.get(PARQUET_COMPRESSION, PARQUET_COMPRESSION_DEFAULT)


def _delete_file(content: FileContent, path: str, spec_id: int, partition: tuple[Any, ...],
                 m: ParquetFileMetrics, **extra: Any) -> DataFile:
    return DataFile(
        content=content,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=tuple(partition),
        record_count=m.record_count,
        file_size_in_bytes=m.file_size_in_bytes,
        column_sizes=m.column_sizes,
        value_counts=m.value_counts or None,
        null_value_counts=m.null_value_counts or None,
        nan_value_counts=m.nan_value_counts or None,
        lower_bounds=m.lower_bounds or None,
        upper_bounds=m.upper_bounds or None,
        split_offsets=m.split_offsets,
        spec_id=spec_id,
        **extra,
    )


# -- position deletes ---------------------------------------------------------------------------


def _sorted_deletes(deletes: Mapping[str, Any] | pa.Table) -> pa.Table:
    """The deletes as one table sorted by file path, then position, without duplicates."""
    if isinstance(deletes, pa.Table):
        missing = {"file_path", "pos"} - set(deletes.column_names)
        if missing:
            raise ValidationError(
                f"position deletes need the columns file_path and pos; missing {sorted(missing)}")
        by_path: dict[str, list[pa.Array]] = {}
        paths = deletes.column("file_path").combine_chunks()
        pos = deletes.column("pos").combine_chunks().cast(pa.int64())
        for path in pc.unique(paths).to_pylist():
            by_path[path] = [pos.filter(pc.equal(paths, path))]
        grouped: Mapping[str, Any] = {p: pa.concat_arrays(a) for p, a in by_path.items()}
    else:
        grouped = deletes
    path_parts: list[pa.Array] = []
    pos_parts: list[pa.Array] = []
    for path in sorted(grouped):  # Python orders str by code point, as the spec's UTF-8 bytes
        if path is None:
            raise ValidationError("a position delete must name its data file (file_path null)")
        positions = grouped[path]
        arr = positions if isinstance(positions, pa.Array) else pa.array(positions, pa.int64())
        arr = pc.unique(arr.cast(pa.int64())).sort()
        if arr.null_count:
            raise ValidationError(f"a position delete of {path} has no position (pos null)")
        if len(arr) and pc.min(arr).as_py() < 0:
            raise ValidationError(f"a position delete of {path} has a negative position")
        path_parts.append(pa.repeat(pa.scalar(path, pa.large_string()), len(arr)))
        pos_parts.append(arr)
    if not path_parts:
        return pa.table({"file_path": pa.array([], pa.large_string()),
                         "pos": pa.array([], pa.int64())})
    return pa.table({"file_path": pa.concat_arrays(path_parts),
                     "pos": pa.concat_arrays(pos_parts)})


def write_position_deletes(
    io: FileIO,
    md: TableMetadata,
    spec_id: int,
    partition: tuple[Any, ...],
    deletes: Mapping[str, Sequence[int] | pa.Array] | pa.Table,
    *,
    operation_id: uuid.UUID | str | None = None,
    task_id: int = 0,
    written: list[str] | None = None,
) -> DataFile:
    """Write one position delete file for data files of ``spec_id`` / ``partition``.

    ``deletes`` maps data file paths to deleted row positions (or is a table with columns
    ``file_path`` and ``pos``); they are sorted and de-duplicated as the spec requires (Java's
    ``SortingPositionOnlyDeleteWriter``). The path is appended to ``written`` as soon as the
    file exists.
    """
    if md.format_version < 2:
        raise ValidationError(
            f"table {md.location} is format version {md.format_version}: delete files need "
            "format version 2 or later")
    rows = _sorted_deletes(deletes)
    if rows.num_rows == 0:
        raise ValidationError("no position deletes to write")
    modes = dict.fromkeys(_POSITION_IDS, FULL)
    data, m = write_data_file(rows, POSITION_DELETE_SCHEMA, modes, _compression(md))
    referenced = pc.unique(rows.column("file_path")).to_pylist()
    for counts in (m.value_counts, m.null_value_counts, m.nan_value_counts):
        for fid in _POSITION_IDS:  # Java: MetricsUtil.copyWithoutFieldCounts
            counts.pop(fid, None)
    if len(referenced) > 1:  # ... and copyWithoutFieldCountsAndBounds for many data files
        for bounds in (m.lower_bounds, m.upper_bounds):
            for fid in _POSITION_IDS:
                bounds.pop(fid, None)
    path = delete_file_location(md, spec_id, partition,
                                operation_id=operation_id or uuid.uuid4(), task_id=task_id)
    io.write(path, data)
    if written is not None:
        written.append(path)
    return _delete_file(FileContent.POSITION_DELETES, path, spec_id, partition, m,
                        referenced_data_file=referenced[0] if len(referenced) == 1 else None)


# -- equality deletes ---------------------------------------------------------------------------


def equality_delete_schema(schema: Schema, equality_ids: Sequence[int]) -> Schema:
    """The delete schema of equality ids: ``schema`` projected to those columns, structs kept
    (Java ``TypeUtil.select``). Each id must be a primitive column outside lists and maps."""
    if not equality_ids:
        raise ValidationError("an equality delete needs at least one equality column")
    if len(set(equality_ids)) != len(equality_ids):
        raise ValidationError(f"equality columns repeat a field: {list(equality_ids)}")
    names = []
    for fid in equality_ids:
        name = schema.find_column_name(fid)
        if name is None:
            raise ValidationError(f"equality field id {fid} is not in the table schema")
        if not isinstance(schema.find_type(fid), PrimitiveType):
            raise ValidationError(
                f"equality column {name!r} is a {schema.find_type(fid)}: only primitive "
                "columns can be equality keys")
        parent = schema.parent_id(fid)
        while parent is not None:
            if not isinstance(schema.find_type(parent), StructType):
                raise ValidationError(
                    f"equality column {name!r} is inside a list or map: it cannot be a key")
            parent = schema.parent_id(parent)
        names.append(name)
    return schema.select(*names)


def _nested_keys(delete_schema: Schema, by_id: dict[int, pa.Array]) -> pa.Table:
    """Flat key columns (by field id) as a table of the nested delete schema."""

    def build(field: NestedField) -> pa.Array:
        t = field.field_type
        if isinstance(t, StructType):
            children = [build(c) for c in t.fields]
            return pa.StructArray.from_arrays(children, fields=list(to_arrow_type(t)))
        arr = by_id[field.field_id]
        try:
            return arr.cast(to_arrow_type(t))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise ValidationError(
                f"equality delete keys for column {field.name!r} ({arr.type}) do not fit "
                f"its type {t}: {e}") from None

    return pa.table([build(f) for f in delete_schema.fields],
                    names=[f.name for f in delete_schema.fields])


def write_equality_deletes(
    io: FileIO,
    md: TableMetadata,
    spec_id: int,
    partition: tuple[Any, ...],
    equality_ids: Sequence[int],
    keys: pa.Table,
    *,
    operation_id: uuid.UUID | str | None = None,
    task_id: int = 0,
    written: list[str] | None = None,
) -> DataFile:
    """Write one equality delete file: a row of ``keys`` deletes every row whose equality
    columns equal it (null equals null). ``keys`` has one column per equality id, in the
    order of ``equality_ids``. The path is appended to ``written`` once the file exists."""
    if md.format_version < 2:
        raise ValidationError(
            f"table {md.location} is format version {md.format_version}: delete files need "
            "format version 2 or later")
    schema = md.schema()
    ids = list(equality_ids)
    delete_schema = equality_delete_schema(schema, ids)
    if keys.num_columns != len(ids):
        raise ValidationError(
            f"equality delete keys have {keys.num_columns} columns for {len(ids)} equality "
            "columns")
    if keys.num_rows == 0:
        raise ValidationError("no equality delete keys to write")
    for fid, col in zip(ids, keys.columns, strict=True):
        field = schema.find_field(fid)
        if field.required and col.null_count:
            raise ValidationError(
                f"equality delete keys for required column "
                f"{schema.find_column_name(fid)!r} contain nulls")
    rows = _nested_keys(delete_schema,
                        {fid: col.combine_chunks() for fid, col in zip(ids, keys.columns,
                                                                       strict=True)})
    leaf_ids = {f.field_id for f in delete_schema.leaf_fields()}
    modes = {fid: mode for fid, mode in metrics_modes(schema, md.properties).items()
             if fid in leaf_ids}
    data, m = write_data_file(rows, delete_schema, modes, _compression(md))
    path = delete_file_location(md, spec_id, partition,
                                operation_id=operation_id or uuid.uuid4(), task_id=task_id)
    io.write(path, data)
    if written is not None:
        written.append(path)
    return _delete_file(FileContent.EQUALITY_DELETES, path, spec_id, partition, m,
                        equality_ids=ids, sort_order_id=0)
