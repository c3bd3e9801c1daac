"""Writing rows as data files of a table: partitioned by the table's spec, rolled at the target
file size, named like Iceberg's ``OutputFileFactory`` names them, with the metrics the
``write.metadata.metrics.*`` properties ask for.

File names: ``<location>/data/<partition path>/<partition id:05d>-<task id>-<operation
uuid>-<file count:05d>.parquet`` (Java ``OutputFileFactory``); ``write.data.path`` moves the
``data`` directory.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from floe.errors import ValidationError
from floe.io import FileIO
from floe.io.parquet import (
    DEFAULT_TRUNCATE_LENGTH,
    ParquetFileMetrics,
    collect_metrics,
    from_arrow_value,
    schema_to_arrow,
    write_parquet,
)
from floe.manifest import DataFile, FileContent, FileFormat
from floe.metadata import TableMetadata
from floe.properties import (
    DATA_PATH,
    METRICS_COLUMN_PREFIX,
    METRICS_DEFAULT,
    METRICS_MAX_INFERRED,
    METRICS_MAX_INFERRED_DEFAULT,
    PARQUET_COMPRESSION,
    PARQUET_COMPRESSION_DEFAULT,
    TARGET_FILE_SIZE,
    TARGET_FILE_SIZE_DEFAULT,
    int_property,
)
from floe.schema import Schema
from floe.transforms import transform_arrow
from floe.types import PrimitiveType

__all__ = [
    "MetricsMode",
    "parse_metrics_mode",
    "metrics_modes",
    "partition_rows",
    "write_data_files",
    "data_dir",
]


_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")


@dataclass(frozen=True, slots=True)
class MetricsMode:
    """Java ``MetricsModes``: ``none``, ``counts``, ``truncate(N)`` or ``full``."""

    name: str
    length: int | None = None

    @property
    def keeps_counts(self) -> bool:
        return self.name != "none"

    @property
    def keeps_bounds(self) -> bool:
        return self.name in ("truncate", "full")

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.name == "truncate" else self.name


NONE = MetricsMode("none")
COUNTS = MetricsMode("counts")
FULL = MetricsMode("full")
DEFAULT_MODE = MetricsMode("truncate", DEFAULT_TRUNCATE_LENGTH)


def parse_metrics_mode(text: str) -> MetricsMode:
    value = text.strip().lower()
    if value in ("none", "counts", "full"):
        return MetricsMode(value)
    if m := _TRUNCATE.match(value):
        length = int(m.group(1))
        if length <= 0:
            raise ValidationError(f"invalid metrics mode {text!r}: truncate length must be > 0")
        return MetricsMode("truncate", length)
    raise ValidationError(
        f"invalid metrics mode {text!r} (expected none, counts, truncate(N) or full)")


def metrics_modes(schema: Schema, properties: Mapping[str, str]) -> dict[int, MetricsMode]:
    """Metrics mode per leaf field id (Java ``MetricsConfig.forTable``).

    Without ``write.metadata.metrics.default``, only the first
    ``write.metadata.metrics.max-inferred-column-defaults`` (100) leaves get ``truncate(16)``,
    the rest ``none``.
    """
    leaves = [f.field_id for f in schema.leaf_fields()]
    if METRICS_DEFAULT in properties:
        default = parse_metrics_mode(properties[METRICS_DEFAULT])
        modes = dict.fromkeys(leaves, default)
    else:
        limit = int_property(properties, METRICS_MAX_INFERRED, METRICS_MAX_INFERRED_DEFAULT)
        modes = {fid: DEFAULT_MODE if i < limit else NONE for i, fid in enumerate(leaves)}
    for key, value in properties.items():
        if key.startswith(METRICS_COLUMN_PREFIX):
            name = key[len(METRICS_COLUMN_PREFIX):]
            try:
                fid = schema.find_field_id(name)
            except ValidationError:
                raise ValidationError(
                    f"table property {key}: no column {name!r} in the schema") from None
            modes[fid] = parse_metrics_mode(value)
    return modes


def _apply_modes(
    m: ParquetFileMetrics, modes: Mapping[int, MetricsMode], recompute: Any
) -> ParquetFileMetrics:
    """Drop or re-truncate the default ``truncate(16)`` metrics per the field's mode."""
    by_length: dict[int, list[int]] = defaultdict(list)
    for fid, mode in modes.items():
        if not mode.keeps_counts:
            for counts in (m.value_counts, m.null_value_counts, m.nan_value_counts):
                counts.pop(fid, None)
        if not mode.keeps_bounds:
            m.lower_bounds.pop(fid, None)
            m.upper_bounds.pop(fid, None)
        elif mode != DEFAULT_MODE:
            by_length[mode.length if mode.length is not None else sys.maxsize].append(fid)
    for length, fids in by_length.items():
        other: ParquetFileMetrics = recompute(length)
        for fid in fids:
            for mine, theirs in ((m.lower_bounds, other.lower_bounds),
                                 (m.upper_bounds, other.upper_bounds)):
                mine.pop(fid, None)
                if fid in theirs:
                    mine[fid] = theirs[fid]
    return m


