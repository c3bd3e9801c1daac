"""Reading data files of a scan plan as Arrow record batches, deletes applied.

Columns are matched **by field id only** (spec "Column Projection"): a renamed column is
found under its old name, a dropped and re-added column (new id) reads as null from old
files, a promoted type (int→long, float→double, wider decimal) is cast. Files without field
ids are read through the table's ``schema.name-mapping.default``; without a mapping they
are refused. Identity partition values missing from a file come from the task's partition.

Deletes (spec "Row-level Deletes"): position deletes are applied while streaming (row
positions count from the start of the file); equality deletes compare the equality columns
with Iceberg's semantics, where a null key deletes rows whose value is null. The residual
filter of a task is applied last, rows where it is unknown (null) are dropped.

Reading is streamed batch by batch (``batch_size`` rows) so memory is bounded by a batch
plus the delete sets of the task being read.
"""

from __future__ import annotations

import os
import queue
import struct
from array import array
import threading
import uuid
import zlib
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from floe.cache import LRUCache
from floe.errors import FloeError, NotFound, ValidationError
from floe.io import FileIO, is_local, local_path
from floe.io.parquet import FIELD_ID_KEY, schema_to_arrow, to_arrow_type
from floe.manifest import FileContent
from floe.metadata import TableMetadata
from floe.name_mapping import MappedField, parse_name_mapping
from floe.partitioning import PartitionSpec
from floe.properties import NAME_MAPPING as NAME_MAPPING_PROPERTY
from floe.scan.delete_index import POSITION_DELETE_SCHEMA, DeleteFile
from floe.scan.planning import FileScanTask, ScanPlan
from floe.schema import Schema
from floe.types import ListType, MapType, NestedField, PrimitiveType, StructType

__all__ = ["read_plan", "read_task", "plan_to_table", "ReadOptions", "UnsupportedDeletes",
           "NAME_MAPPING_PROPERTY", "DeleteCache", "ROW_POSITION"]

DEFAULT_BATCH_SIZE = 131_072
#: A task's byte range (``start``, ``length``) is honoured for Parquet files: only the row
#: groups starting inside it are read, positions still counted from the start of the file.
READS_SPLITS = True


class UnsupportedDeletes(FloeError):
    """A table whose deletes floe cannot apply; reading it would return wrong rows."""


# -- field ids of a file's Arrow schema --------------------------------------------------------


def _field_id(f: pa.Field) -> int | None:
    md = f.metadata
    if md and FIELD_ID_KEY in md:
        return int(md[FIELD_ID_KEY])
    return None


def _with_id(f: pa.Field, fid: int | None, type_: pa.DataType | None = None) -> pa.Field:
    md = dict(f.metadata or {})
    md.pop(FIELD_ID_KEY, None)
    if fid is not None:
        md[FIELD_ID_KEY] = str(fid).encode()
    return pa.field(f.name, type_ if type_ is not None else f.type, f.nullable, md)


def _has_ids(schema: pa.Schema) -> bool:
    return any(_field_id(f) is not None for f in schema)


def _apply_mapping(fields: Iterable[pa.Field],
                   mapping: Sequence[MappedField]) -> list[pa.Field]:
    """Spec "Column Projection" (name mapping): ids for fields that have none, by name."""
    by_name: dict[str, MappedField] = {}
    for m in mapping:
        for n in m.names:
            by_name[n] = m
    out = []
    for f in fields:
        mapped = by_name.get(f.name)
        fid = mapped.field_id if mapped else None
        sub = (mapped.fields if mapped else None) or ()
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct(_apply_mapping(list(t), sub))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            (vf,) = _apply_mapping([t.value_field], sub) if sub else [t.value_field]
            if not sub or _field_id(vf) is None:
                vf = _apply_mapping([t.value_field.with_name("element")], sub)[0]
            t = pa.large_list(vf) if pa.types.is_large_list(t) else pa.list_(vf)
        elif pa.types.is_map(t):
            kf, vf = _apply_mapping([t.key_field.with_name("key"),
                                     t.item_field.with_name("value")], sub)
            t = pa.map_(kf, vf)
        out.append(_with_id(f, fid, t))
    return out


def file_schema_with_ids(arrow_schema: pa.Schema, md: TableMetadata | None,
                         location: str) -> pa.Schema:
    """The file's Arrow schema with a field id on every field it can have one."""
    if _has_ids(arrow_schema):
        return arrow_schema
    raw = (md.properties if md is not None else {}).get(NAME_MAPPING_PROPERTY)
    if not raw:
        raise ValidationError(
            f"{location}: the data file has no field ids and the table has no "
            f"{NAME_MAPPING_PROPERTY!r} property to map its column names")
    return pa.schema(_apply_mapping(list(arrow_schema), parse_name_mapping(raw).fields))


# -- projection by field id --------------------------------------------------------------------


