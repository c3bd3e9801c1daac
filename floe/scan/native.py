"""The live entries of a manifest decoded by the C extension :mod:`floe._native` straight
into the table the persistent cache stores (:meth:`ManifestStore._table
<floe.scan.manifest_store.ManifestStore._table>`), about twenty times faster than the
Python decoder (:mod:`floe.avro`, :mod:`floe.manifest`), which stays the reference.

The writer schema (from the file's header) is compiled here into a small program
(floe/_native.c describes it): the fields the cache keeps are captured into columns, every
other field is skipped. Decompression stays in :func:`floe.avro.container_blocks`. The
inheritance rules of :func:`floe.manifest.read_manifest` (snapshot ids, sequence numbers,
first row ids) and the dropping of DELETED entries are applied here, column-wise.

Anything this path does not reproduce exactly is declined (:func:`decode_live_table` returns
None) and the caller decodes in Python: partition values of types whose Python value is not
a plain int, str, bytes, bool or float (decimal, uuid, fixed, millisecond times), a union
with more than one non-null branch, a field of an unexpected type, a value beyond 64 bits or
out of its column's range, an unknown status or content. Invalid bytes raise
:class:`~floe.errors.MetadataError` as :func:`floe.avro.read_avro` does.

``FLOE_NATIVE=0`` turns this path off; without the compiled extension it is off silently.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from itertools import accumulate
from types import ModuleType
from typing import TYPE_CHECKING, Any

from floe.avro import (
    AvroCorrupt,
    AvroTruncated,
    _is_varint,
    _key_value_record,
    avro_errors,
    container_blocks,
)
from floe.manifest import (
    _DATA_FILE_FIELDS,
    _PARTITION_POS,
    _SPEC_ID_POS,
    LAZY_STATS_FIELDS,
    DataFile,
    FileFormat,
    ManifestFile,
    _field_index,
    _lookup,
    _named_types,
)
from floe import avro_schemas as S
from floe.scan.manifest_store import columns, table_of

if TYPE_CHECKING:
    import pyarrow as pa



def _extension() -> ModuleType | None:
    try:
        return importlib.import_module("floe._native")
    except ImportError:  # not built: the Python decoder is used
        return None


_native = _extension()

__all__ = ["available", "decode_live_table", "extension"]

# Opcodes and column kinds of floe/_native.c.
(OP_NULL, OP_BOOL, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING, OP_FIXED, OP_ENUM,
 OP_RECORD, OP_UNION, OP_ARRAY, OP_MAP) = range(13)
(C_NULL, C_LONG, C_FLOAT, C_DOUBLE, C_BOOL, C_BYTES, C_STRING, C_LONGS, C_INTMAP,
 C_BYTESMAP) = range(20, 30)
K_INT64, K_DOUBLE, K_BOOL, K_BINARY, K_LIST = range(5)

_SKIP = {"null": OP_NULL, "boolean": OP_BOOL, "int": OP_LONG, "long": OP_LONG,
         "float": OP_FLOAT, "double": OP_DOUBLE, "bytes": OP_BYTES, "string": OP_STRING}
#: Partition value types: Avro type -> (opcode, column kind).
_PARTITION_CAPTURE = {"int": (C_LONG, K_INT64), "long": (C_LONG, K_INT64),
                      "string": (C_STRING, K_BINARY), "bytes": (C_BYTES, K_BINARY),
                      "boolean": (C_BOOL, K_BOOL), "double": (C_DOUBLE, K_DOUBLE),
                      "float": (C_FLOAT, K_DOUBLE), "null": (C_NULL, K_INT64)}
#: Logical types whose Python value is the raw int (floe.manifest._partition_converters
#: converts decimals, uuids and millisecond times: declined).
_PLAIN_LOGICAL = {None, "date", "time-micros", "timestamp-micros", "local-timestamp-micros",
                  "timestamp-nanos", "local-timestamp-nanos"}
_MAX_DEPTH = 32
_COUNT_MAPS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts")
_BOUND_MAPS = ("lower_bounds", "upper_bounds")
_LONGS = ("record_count", "file_size_in_bytes", "sort_order_id", "first_row_id",
          "content_offset", "content_size_in_bytes")
_LOWER_FORMATS = {f.value.lower() for f in FileFormat}


class _Declined(Exception):
    """The schema or the values are not ones this path reproduces exactly."""


def available() -> bool:
    """The native path is on: the extension is built and ``FLOE_NATIVE`` is not ``0``."""
    return _native is not None and os.environ.get("FLOE_NATIVE", "").strip() != "0"


def extension() -> ModuleType | None:
    """The C extension when the native path is on (:func:`available`), else None."""
    return _native if available() else None


class _Program:
    """A writer schema compiled for floe/_native.c: ``words`` (the nodes), ``kinds`` and
    ``names`` of the columns captured, ``partitions``: the Avro type of each partition
    field's column (``p0``...)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.named = _named_types(schema, {})
        self.words: list[int] = []
        self.kinds: list[int] = []
        self.names: list[str] = []
        self.partitions: list[str] = []
        #: ``words`` and ``kinds`` as the extension takes them (set once compiled).
        self.code = self.kind_codes = b""

    def column(self, name: str, kind: int) -> int:
        self.names.append(name)
        self.kinds.append(kind)
        return len(self.names) - 1

    def unwrap(self, t: Any) -> tuple[Any, set[Any]]:
        """The type under named references and ``{"type": ...}`` wrappers (a primitive
        name, a union list or a complex type's dict) and the logical types met on the way."""
        logical: set[Any] = set()
        for _ in range(_MAX_DEPTH):
            if isinstance(t, str):
                if t in _SKIP:
                    return t, logical
                if t not in self.named:
                    raise _Declined(f"unknown type {t!r}")
                t = self.named[t]
            elif isinstance(t, list):
                return t, logical
            elif isinstance(t, dict):
                if "logicalType" in t:
                    logical.add(t["logicalType"])
                inner = t.get("type")
                if inner in ("record", "error", "enum", "fixed", "array", "map"):
                    return t, logical
                t = inner
            else:
                break
        raise _Declined("an unexpected type")

    def optional(self, t: Any) -> tuple[Any, int | None]:
        """``(type, index of the null branch)`` of ``T`` or of ``["null", T]`` / ``[T,
        "null"]`` (None when not a union)."""
        base, _ = self.unwrap(t)
        if not isinstance(base, list):
            return t, None
        if len(base) != 2:
            raise _Declined("a union that is not [null, T]")
        nulls = [i for i, b in enumerate(base) if self.unwrap(b)[0] == "null"]
        if len(nulls) != 1:
            raise _Declined("a union that is not [null, T]")
        return base[1 - nulls[0]], nulls[0]

    def skip(self, t: Any, depth: int = 0) -> None:
        """Nodes that read past a value of ``t``."""
        if depth > _MAX_DEPTH:
            raise _Declined("the schema nests too deeply")
        base, _ = self.unwrap(t)
        w = self.words
        if isinstance(base, list):
            w += [OP_UNION, len(base)]
            for b in base:
                self.skip(b, depth + 1)
        elif isinstance(base, str):
            w.append(_SKIP[base])
        elif base["type"] in ("record", "error"):
            w += [OP_RECORD, len(base["fields"])]
            for f in base["fields"]:
                if str(f["name"]) in LAZY_STATS_FIELDS:  # read lazily by the Python decoder
                    raise _Declined(f"a field {f['name']!r} that is not the statistics map")
                self.skip(f["type"], depth + 1)
        elif base["type"] == "array":
            w.append(OP_ARRAY)
            self.skip(base["items"], depth + 1)
        elif base["type"] == "map":
            w.append(OP_MAP)
            self.skip(base["values"], depth + 1)
        elif base["type"] == "enum":
            w += [OP_ENUM, len(base["symbols"])]
        else:  # fixed
            size = int(base["size"])
            if not 0 <= size < 1 << 31:
                raise _Declined("a fixed type of a bad size")
            w += [OP_FIXED, size]

    def capture(self, t: Any, name: str, kind: int, value: Callable[[Any, int], None],
                nullable: bool = True) -> None:
        """Nodes that read ``t`` (or ``["null", t]``) into a new column ``name``; ``value``
        emits the nodes of the non-null value for the column."""
        col = self.column(name, kind)
        inner, null_at = self.optional(t)
        if null_at is None:
            value(inner, col)
            return
        if not nullable:
            raise _Declined(f"{name} is optional")
        self.words += [OP_UNION, 2]
        for i in range(2):
            if i == null_at:
                self.words += [C_NULL, col]
            else:
                value(inner, col)

    def primitive(self, expected: tuple[str, ...], op: int) -> Callable[[Any, int], None]:
        def emit(t: Any, col: int) -> None:
            if self.unwrap(t)[0] not in expected:
                raise _Declined(f"a field of type {t!r}")
            self.words += [op, col]
        return emit

    def longs(self, t: Any, col: int) -> None:
        base, _ = self.unwrap(t)
        if not isinstance(base, dict) or base["type"] != "array" or \
                self.unwrap(base["items"])[0] not in ("int", "long"):
            raise _Declined(f"a list of type {t!r}")
        self.words += [C_LONGS, col]

    def stats_map(self, field: dict[str, Any], name: str) -> None:
        """A statistics map kept as its Avro bytes, when the Python decoder keeps it so
        (floe.avro._DecoderBuilder.array: a lazy field, varint keys, varint or bytes
        values)."""
        if str(field["name"]) not in LAZY_STATS_FIELDS:
            raise _Declined(f"{name} not read lazily")
        counts = name in _COUNT_MAPS

        def emit(t: Any, col: int) -> None:
            base, _ = self.unwrap(t)
            if not isinstance(base, dict) or base["type"] != "array" or \
                    base.get("logicalType") != "map":
                raise _Declined(f"{name} is not a map")
            items = base["items"]
            if isinstance(items, str) and items not in _SKIP:
                items = self.named.get(items)
            kv = _key_value_record(items)
            if kv is None or not _is_varint(kv[0]):
                raise _Declined(f"{name} is not a map of ints")
            if kv[1] == "bytes" and not counts:
                self.words += [C_BYTESMAP, col]
            elif _is_varint(kv[1]) and counts and kv[1] != "bytes":
                self.words += [C_INTMAP, col]
            else:
                raise _Declined(f"{name} has values of another type")
        self.capture(field["type"], name, K_BINARY, emit)

    def partition(self, t: Any) -> None:
        base, _ = self.unwrap(t)
        if not isinstance(base, dict) or base["type"] != "record":
            raise _Declined("the partition is not a record")
        self.words += [OP_RECORD, len(base["fields"])]
        for k, f in enumerate(base["fields"]):
            inner, _null_at = self.optional(f["type"])
            value, logical = self.unwrap(inner)
            if not isinstance(value, str) or value not in _PARTITION_CAPTURE or \
                    not logical <= _PLAIN_LOGICAL:
                raise _Declined(f"a partition value of type {f['type']!r}")
            op, kind = _PARTITION_CAPTURE[value]
            self.partitions.append(value)
            self.capture(f["type"], f"p{k}", kind, self.primitive((value,), op))

    def data_file(self, record: dict[str, Any]) -> None:
        """The data_file record: the fields floe.manifest._entries picks are captured."""
        didx = _field_index(record, "")
        wanted: dict[int, str] = {}
        for pos, nf in enumerate(_DATA_FILE_FIELDS):
            if pos == _SPEC_ID_POS:
                continue
            if pos == _PARTITION_POS:
                i = didx.get(f"#{S.PARTITION_ID}", didx.get("partition"))
                if i is None:
                    raise _Declined("no partition field")
            else:
                i = _lookup(didx, nf)
            if i is not None:
                if i in wanted:
                    raise _Declined("one field read as two")
                wanted[i] = DataFile._fields[pos]
        self.words += [OP_RECORD, len(record["fields"])]
        for i, f in enumerate(record["fields"]):
            name = wanted.get(i)
            t = f["type"]
            if name is None:
                if str(f["name"]) in LAZY_STATS_FIELDS:
                    raise _Declined(f"a field {f['name']!r} that is not the statistics map")
                self.skip(t)
            elif name == "partition":
                self.partition(t)
            elif name == "content":
                self.capture(t, name, K_INT64, self.primitive(("int", "long"), C_LONG), False)
            elif name == "file_format":
                self.capture(t, name, K_BINARY, self.primitive(("string",), C_STRING), False)
            elif name in ("file_path", "referenced_data_file"):
                self.capture(t, name, K_BINARY, self.primitive(("string",), C_STRING))
            elif name == "key_metadata":
                self.capture(t, name, K_BINARY, self.primitive(("bytes",), C_BYTES))
            elif name in _LONGS:
                self.capture(t, name, K_INT64, self.primitive(("int", "long"), C_LONG))
            elif name in ("split_offsets", "equality_ids"):
                self.capture(t, name, K_LIST, self.longs)
            elif name in _COUNT_MAPS or name in _BOUND_MAPS:
                self.stats_map(f, name)
            else:
                raise _Declined(f"field {name}")

    def entry(self, schema: dict[str, Any]) -> None:
        """The manifest_entry record, fields as floe.manifest._entries finds them."""
        idx = _field_index(schema, "")
        i_df = idx.get(f"#{S.DATA_FILE_ID}", idx.get("data_file"))
        i_status = _lookup(idx, S.STATUS)
        found = [(i_status, "status"), (_lookup(idx, S.SNAPSHOT_ID), "snapshot_id"),
                 (_lookup(idx, S.SEQUENCE_NUMBER), "sequence_number"),
                 (_lookup(idx, S.FILE_SEQUENCE_NUMBER), "file_sequence_number")]
        heads = {i: name for i, name in found if i is not None}
        if i_status is None or i_df is None or i_df in heads or \
                len(heads) != sum(i is not None for i, _ in found):
            raise _Declined("no status or data_file, or one field read as two")
        long = self.primitive(("int", "long"), C_LONG)
        self.words += [OP_RECORD, len(schema["fields"])]
        for i, f in enumerate(schema["fields"]):
            if i == i_df:
                base, _ = self.unwrap(f["type"])
                if not isinstance(base, dict) or base["type"] != "record":
                    raise _Declined("data_file is not a record")
                self.data_file(base)
            elif i in heads:
                self.capture(f["type"], heads[i], K_INT64, long, heads[i] != "status")
            else:
                self.skip(f["type"])