def write_data_file(
    rows: pa.Table, schema: Schema, modes: Mapping[int, MetricsMode], compression: str = "zstd"
) -> tuple[bytes, ParquetFileMetrics]:
    """One Parquet file's bytes and its metrics under ``modes``."""
    data, metrics = write_parquet(rows, schema, compression=compression)
    if all(mode == DEFAULT_MODE for mode in modes.values()):
        return data, metrics

    def recompute(length: int) -> ParquetFileMetrics:
        target = schema_to_arrow(schema)
        cast = rows.select([f.name for f in target]).cast(target)
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata
        return collect_metrics(schema, cast, meta, len(data), truncate_length=length)

    return data, _apply_modes(metrics, modes, recompute)


def partition_rows(md: TableMetadata, rows: pa.Table) -> list[tuple[tuple[Any, ...], pa.Table]]:
    """Rows grouped by their partition tuple under the table's default spec."""
    spec, schema = md.spec(), md.schema()
    if spec.is_unpartitioned:
        return [((), rows)]
    keys = []
    for pf, pfield in zip(spec.fields, spec.partition_type(schema).fields, strict=True):
        source = schema.find_field(pf.source_id)
        name = schema.find_column_name(pf.source_id) or source.name
        if "." in name:
            raise ValidationError(f"cannot partition rows by nested column {name!r} yet")
        try:
            column = rows.column(name)
        except KeyError:
            raise ValidationError(f"rows have no column {name!r} to partition by") from None
        values = transform_arrow(pf.transform, source.field_type, column.combine_chunks())
        result_type = pfield.field_type
        assert isinstance(result_type, PrimitiveType)
        keys.append([from_arrow_value(result_type, v) for v in values.to_pylist()])
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*keys, strict=True)):
        groups[key].append(i)
    return [(key, rows.take(pa.array(idx))) for key, idx in groups.items()]


def data_dir(md: TableMetadata) -> str:
    return md.properties.get(DATA_PATH) or f"{md.location.rstrip('/')}/data"


def write_data_files(
    io: FileIO,
    md: TableMetadata,
    rows: pa.Table,
    *,
    operation_id: uuid.UUID | str | None = None,
    task_id: int = 0,
    written: list[str] | None = None,
) -> list[DataFile]:
    """Write ``rows`` as Parquet data files of the table's current schema and default spec.

    Each partition's rows roll over to a new file near ``write.target-file-size-bytes``
    (the first file's bytes per row size the rest). Every path written is appended to
    ``written`` as soon as it exists, so a caller can clean up after a failure.
    """
    schema, spec = md.schema(), md.spec()
    modes = metrics_modes(schema, md.properties)
    target = int_property(md, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
    if target <= 0:
        raise ValidationError(f"table property {TARGET_FILE_SIZE} must be positive")
    compression = md.properties.get(PARQUET_COMPRESSION, PARQUET_COMPRESSION_DEFAULT)
    op = operation_id if operation_id is not None else uuid.uuid4()
    directory = data_dir(md)
    files: list[DataFile] = []
    count = 0
    for partition, part_rows in partition_rows(md, rows):
        sub = spec.partition_to_path(partition, schema) if not spec.is_unpartitioned else ""
        # in-memory Arrow size over-estimates Parquet size, so the first file is small
        per_row = max(1.0, part_rows.nbytes / max(1, part_rows.num_rows))
        pending = [part_rows]
        while pending:
            chunk = pending.pop(0)
            rows_per_file = max(1, int(target / per_row))
            if chunk.num_rows > rows_per_file:
                pending[:0] = [chunk.slice(rows_per_file)]
                chunk = chunk.slice(0, rows_per_file)
            data, metrics = write_data_file(chunk, schema, modes, compression)
            per_row = max(1e-3, len(data) / max(1, chunk.num_rows))
            count += 1
            name = f"{0:05d}-{task_id}-{op}-{count:05d}.parquet"
            path = "/".join(p for p in (directory, sub, name) if p)
            io.write(path, data)
            if written is not None:
                written.append(path)
            files.append(_data_file(path, partition, metrics, spec.spec_id))
    return files


def _data_file(
    path: str, partition: tuple[Any, ...], m: ParquetFileMetrics, spec_id: int
) -> DataFile:
    return DataFile(
        content=FileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=m.record_count,
        file_size_in_bytes=m.file_size_in_bytes,
        column_sizes=m.column_sizes,
        value_counts=m.value_counts,
        null_value_counts=m.null_value_counts,
        nan_value_counts=m.nan_value_counts,
        lower_bounds=m.lower_bounds,
        upper_bounds=m.upper_bounds,
        split_offsets=m.split_offsets,
        sort_order_id=0,
        spec_id=spec_id,
    )