def _constant(value: Any, target: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, type=target)
    if isinstance(value, uuid.UUID):
        value = value.bytes
    return pa.repeat(pa.array([value], type=target)[0], n)


def _project(arr: pa.Array, ftype: pa.DataType, field: NestedField,
             where: str) -> pa.Array:
    """One column: the file's array (Arrow type ``ftype``, with ids) as the Iceberg field."""
    t = field.field_type
    target = to_arrow_type(t)
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
        ftype = arr.type
    if isinstance(t, StructType):
        if not pa.types.is_struct(ftype):
            raise ValidationError(f"{where}: column {field.name} is not a struct in the file")
        by_id = {_field_id(ftype.field(i)): i for i in range(ftype.num_fields)}
        children = []
        for child in t.fields:
            i = by_id.get(child.field_id)
            if i is None:
                children.append(_missing(child, len(arr), where))
            else:
                children.append(_project(arr.field(i), ftype.field(i).type, child, where))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(t, ListType):
        if not (pa.types.is_list(ftype) or pa.types.is_large_list(ftype)):
            raise ValidationError(f"{where}: column {field.name} is not a list in the file")
        values = _project(arr.values, ftype.value_type, t.element_field, where)
        offsets = arr.offsets.cast(pa.int64())
        mask = arr.is_null() if arr.null_count else None
        return pa.LargeListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(t, MapType):
        if not pa.types.is_map(ftype):
            raise ValidationError(f"{where}: column {field.name} is not a map in the file")
        keys = _project(arr.keys, ftype.key_type, t.key_field, where)
        items = _project(arr.items, ftype.item_type, t.value_field, where)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if arr.type == target:
        return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(
            f"{where}: column {field.name} has type {arr.type} in the file, which cannot be "
            f"read as {t}: {e}") from None


def _missing(field: NestedField, n: int, where: str) -> pa.Array:
    target = to_arrow_type(field.field_type)
    if field.initial_default is not None and isinstance(field.field_type, PrimitiveType):
        return _constant(field.initial_default, target, n)
    return pa.nulls(n, type=target)


class _Projection:
    """How one file's top-level columns become the read schema's columns."""

    def __init__(self, file_schema: pa.Schema, read_schema: Schema,
                 constants: dict[int, Any], where: str) -> None:
        self.where = where
        self.read_schema = read_schema
        self.arrow_schema = schema_to_arrow(read_schema)
        by_id = {_field_id(f): i for i, f in enumerate(file_schema)}
        self.columns: list[str] = []
        self.plan: list[tuple[NestedField, int | None, pa.DataType | None]] = []
        self.constants = constants
        for f in read_schema.fields:
            i = by_id.get(f.field_id)
            if i is None:
                self.plan.append((f, None, None))
            else:
                self.plan.append((f, len(self.columns), file_schema.field(i).type))
                self.columns.append(file_schema.field(i).name)

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        arrays = []
        for f, i, ftype in self.plan:
            if i is None or ftype is None:
                if f.field_id in self.constants:
                    arrays.append(_constant(self.constants[f.field_id],
                                            to_arrow_type(f.field_type), n))
                else:
                    if f.required and f.initial_default is None:
                        raise ValidationError(
                            f"{self.where}: the data file has no column for required field "
                            f"{f.name} (id {f.field_id})")
                    arrays.append(_missing(f, n, self.where))
            else:
                arrays.append(_project(batch.column(i), ftype, f, self.where))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


def _identity_constants(spec: PartitionSpec | None, partition: Sequence[Any],
                        schema: Schema) -> dict[int, Any]:
    if spec is None:
        return {}
    out: dict[int, Any] = {}
    for pf, value in zip(spec.fields, partition, strict=False):
        if str(pf.transform) == "identity" and pf.source_id in schema.field_ids():
            out[pf.source_id] = value
    return out


# -- opening files -----------------------------------------------------------------------------


def _open(io: Any, path: str, what: str) -> Any:
    """A readable file; local files through Arrow's own (GIL-free, memory-mapped) IO."""
    if type(io) is FileIO and is_local(path):
        try:
            return pa.memory_map(local_path(path), "r")
        except FileNotFoundError:
            raise NotFound(
                f"{path}: {what} listed in the table's manifests does not exist") from None
    try:
        return io.open(path)
    except NotFound:
        raise NotFound(f"{path}: {what} listed in the table's manifests does not exist") from None