_PROGRAMS: dict[str, _Program | None] = {}


def _program(schema_json: str) -> _Program | None:
    """The program of a writer schema (None: declined), compiled once per schema."""
    if schema_json in _PROGRAMS:
        return _PROGRAMS[schema_json]
    try:
        schema = json.loads(schema_json)
        if not isinstance(schema, dict) or schema.get("type") != "record":
            raise _Declined("not a record")
        compiled = _Program(schema)
        compiled.entry(schema)
        if len(compiled.words) > 65536 or len(compiled.names) > 128:
            raise _Declined("too large a schema")
        compiled.code = b"".join(w.to_bytes(4, "little", signed=True) for w in compiled.words)
        compiled.kind_codes = bytes(compiled.kinds)
        program: _Program | None = compiled
    except (_Declined, KeyError, TypeError, ValueError, AttributeError, RecursionError):
        program = None
    if len(_PROGRAMS) < 256:
        _PROGRAMS[schema_json] = program
    return program


def _arrays(program: _Program, raw: list[tuple[int, int, bytes, bytes, bytes, bytes]]
            ) -> dict[str, pa.Array]:
    """The decoded columns as Arrow arrays (int64, double, bool, binary / string,
    list<int64>)."""
    import pyarrow as pa

    out: dict[str, pa.Array] = {}
    string_columns = {"file_path", "file_format", "referenced_data_file"} | {
        f"p{k}" for k, t in enumerate(program.partitions) if t == "string"}
    for name, kind, (length, nulls, validity, values, offsets, data) in zip(
            program.names, program.kinds, raw, strict=True):
        valid = pa.py_buffer(validity) if nulls else None
        if kind == K_INT64:
            arr = pa.Array.from_buffers(pa.int64(), length, [valid, pa.py_buffer(values)],
                                        nulls)
        elif kind == K_DOUBLE:
            arr = pa.Array.from_buffers(pa.float64(), length, [valid, pa.py_buffer(values)],
                                        nulls)
        elif kind == K_BOOL:
            arr = pa.Array.from_buffers(pa.bool_(), length, [valid, pa.py_buffer(values)],
                                        nulls)
        elif kind == K_BINARY:
            type_ = pa.string() if name in string_columns else pa.binary()
            arr = pa.Array.from_buffers(type_, length, [valid, pa.py_buffer(offsets),
                                                        pa.py_buffer(data)], nulls)
        else:
            child = pa.Array.from_buffers(pa.int64(), len(data) // 8,
                                          [None, pa.py_buffer(data)], 0)
            arr = pa.Array.from_buffers(pa.list_(pa.int64()), length,
                                        [valid, pa.py_buffer(offsets)], nulls,
                                        children=[child])
        out[name] = arr
    return out


