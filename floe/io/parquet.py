"""Parquet data files: Iceberg schema ↔ Arrow schema with field ids, and a writer that
collects the metrics Iceberg keeps per data file (spec "Manifests": column_sizes,
value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds).

Bounds follow Iceberg Java's default metrics mode ``truncate(16)``: string lower bounds are
the first 16 code points, upper bounds the first 16 with the last one incremented; binary
likewise on bytes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io as _io
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from floe import conversions
from floe.errors import ValidationError
from floe.schema import Schema
from floe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["schema_to_arrow", "to_arrow_type", "ParquetFileMetrics", "write_parquet",
           "collect_metrics", "DEFAULT_TRUNCATE_LENGTH", "from_arrow_value"]

FIELD_ID_KEY = b"PARQUET:field_id"
DEFAULT_TRUNCATE_LENGTH = 16
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_TZ = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_arrow_type(t: IcebergType) -> pa.DataType:
    """Appendix A (Parquet): the Arrow type floe writes for an Iceberg type."""
    simple: dict[type, pa.DataType] = {
        BooleanType: pa.bool_(), IntegerType: pa.int32(), LongType: pa.int64(),
        FloatType: pa.float32(), DoubleType: pa.float64(), DateType: pa.date32(),
        TimeType: pa.time64("us"), TimestampType: pa.timestamp("us"),
        TimestamptzType: pa.timestamp("us", tz="UTC"),
        TimestampNanoType: pa.timestamp("ns"),
        TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),
        StringType: pa.large_string(), BinaryType: pa.large_binary(),
        UUIDType: pa.binary(16),
    }
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, StructType):
        return pa.struct([_arrow_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return pa.large_list(_arrow_field(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(_arrow_field(t.key_field), _arrow_field(t.value_field))
    raise ValidationError(f"floe cannot write {t} columns to Parquet")


def _arrow_field(f: NestedField) -> pa.Field:
    return pa.field(f.name, to_arrow_type(f.field_type), nullable=not f.required,
                    metadata={FIELD_ID_KEY: str(f.field_id).encode()})


def schema_to_arrow(schema: Schema) -> pa.Schema:
    """An Arrow schema whose fields carry Iceberg field ids (``PARQUET:field_id``)."""
    return pa.schema([_arrow_field(f) for f in schema.fields])


@dataclass
class ParquetFileMetrics:
    """What a manifest entry records about one written data file."""

    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] = field(default_factory=dict)
    value_counts: dict[int, int] = field(default_factory=dict)
    null_value_counts: dict[int, int] = field(default_factory=dict)
    nan_value_counts: dict[int, int] = field(default_factory=dict)
    lower_bounds: dict[int, bytes] = field(default_factory=dict)
    upper_bounds: dict[int, bytes] = field(default_factory=dict)
    split_offsets: list[int] = field(default_factory=list)


def from_arrow_value(t: PrimitiveType, v: Any) -> Any:
    """An Arrow scalar's Python value → floe's value representation (core-api.md)."""
    if v is None or isinstance(v, int) and not isinstance(v, bool):
        return v  # already a day / micro count (transform results) or a plain integer
    if isinstance(t, DateType):
        return (v - _EPOCH_DATE).days
    if isinstance(t, (TimestampType, TimestamptzType)):
        base = _EPOCH_TZ if v.tzinfo is not None else _EPOCH
        delta = v - base
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(t, TimeType):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if isinstance(t, UUIDType):  # Arrow's uuid type gives a UUID already, binary(16) bytes
        return v if isinstance(v, _uuid.UUID) else _uuid.UUID(bytes=bytes(v))
    if isinstance(t, DecimalType):
        return decimal.Decimal(v)
    return v


def _truncate_upper_string(s: str, length: int) -> str | None:
    if len(s) <= length:
        return s
    chars = list(s[:length])
    for i in range(len(chars) - 1, -1, -1):
        cp = ord(chars[i]) + 1
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0xE000
        if cp <= 0x10FFFF:
            chars[i] = chr(cp)
            return "".join(chars[: i + 1])
    return None  # no upper bound can be written


def _truncate_upper_binary(b: bytes, length: int) -> bytes | None:
    if len(b) <= length:
        return b
    arr = bytearray(b[:length])
    for i in range(len(arr) - 1, -1, -1):
        if arr[i] < 0xFF:
            arr[i] += 1
            return bytes(arr[: i + 1])
    return None


def _leaves(
    fields: tuple[NestedField, ...], arrays: list[pa.Array | None], repeated: bool
) -> list[tuple[NestedField, pa.Array | None, bool]]:
    """Primitive leaves with their flattened arrays (None inside lists and maps)."""
    out: list[tuple[NestedField, pa.Array | None, bool]] = []
    for f, arr in zip(fields, arrays, strict=True):
        t = f.field_type
        if isinstance(t, StructType):
            children = [
                pc.struct_field(arr, [i]) if arr is not None else None
                for i in range(len(t.fields))
            ]
            out += _leaves(t.fields, children, repeated)
        elif isinstance(t, (ListType, MapType)):
            out += _leaves(t.fields, [None] * len(t.fields), True)
        else:
            out.append((f, arr, repeated))
    return out


def collect_metrics(
    schema: Schema, table: pa.Table, parquet_meta: pq.FileMetaData, file_size: int,
    truncate_length: int = DEFAULT_TRUNCATE_LENGTH,
) -> ParquetFileMetrics:
    """Iceberg metrics of a written file: counts and bounds from the data, sizes from the footer."""
    m = ParquetFileMetrics(record_count=table.num_rows, file_size_in_bytes=file_size)
    by_path: dict[str, int] = {}
    for rg in range(parquet_meta.num_row_groups):
        group = parquet_meta.row_group(rg)
        first = group.column(0)
        m.split_offsets.append(first.dictionary_page_offset or first.data_page_offset)
        for c in range(group.num_columns):
            col = group.column(c)
            path = col.path_in_schema
            by_path[path] = by_path.get(path, 0) + col.total_compressed_size
    sizes_by_id = _sizes_by_field_id(schema, by_path)
    m.column_sizes.update(sizes_by_id)

    arrays = [table.column(i).combine_chunks() for i in range(table.num_columns)]
    for f, arr, repeated in _leaves(schema.fields, arrays, False):
        fid, t = f.field_id, f.field_type
        if arr is None or repeated:
            continue  # Java keeps no counts or bounds for repeated leaves by default either
        assert isinstance(t, PrimitiveType)
        m.value_counts[fid] = len(arr)
        m.null_value_counts[fid] = arr.null_count
        valid = arr.drop_null()
        if isinstance(t, (FloatType, DoubleType)):
            nan_mask = pc.is_nan(valid)
            m.nan_value_counts[fid] = pc.sum(nan_mask).as_py() or 0
            valid = valid.filter(pc.invert(nan_mask))
        if len(valid) == 0:
            continue
        lo, hi = _min_max(t, valid)
        if isinstance(t, StringType):
            lo_s = lo[:truncate_length]
            hi_s = _truncate_upper_string(hi, truncate_length)
            m.lower_bounds[fid] = conversions.to_bytes(t, lo_s)
            if hi_s is not None:
                m.upper_bounds[fid] = conversions.to_bytes(t, hi_s)
            continue
        if isinstance(t, BinaryType):
            m.lower_bounds[fid] = bytes(lo[:truncate_length])
            hi_b = _truncate_upper_binary(bytes(hi), truncate_length)
            if hi_b is not None:
                m.upper_bounds[fid] = hi_b
            continue
        m.lower_bounds[fid] = conversions.to_bytes(t, from_arrow_value(t, lo))
        m.upper_bounds[fid] = conversions.to_bytes(t, from_arrow_value(t, hi))
    return m


def _min_max(t: PrimitiveType, arr: pa.Array) -> tuple[Any, Any]:
    # Arrow compares strings and binaries by their bytes: Iceberg's order (for strings, UTF-8
    # bytes = code points), without turning a whole column into Python objects
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(t, (BinaryType, FixedType, UUIDType)) and lo is not None:
        return bytes(lo), bytes(hi)
    return lo, hi


def _sizes_by_field_id(schema: Schema, by_path: dict[str, int]) -> dict[int, int]:
    """Parquet column paths (``a.b``, ``l.list.element``, ``m.key_value.key``) → field ids."""
    out: dict[int, int] = {}
    for path, size in by_path.items():
        parts = [p for p in path.split(".") if p not in ("list", "key_value")]
        name = ".".join(parts)
        try:
            fid = schema.find_field_id(name)
        except ValidationError:
            continue
        out[fid] = out.get(fid, 0) + size
    return out


def write_parquet(
    table: pa.Table, schema: Schema, *, compression: str = "zstd",
    row_group_size: int = 1 << 20,
) -> tuple[bytes, ParquetFileMetrics]:
    """Serialise rows as a Parquet file with field ids; return its bytes and its metrics.

    ``table`` is cast to the schema's Arrow types first (by column name); a column the
    schema requires must have no nulls.
    """
    target = schema_to_arrow(schema)
    try:
        table = table.select([f.name for f in target]).cast(target)
    except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValidationError(f"rows do not fit the table schema: {e}") from None
    buf = _io.BytesIO()
    writer = pq.ParquetWriter(buf, target, compression=compression, write_statistics=True)
    writer.write_table(table, row_group_size=row_group_size)
    writer.close()
    data = buf.getvalue()
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    return data, collect_metrics(schema, table, meta, len(data))