def _open_parquet(fh: Any, path: str, what: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(fh)
    except (pa.ArrowInvalid, OSError) as e:
        raise FloeError(f"{path}: cannot read {what}: {e}") from None


def _format(df: Any) -> str:
    return str(df.file_format).upper()


def _file_batches(io: Any, path: str, fmt: str, md: TableMetadata | None,
                  read_schema: Schema, constants: dict[int, Any], batch_size: int,
                  what: str = "data file", byte_range: tuple[int, int] | None = None,
                  first_row: list[int] | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of a data or delete file projected to ``read_schema`` by field id.

    ``byte_range`` (start, length) reads only the Parquet row groups that start inside it
    (Java: a split owns the row groups whose first byte it holds); ``first_row[0]`` is set to
    the file position of the first row read.

    A file that is damaged (anyone can write into a bucket) raises :class:`FloeError` naming
    it, whatever the format library raised."""
    try:
        yield from _format_batches(io, path, fmt, md, read_schema, constants, batch_size, what,
                                   byte_range, first_row)
    except (pa.ArrowException, OSError, EOFError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise FloeError(f"{path}: cannot read {what}: {e}") from None


def _format_batches(io: Any, path: str, fmt: str, md: TableMetadata | None,
                    read_schema: Schema, constants: dict[int, Any], batch_size: int,
                    what: str, byte_range: tuple[int, int] | None,
                    first_row: list[int] | None) -> Iterator[pa.RecordBatch]:
    if fmt == "PARQUET":
        with _open(io, path, what) as fh:
            yield from _parquet_batches(fh, path, md, read_schema, constants, batch_size, what,
                                        byte_range, first_row)
        return
    if byte_range is not None and byte_range[0] > 0:
        return  # only Parquet files are split: a later range of another format is empty
    if fmt == "ORC":
        yield from _orc_batches(io, path, md, read_schema, constants, batch_size, what)
        return
    if fmt == "AVRO":
        yield from _avro_batches(io, path, read_schema, constants, batch_size, what)
        return
    raise ValidationError(f"{path}: floe cannot read {fmt} {what}s")


def row_group_starts(meta: pq.FileMetaData) -> list[int]:
    """Where each row group starts: its first column chunk's dictionary page, else its first
    data page (Java ``BlockMetaData.getStartingPos``; what split offsets record)."""
    out = []
    for rg in range(meta.num_row_groups):
        first = meta.row_group(rg).column(0)
        out.append(first.dictionary_page_offset or first.data_page_offset)
    return out


def _parquet_batches(fh: Any, path: str, md: TableMetadata | None, read_schema: Schema,
                     constants: dict[int, Any], batch_size: int, what: str,
                     byte_range: tuple[int, int] | None = None,
                     first_row: list[int] | None = None) -> Iterator[pa.RecordBatch]:
    pf = _open_parquet(fh, path, what)
    fschema = file_schema_with_ids(pf.schema_arrow, md, path)
    proj = _Projection(fschema, read_schema, constants, path)
    meta = pf.metadata
    groups: list[int] | None = None
    if byte_range is not None:
        lo, hi = byte_range[0], byte_range[0] + byte_range[1]
        starts = row_group_starts(meta)
        groups = [i for i, s in enumerate(starts) if lo <= s < hi]
        if first_row is not None:
            first_row[0] = sum(meta.row_group(i).num_rows for i in range(groups[0])) \
                if groups else 0
        if not groups:
            return
    if not proj.columns:  # nothing to read but the row count
        n = meta.num_rows if groups is None else sum(meta.row_group(i).num_rows
                                                     for i in groups)
        for start in range(0, n, batch_size):
            yield proj.apply(_empty(min(batch_size, n - start)))
        return
    for batch in pf.iter_batches(batch_size=batch_size, row_groups=groups,
                                 columns=proj.columns, use_threads=True):
        yield proj.apply(batch)


def _empty(n: int) -> pa.RecordBatch:
    return pa.record_batch([pa.nulls(n)], names=["_"]).select([])


def _orc_batches(io: Any, path: str, md: TableMetadata | None, read_schema: Schema,
                 constants: dict[int, Any], batch_size: int, what: str
                 ) -> Iterator[pa.RecordBatch]:
    import pyarrow.orc as orc

    from floe.io.orc import orc_schema_with_ids, orc_types

    with _open(io, path, what) as fh:
        data = fh.read()
    try:
        f = orc.ORCFile(pa.BufferReader(data))
    except (pa.ArrowInvalid, OSError) as e:
        raise FloeError(f"{path}: cannot read {what}: {e}") from None
    # pyarrow hides ORC's type attributes: the field ids come from the footer (Iceberg Java
    # writes iceberg.id), else from the table's name mapping
    fschema = orc_schema_with_ids(f.schema, orc_types(data, path), FIELD_ID_KEY) \
        or file_schema_with_ids(f.schema, md, path)
    proj = _Projection(fschema, read_schema, constants, path)
    for stripe in range(f.nstripes):
        stripe_batch = f.read_stripe(stripe, columns=proj.columns or None)
        for start in range(0, stripe_batch.num_rows, batch_size):
            yield proj.apply(stripe_batch.slice(start, batch_size))


def _avro_batches(io: Any, path: str, read_schema: Schema, constants: dict[int, Any],
                  batch_size: int, what: str) -> Iterator[pa.RecordBatch]:
    """Avro data files: top-level columns by field id (nested values by name)."""
    import fastavro

    with _open(io, path, what) as fh:
        records = _fastavro_records(fastavro.reader, fh, path, what)
        wschema = next(records)
        if not isinstance(wschema, dict) or not isinstance(wschema.get("fields", []), list):
            raise FloeError(f"{path}: cannot read {what}: its Avro schema is not a record")
        names = {f.get("field-id"): f["name"] for f in wschema.get("fields", [])
                 if isinstance(f, dict) and "name" in f}
        if None in names and len(names) == 1:
            raise ValidationError(f"{path}: the Avro data file has no field ids")
        target = schema_to_arrow(read_schema)
        rows: list[dict[str, Any]] = []

        def flush() -> pa.RecordBatch:
            arrays = []
            for f, af in zip(read_schema.fields, target, strict=True):
                name = names.get(f.field_id)
                if name is None:
                    arrays.append(_constant(constants.get(f.field_id), af.type, len(rows)))
                else:
                    vals = [_avro_value(r.get(name)) for r in rows]
                    arrays.append(pa.array(vals, type=af.type))
            return pa.RecordBatch.from_arrays(arrays, schema=target)

        for rec in records:
            if not isinstance(rec, dict):
                raise FloeError(f"{path}: cannot read {what}: a record is not a record")
            rows.append(rec)
            if len(rows) >= batch_size:
                yield flush()
                rows = []
        if rows:
            yield flush()


def _fastavro_records(reader: Any, fh: Any, path: str, what: str) -> Iterator[Any]:
    """The writer schema, then the records of an Avro file read by fastavro; whatever fastavro
    raises on a damaged file (it has no error class of its own: EOFError, ValueError,
    IndexError, UnicodeDecodeError, even SystemError...) becomes a :class:`FloeError`."""
    try:
        r = reader(fh)
        yield r.writer_schema
        yield from r
    except Exception as e:
        raise FloeError(f"{path}: cannot read {what}: not a valid Avro file: "
                        f"{type(e).__name__}: {e}") from None


def _avro_value(v: Any) -> Any:
    return v.bytes if isinstance(v, uuid.UUID) else v


# -- deletes -----------------------------------------------------------------------------------


class DeleteCache(LRUCache[tuple[str, tuple[int, ...]], Any]):
    """Decoded delete files by (path, equality ids), at most ``max_files`` of them: position
    deletes as an Arrow table of (file_path, pos), equality deletes as their key tables."""

    def __init__(self, max_files: int = 256) -> None:
        super().__init__(max_files)

    @property
    def max_files(self) -> int:
        return self.max_weight


def _position_deletes(io: Any, task: FileScanTask, md: TableMetadata | None,
                      cache: DeleteCache) -> pa.Array | None:
    """Deleted row positions of the task's data file (int64, unsorted), or None."""
    parts: list[pa.Array] = []
    path = task.data_file.file_path
    for d in task.delete_files:
        if d.content != FileContent.POSITION_DELETES:
            continue
        if d.is_deletion_vector:
            parts.append(_deletion_vector(io, d, path))
            continue

        def load(d: DeleteFile = d) -> pa.Table:
            batches = list(_file_batches(io, d.path, _format(d.data_file), md,
                                         POSITION_DELETE_SCHEMA, {}, DEFAULT_BATCH_SIZE,
                                         "position delete file"))
            return pa.Table.from_batches(batches, schema=schema_to_arrow(POSITION_DELETE_SCHEMA))

        io.guard(d.path)  # before the cache: a copy cached for another reader is no way round
        table = cache.get_or_load((d.path, ()), load)
        if d.data_file.referenced_data_file == path:
            pos = table.column(1)
        else:
            pos = table.column(1).filter(pc.equal(table.column(0), path))
        if len(pos):
            parts.append(pos.combine_chunks())
    if not parts:
        return None
    return pa.concat_arrays(parts) if len(parts) > 1 else parts[0]


class _PositionMask:
    """Deleted-row masks per batch from the (sorted, unique) deleted positions of a file.

    Each batch probes only the positions that fall in its row range, so the hash set built
    per batch is small and no file-sized index array is made.
    """

    def __init__(self, positions: pa.Array) -> None:
        self.positions = pc.unique(positions).sort() if len(positions) else positions
        self.values = self.positions.to_pylist()
        self.cursor = 0
        self._index: pa.Array | None = None

    def _arange(self, n: int) -> pa.Array:
        if self._index is None or len(self._index) < n:
            self._index = pc.subtract(
                pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
        return self._index.slice(0, n)

    def for_rows(self, row: int, n: int) -> pa.Array | None:
        lo = bisect_left(self.values, row, self.cursor)
        hi = bisect_left(self.values, row + n, lo)
        self.cursor = hi
        if hi == lo:
            return None
        if hi - lo == n:
            return pa.repeat(pa.scalar(True), n)
        local = pc.subtract(self.positions.slice(lo, hi - lo), row)
        return pc.is_in(self._arange(n), value_set=local)


_DV_MAGIC = b"\xd1\xd3\x39\x64"


def _deletion_vector(io: Any, d: DeleteFile, data_path: str) -> pa.Array:
    """Spec "Deletion Vectors": a ``deletion-vector-v1`` Puffin blob, positions sorted."""
    df = d.data_file
    if df.referenced_data_file not in (None, data_path):
        return pa.array([], pa.int64())
    if df.content_offset is None or df.content_size_in_bytes is None:
        raise UnsupportedDeletes(f"{d.path}: deletion vector without content offset and size")
    if df.content_offset < 0 or df.content_size_in_bytes < 0:
        raise UnsupportedDeletes(f"{d.path}: deletion vector at a negative offset or size")
    try:
        with io.open(d.path) as fh:
            fh.seek(df.content_offset)
            blob = fh.read(df.content_size_in_bytes)
    except NotFound:
        raise NotFound(f"{d.path}: deletion vector file listed in the table's manifests does "
                       "not exist") from None
    if len(blob) < 12 or blob[4:8] != _DV_MAGIC:
        raise UnsupportedDeletes(f"{d.path}: not a deletion-vector-v1 blob at offset "
                                 f"{df.content_offset}")
    (length,) = struct.unpack(">I", blob[:4])
    if 8 + length > len(blob):
        raise UnsupportedDeletes(f"{d.path}: deletion vector longer than its blob")
    body = blob[4:4 + length]
    (crc,) = struct.unpack(">I", blob[4 + length:8 + length])
    if zlib.crc32(body) != crc:
        raise UnsupportedDeletes(f"{d.path}: deletion vector checksum mismatch")
    try:
        return roaring64_positions(body[4:], limit=df.record_count)
    except UnsupportedDeletes as e:
        raise UnsupportedDeletes(f"{d.path}: {e}") from None


def roaring64_positions(data: bytes, limit: int | None = None) -> pa.Array:
    """The values of a 64-bit Roaring bitmap in the portable format, sorted (int64).

    A damaged bitmap raises :class:`UnsupportedDeletes`; so does one holding more than
    ``limit`` values (a deletion vector's cardinality is its delete file's record count), which
    bounds what a hostile run container can make floe allocate."""
    try:
        return pa.array(_roaring64(data, limit), pa.int64())
    except (struct.error, IndexError, ValueError, OverflowError):  # ArrowInvalid too
        raise UnsupportedDeletes("deletion vector: not a portable Roaring bitmap (truncated "
                                 "or damaged)") from None


def _roaring64(data: bytes, limit: int | None) -> list[int]:
    (count,) = struct.unpack_from("<Q", data, 0)
    if count > len(data):  # each bitmap takes 8 bytes at least
        raise UnsupportedDeletes("deletion vector: more bitmaps than bytes")
    off = 8
    values: list[int] = []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, off)
        low, off = _roaring32(data, off + 4)
        base = high << 32
        values += [base | v for v in low] if base else low
        if limit is not None and len(values) > limit:
            raise UnsupportedDeletes(f"deletion vector: more than its {limit} positions")
    return values


def _u16(data: bytes, off: int, count: int) -> list[int]:
    a = array("H")
    a.frombytes(data[off:off + 2 * count])
    if struct.pack("=H", 1) != struct.pack("<H", 1):  # pragma: no cover - big-endian hosts
        a.byteswap()
    return a.tolist()


def _roaring32(data: bytes, off: int) -> tuple[list[int], int]:
    """One 32-bit Roaring bitmap (portable serialisation) from ``off``: values, end offset."""
    (cookie,) = struct.unpack_from("<I", data, off)
    off += 4
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        run_bits = data[off:off + (size + 7) // 8]
        off += (size + 7) // 8
    elif cookie == 12346:
        (size,) = struct.unpack_from("<I", data, off)
        off += 4
        run_bits = b""
    else:
        raise UnsupportedDeletes("deletion vector: not a portable Roaring bitmap")
    header = _u16(data, off, 2 * size)
    off += 4 * size
    if not run_bits or size >= 4:
        off += 4 * size  # container offsets, not needed when reading in order
    out: list[int] = []
    for i in range(size):
        key = header[2 * i] << 16
        card = header[2 * i + 1] + 1
        if run_bits and run_bits[i // 8] >> (i % 8) & 1:
            (runs,) = struct.unpack_from("<H", data, off)
            pairs = _u16(data, off + 2, 2 * runs)
            off += 2 + 4 * runs
            end = -1
            for k in range(runs):
                # runs sorted and disjoint inside the container: at most 2^16 values
                if pairs[2 * k] <= end or pairs[2 * k] + pairs[2 * k + 1] > 0xFFFF:
                    raise UnsupportedDeletes("deletion vector: overlapping or overflowing "
                                             "runs")
                end = pairs[2 * k] + pairs[2 * k + 1]
                start = key | pairs[2 * k]
                out.extend(range(start, start + pairs[2 * k + 1] + 1))
        elif card > 4096:
            words = data[off:off + 8192]
            if len(words) < 8192:
                raise IndexError("truncated bitmap container")
            off += 8192
            out.extend(key | (j * 8 + b) for j, byte in enumerate(words) if byte
                       for b in range(8) if byte >> b & 1)
        else:
            out.extend(key | v for v in _u16(data, off, card))
            off += 2 * card
    return out, off


def _field_anywhere(md: TableMetadata | None, schema: Schema, fid: int) -> NestedField:
    try:
        return schema.find_field(fid)
    except (ValidationError, KeyError):
        pass
    for s in sorted(md.schemas if md else [], key=lambda s: -s.schema_id):
        try:
            return s.find_field(fid)
        except (ValidationError, KeyError):
            continue
    raise ValidationError(f"equality delete field id {fid} is in no schema of the table")


def _equality_schema(md: TableMetadata | None, schema: Schema, ids: tuple[int, ...]
                     ) -> Schema:
    """The equality columns, nested in their structs like Java writes delete files."""
    for s in [schema, *sorted(md.schemas if md else [], key=lambda s: -s.schema_id)]:
        names = [s.find_column_name(i) for i in ids]
        if all(n is not None for n in names):
            return s.select(*[n for n in names if n is not None])
    return Schema(*[_field_anywhere(md, schema, i) for i in ids])


def _equality_deletes(io: Any, task: FileScanTask, md: TableMetadata | None, schema: Schema,
                      cache: DeleteCache) -> list[tuple[tuple[int, ...], pa.Table]]:
    """Per set of equality field ids: the delete keys of every applicable file."""
    groups: dict[tuple[int, ...], list[pa.Table]] = {}
    for d in task.delete_files:
        if d.content != FileContent.EQUALITY_DELETES:
            continue
        ids = tuple(d.data_file.equality_ids or ())
        if not ids:
            raise ValidationError(f"{d.path}: equality delete file without equality ids")
        eq_schema = _equality_schema(md, schema, ids)

        def load(d: DeleteFile = d, eq_schema: Schema = eq_schema, ids: tuple[int, ...] = ids
                 ) -> pa.Table:
            batches = _file_batches(io, d.path, _format(d.data_file), md, eq_schema, {},
                                    DEFAULT_BATCH_SIZE, "equality delete file")
            flat = [pa.table([_column(b, eq_schema, i) for i in ids],
                             names=[str(i) for i in ids]) for b in batches]
            if not flat:
                return pa.table([pa.array([], to_arrow_type(eq_schema.find_type(i)))
                                 for i in ids], names=[str(i) for i in ids])
            return pa.concat_tables(flat)

        io.guard(d.path)
        groups.setdefault(ids, []).append(cache.get_or_load((d.path, ids), load))
    return [(ids, pa.concat_tables(tables)) for ids, tables in groups.items()]


def _column(batch: pa.RecordBatch, schema: Schema, fid: int) -> pa.Array:
    """The values of field ``fid`` (top-level or inside structs) of a batch of ``schema``.

    A null parent struct makes the value null, as Java's struct accessors do."""
    path = [fid]
    while (parent := schema.parent_id(path[-1])) is not None:
        path.append(parent)
    path.reverse()
    top = [f.field_id for f in schema.fields].index(path[0])
    arr = batch.column(top)
    struct = schema.find_field(path[0]).field_type
    for child in path[1:]:
        if not isinstance(struct, StructType):
            raise ValidationError(f"field id {fid} is inside a list or map: not an equality key")
        i = [f.field_id for f in struct.fields].index(child)
        arr = pc.struct_field(arr, [i])
        struct = struct.fields[i].field_type
    return arr


class _SortedKeys:
    """The keys of a one-column equality delete, sorted: each batch probes only the keys
    between its own minimum and maximum (a small hash set instead of all keys)."""

    def __init__(self, keys: pa.Array) -> None:
        self.has_null = keys.null_count > 0
        self.sorted = pc.unique(keys.drop_null()).sort()
        self.values = self.sorted.to_pylist()

    @staticmethod
    def usable(t: pa.DataType) -> bool:
        return bool(pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_string(t)
                    or pa.types.is_large_string(t) or pa.types.is_date(t)
                    or pa.types.is_timestamp(t) or pa.types.is_time(t))

    def deleted(self, col: pa.Array) -> pa.Array:
        nulls = col.is_null() if self.has_null else None
        mm = pc.min_max(col)
        lo_v, hi_v = mm["min"].as_py(), mm["max"].as_py()
        if lo_v is None:  # every value is null
            return nulls if nulls is not None else pa.repeat(pa.scalar(False), len(col))
        lo = bisect_left(self.values, lo_v)
        hi = bisect_right(self.values, hi_v, lo)
        hit = pc.fill_null(pc.is_in(col, value_set=self.sorted.slice(lo, hi - lo)), False) \
            if hi > lo else pa.repeat(pa.scalar(False), len(col))
        return hit if nulls is None else pc.or_(hit, nulls)


def _eq_deleted(batch: pa.RecordBatch, ids: tuple[int, ...], keys: pa.Table,
                schema: Schema, sorted_keys: _SortedKeys | None = None) -> pa.Array:
    """Boolean mask of rows whose equality columns match a delete key (null matches null)."""
    if len(ids) == 1:
        col = _column(batch, schema, ids[0])
        if sorted_keys is not None:
            return sorted_keys.deleted(col)
        return pc.fill_null(pc.is_in(col, value_set=keys.column(0).combine_chunks(),
                                     skip_nulls=False), False)
    n = batch.num_rows
    rows = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
    left: dict[str, Any] = {"__row": rows}
    right: dict[str, Any] = {}
    names = []
    for k, fid in enumerate(ids):
        lcol = _column(batch, schema, fid)
        rcol = keys.column(k).combine_chunks()
        left[f"n{k}"] = lcol.is_null()
        right[f"n{k}"] = rcol.is_null()
        names.append(f"n{k}")
        lvalid = lcol.drop_null()
        rvalid = rcol.drop_null()
        if len(lvalid) and len(rvalid):
            fill = rvalid[0]
            left[f"v{k}"] = pc.fill_null(lcol, fill)
            right[f"v{k}"] = pc.fill_null(rcol, fill)
            names.append(f"v{k}")
    lt = pa.table(left)
    rt = pa.table(right).group_by(names).aggregate([])
    hit = lt.join(rt, keys=names, join_type="left semi").column("__row")
    return pc.is_in(rows, value_set=hit.combine_chunks())


# -- tasks -------------------------------------------------------------------------------------


class ReadOptions:
    """What to read: the scan schema, output columns and helpers shared across tasks."""

    def __init__(self, md: TableMetadata | None, schema: Schema,
                 columns: Sequence[str] | None = None, case_sensitive: bool = True,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 delete_cache: DeleteCache | None = None) -> None:
        self.md = md
        self.schema = schema
        self.output = schema.select(*columns, case_sensitive=case_sensitive) if columns \
            else schema
        self.output_arrow = schema_to_arrow(self.output)
        self.batch_size = batch_size
        # `is None`, not `or`: an empty cache is falsy (it has a length).
        self.delete_cache = delete_cache if delete_cache is not None else DeleteCache()
        self.case_sensitive = case_sensitive

    def read_schema(self, extra_ids: Iterable[int]) -> Schema:
        """The output columns plus the top-level columns holding ``extra_ids``."""
        wanted = {f.field_id for f in self.output.fields}
        extra = set(extra_ids) - self.output.field_ids()
        if not extra:
            return self.output
        for f in self.schema.fields:
            if f.field_id in wanted:
                continue
            if f.field_id in extra or (Schema(f).field_ids() & extra):
                wanted.add(f.field_id)
        fields = [f for f in self.schema.fields if f.field_id in wanted]
        known = {i for f in fields for i in Schema(f).field_ids()}
        for fid in sorted(extra - known):  # equality columns dropped from the scan schema
            fields.append(_field_anywhere(self.md, self.schema, fid))
        return Schema(*fields, schema_id=self.schema.schema_id)


#: The column :func:`read_task` adds with ``positions=True``: each row's position in its data
#: file (Java's ``_pos`` metadata column, ``MetadataColumns.ROW_POSITION``).
ROW_POSITION = "_pos"
_POSITION_COLUMN = "\x00floe-row-position"  # while filtering: a name no residual can refer to


def _row_positions(start: int, n: int) -> pa.Array:
    return pc.add(pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1),
                  pa.scalar(start, pa.int64()))


def read_task(io: Any, task: FileScanTask, options: ReadOptions,
              residual: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None,
              *, positions: bool = False) -> Iterator[pa.RecordBatch]:
    """The rows of one task after deletes and the residual, as batches of the output schema.

    ``residual`` filters a batch of the read schema (rows where it is null are dropped); its
    ``field_ids`` attribute names the columns it needs. With ``positions`` every batch ends
    with an int64 column :data:`ROW_POSITION`: the position of each surviving row in the data
    file, counted from 0 before any delete (spec "Position Delete Files"), which is what a
    position delete of that row must name.
    """
    df = task.data_file
    md = options.md
    deleted_positions = _position_deletes(io, task, md, options.delete_cache)
    eq = [(ids, keys, _SortedKeys(keys.column(0).combine_chunks())
           if len(ids) == 1 and _SortedKeys.usable(keys.schema.field(0).type) else None)
          for ids, keys in _equality_deletes(io, task, md, options.schema, options.delete_cache)]
    residual_ids = set(getattr(residual, "field_ids", ()) or ())
    eq_ids = {i for ids, _, _ in eq for i in ids}
    read_schema = options.read_schema(eq_ids | residual_ids)
    spec = md.spec_by_id(task.spec_id) if md is not None else None
    constants = _identity_constants(spec, df.partition, read_schema)
    out_names = [f.name for f in options.output.fields]
    out_schema = options.output_arrow
    if positions:
        out_schema = out_schema.append(pa.field(ROW_POSITION, pa.int64(), nullable=False))
    trim = read_schema is not options.output or positions
    position_mask = None if deleted_positions is None else _PositionMask(deleted_positions)
    row = 0
    byte_range = None if task.length is None else (task.start, task.length)
    first_row = [0]
    for i, batch in enumerate(_file_batches(io, df.file_path, _format(df), md, read_schema,
                                            constants, options.batch_size,
                                            byte_range=byte_range, first_row=first_row)):
        if i == 0:  # set by the reader before its first batch
            row = first_row[0]
        n = batch.num_rows
        if positions:  # a column of the batch, so the delete and residual filters keep it aligned
            batch = batch.append_column(_POSITION_COLUMN, _row_positions(row, n))
        deleted: pa.Array | None = None
        if position_mask is not None:
            deleted = position_mask.for_rows(row, n)
        for ids, keys, sorted_keys in eq:
            hit = _eq_deleted(batch, ids, keys, read_schema, sorted_keys)
            deleted = hit if deleted is None else pc.or_(deleted, hit)
        row += n
        if deleted is not None:
            batch = batch.filter(pc.invert(deleted))
        if residual is not None and batch.num_rows:
            batch = residual(batch)
        if trim:
            columns = [batch.column(c) for c in out_names]
            if positions:
                columns.append(batch.column(_POSITION_COLUMN))
            batch = pa.RecordBatch.from_arrays(columns, schema=out_schema)
        if batch.num_rows:
            yield batch


def read_plan(io: Any, plan: ScanPlan, columns: Sequence[str] | None = None,
              batch_size: int = DEFAULT_BATCH_SIZE, threads: int | None = None
              ) -> Iterator[pa.RecordBatch]:
    """Every row of a planned scan, as record batches of the selected columns, in task order.

    Up to ``threads`` tasks (default: the number of cores, at most 8) are read at once;
    Parquet decoding and Arrow compute release the GIL. Each reader thread hands over at
    most :data:`QUEUE_BATCHES` batches ahead, so memory stays bounded by
    ``threads * QUEUE_BATCHES`` batches plus the delete sets of the tasks in flight.
    """
    options = ReadOptions(plan.metadata, plan.schema, columns, plan.case_sensitive, batch_size)
    from floe.scan import _expr

    residuals: dict[str, Callable[[pa.RecordBatch], pa.RecordBatch] | None] = {}

    def residual_of(task: FileScanTask) -> Callable[[pa.RecordBatch], pa.RecordBatch] | None:
        key = str(task.residual)
        if key not in residuals:
            residuals[key] = _expr.arrow_residual(task.residual, plan.schema,
                                                  plan.case_sensitive)
        return residuals[key]

    n = threads if threads is not None else min(8, os.cpu_count() or 1)
    if n <= 1 or len(plan.tasks) <= 1:
        for task in plan.tasks:
            yield from read_task(io, task, options, residual_of(task))
        return
    for task in plan.tasks:  # compile residuals here: the dict is not shared with threads
        residual_of(task)
    yield from _read_parallel(io, plan.tasks, options, residual_of, n)


QUEUE_BATCHES = 4
_DONE = object()


def _read_parallel(io: Any, tasks: Sequence[FileScanTask], options: ReadOptions,
                   residual_of: Callable[[FileScanTask], Any], threads: int
                   ) -> Iterator[pa.RecordBatch]:
    stop = threading.Event()

    def produce(task: FileScanTask, q: queue.Queue[Any]) -> None:
        try:
            for batch in read_task(io, task, options, residual_of(task)):
                while not stop.is_set():
                    try:
                        q.put(batch, timeout=0.05)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            item: Any = _DONE
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, re-raised there
            item = e
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    pending: deque[queue.Queue[Any]] = deque()
    todo = iter(tasks)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="floe-read") as pool:

        def start() -> None:
            task = next(todo, None)
            if task is not None:
                q: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_BATCHES)
                pool.submit(produce, task, q)
                pending.append(q)

        try:
            for _ in range(threads):
                start()
            while pending:
                q = pending.popleft()
                while True:
                    item = q.get()
                    if item is _DONE:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    yield item
                start()
        finally:
            stop.set()


def plan_to_table(io: Any, plan: ScanPlan, columns: Sequence[str] | None = None) -> pa.Table:
    """The whole scan as one Arrow table."""
    options_schema = (plan.schema.select(*columns, case_sensitive=plan.case_sensitive)
                      if columns else plan.schema)
    return pa.Table.from_batches(list(read_plan(io, plan, columns)),
                                 schema=schema_to_arrow(options_schema))