def decode_live_table(data: bytes, manifest: ManifestFile) -> pa.Table | None:
    """The live entries of the manifest whose bytes are ``data``, as the table
    :meth:`ManifestStore._table <floe.scan.manifest_store.ManifestStore._table>` builds from
    what :func:`~floe.manifest.read_manifest` reads with ``discard_deleted``; None when
    declined (then decode in Python); :class:`~floe.errors.MetadataError` for invalid bytes."""
    assert _native is not None
    with avro_errors(manifest.manifest_path):
        meta, blocks = container_blocks(data)
        if "avro.schema" not in meta:
            raise AvroCorrupt("the header has no avro.schema")
        schema_json = meta["avro.schema"].decode("utf-8", "replace")
        program = _program(schema_json)
        if program is None:
            json.loads(schema_json)  # invalid JSON is an invalid file, not a declined one
            return None
        decoded = []
        for count, block, _ in blocks:
            if count > len(block):  # as floe.avro._read_avro (a count beyond 64 bits too)
                raise AvroCorrupt(f"a block of {len(block)} bytes cannot hold {count} records")
            decoded.append((count, bytes(block)))  # bytes: no copy when it is already
        try:
            raw = _native.decode(program.code, program.kind_codes, decoded)
        except _native.Unsupported:
            return None
        except _native.Truncated:
            raise AvroTruncated() from None
        except _native.Corrupt as e:
            raise AvroCorrupt(str(e)) from None
    try:
        return _live_table(program, _arrays(program, raw), manifest)
    except _Declined:
        return None


def _live_table(program: _Program, arrays: dict[str, pa.Array], manifest: ManifestFile
                ) -> pa.Table:
    """The stored table from the decoded columns: DELETED entries dropped, values inherited
    from the manifest (floe.manifest._entries), columns typed as the store types them."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    status = arrays["status"]
    if len(status) and (pc.min(status).as_py() < 0 or pc.max(status).as_py() > 2):
        raise _Declined("an unknown status")  # the Python decoder says which
    live = pc.not_equal(status, 2)
    if pc.sum(live).as_py() != len(status):
        arrays = {name: pc.filter(arr, live) for name, arr in arrays.items()}
        status = arrays["status"]
    n = len(status)
    types = dict(columns())

    def get(name: str) -> pa.Array:
        return arrays.get(name, pa.nulls(n, types[name]))

    def cast(arr: pa.Array, type_: pa.DataType) -> pa.Array:
        try:
            return pc.cast(arr, type_)  # safe: out of range raises
        except (pa.ArrowInvalid, OverflowError):
            raise _Declined(f"values out of {type_}") from None

    def scalar(value: int) -> pa.Scalar:
        try:
            return pa.scalar(value, pa.int64())
        except (pa.ArrowInvalid, OverflowError):
            raise _Declined("a value out of int64") from None

    content = arrays.get("content")
    if content is None:
        content = pa.repeat(pa.scalar(0, pa.int64()), n)
    elif n and (pc.min(content).as_py() < 0 or pc.max(content).as_py() > 2):
        raise _Declined("an unknown content")
    sid, seq, fseq = get("snapshot_id"), get("sequence_number"), get("file_sequence_number")
    if manifest.added_snapshot_id is not None:  # "Snapshot ID Inheritance" and "Sequence..."
        sid = pc.fill_null(sid, scalar(manifest.added_snapshot_id))
        m_seq = scalar(manifest.sequence_number)
        if manifest.sequence_number == 0:
            seq, fseq = pc.fill_null(seq, m_seq), pc.fill_null(fseq, m_seq)
        else:
            added = pc.equal(status, 1)
            seq = pc.if_else(pc.and_(pc.is_null(seq), added), m_seq, seq)
            fseq = pc.if_else(pc.and_(pc.is_null(fseq), added), m_seq, fseq)
    fmt = arrays["file_format"]
    lower = pc.is_in(fmt, value_set=pa.array(sorted(_LOWER_FORMATS), pa.string()))
    if pc.any(lower).as_py():  # "parquet" read as FileFormat.PARQUET
        fmt = pc.if_else(lower, pc.utf8_upper(fmt), fmt)
    first_row_id = get("first_row_id")
    if manifest.first_row_id is not None:
        first_row_id = _first_row_ids(manifest.first_row_id, content, first_row_id,
                                      get("record_count"))
    try:
        spec_id = pa.repeat(pa.scalar(manifest.partition_spec_id, pa.int32()), n)
    except (pa.ArrowInvalid, OverflowError):
        raise _Declined("a spec id out of int32") from None
    n_parts = len(program.partitions) if n else 0
    out: dict[str, pa.Array] = {}
    for name, type_ in columns():
        if name == "partition":
            for k in range(n_parts):
                arr = arrays[f"p{k}"]
                out[f"p{k}"] = pa.nulls(n) if arr.null_count == n else arr  # as pa.array
            continue
        arr = {"status": status, "snapshot_id": sid, "sequence_number": seq,
               "file_sequence_number": fseq, "content": content, "file_format": fmt,
               "first_row_id": first_row_id, "spec_id": spec_id}.get(name)
        if arr is None:
            arr = get(name)
        out[name] = arr if arr.type == type_ else cast(arr, type_)
    return table_of(manifest, out, n_parts)


def _first_row_ids(first: int, content: pa.Array, ids: pa.Array, record_count: pa.Array
                   ) -> pa.Array:
    """"First Row ID Inheritance" as floe.manifest._entries assigns it: data files without
    one get the next ids, in order (v3 manifests only: Python ints, no overflow)."""
    import pyarrow as pa

    values = ids.to_pylist()
    contents = content.to_pylist()
    counts = record_count.to_pylist()
    need = [i for i, v in enumerate(values) if v is None and contents[i] == 0]
    if any(counts[i] is None for i in need):
        raise _Declined("a data file without a record count")
    for i, start in zip(need, accumulate((counts[i] for i in need), initial=first),
                        strict=False):
        values[i] = start
    try:
        return pa.array(values, pa.int64())
    except (pa.ArrowInvalid, OverflowError):
        raise _Declined("row ids out of int64") from None
