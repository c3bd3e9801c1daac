"""Avro files of Iceberg metadata decoded by the C extension :mod:`floe._native` into
columns: the writer schema (from the file's header) is compiled here into a small program
(floe/_native.c describes it) in which the fields wanted are captured into columns and every
other field is skipped. Decompression stays in :func:`floe.avro.container_blocks`.

Two programs are compiled: a manifest's entries (whose columns :mod:`floe.scan.native`
makes into the table the manifest cache stores) and a manifest list's records, which
:func:`decode_manifest_list` makes into the :class:`~floe.manifest.ManifestFile` values
:func:`floe.manifest.read_manifest_list` returns, without importing Arrow. The Python
decoder (:mod:`floe.avro`, :mod:`floe.manifest`) stays the reference: anything these
programs do not reproduce exactly is declined (None) and decoded there.

``FLOE_NATIVE=0`` turns this path off; without the compiled extension it is off silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import chain, starmap
from types import ModuleType
from typing import Any

from floe import avro_schemas as S
from floe.avro import (
    AvroCorrupt,
    AvroTruncated,
    _is_varint,
    _key_value_record,
    avro_errors,
    container_blocks,
    native_module,
    native_on,
)
from floe.manifest import (
    _DATA_FILE_FIELDS,
    _PARTITION_POS,
    _SPEC_ID_POS,
    LAZY_STATS_FIELDS,
    LIST_DEFAULTS,
    LIST_FIELDS,
    LIST_REQUIRED,
    DataFile,
    ManifestContent,
    ManifestFile,
    PartitionFieldSummary,
    _field_index,
    _lookup,
    _named_types,
)


_native: ModuleType | None = native_module()

__all__ = ["available", "decode_manifest_list", "extension"]

# Opcodes and column kinds of floe/_native.c.
(OP_NULL, OP_BOOL, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING, OP_FIXED, OP_ENUM,
 OP_RECORD, OP_UNION, OP_ARRAY, OP_MAP) = range(13)
(C_NULL, C_LONG, C_FLOAT, C_DOUBLE, C_BOOL, C_BYTES, C_STRING, C_LONGS, C_INTMAP,
 C_BYTESMAP, C_ARRAY) = range(20, 31)
K_INT64, K_DOUBLE, K_BOOL, K_BINARY, K_LIST, K_ARRAY = range(6)
K_NESTED = 0x80  # a column of one value per item of a C_ARRAY

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


class _Declined(Exception):
    """The schema or the values are not ones this path reproduces exactly."""


def available() -> bool:
    """The native path is on: the extension is built and ``FLOE_NATIVE`` is not ``0``."""
    return _native is not None and native_on()


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

    def plain(self, expected: tuple[str, ...], op: int) -> Callable[[Any, int], None]:
        """:meth:`primitive` of a type without a logical type (the Python decoder's value is
        then the Avro value as it is)."""
        emit = self.primitive(expected, op)

        def checked(t: Any, col: int) -> None:
            if self.unwrap(t)[1]:
                raise _Declined(f"a field of type {t!r}")
            emit(t, col)
        return checked

    def fields(self, record: dict[str, Any], wanted: dict[int, tuple[str, int, Callable[
            [Any, int], None]]]) -> None:
        """A record whose fields at the positions ``wanted`` are captured (name, kind,
        emitter); the others are skipped."""
        self.words += [OP_RECORD, len(record["fields"])]
        for i, f in enumerate(record["fields"]):
            if i in wanted:
                name, kind, emit = wanted[i]
                self.capture(f["type"], name, kind, emit)
            else:
                self.skip(f["type"])

    def manifest_list(self, schema: dict[str, Any]) -> None:
        """The manifest_file record of a manifest list, fields as
        floe.manifest._manifest_files finds them (:data:`~floe.manifest.LIST_FIELDS`); the
        partition summaries into nested columns ``s0``... of the ``partitions`` list."""
        idx = _field_index(schema, "")
        if any(_lookup(idx, nf) is None for nf in LIST_REQUIRED):
            raise _Declined("a required field is missing")  # the Python decoder says which
        wanted: dict[int, tuple[str, int, Callable[[Any, int], None]]] = {}
        long = self.plain(("int", "long"), C_LONG)
        for nf in LIST_FIELDS:
            i = _lookup(idx, nf)
            if i is None:
                continue
            if i in wanted:
                raise _Declined("one field read as two")
            if nf is S.MANIFEST_PATH:
                wanted[i] = (nf.name, K_BINARY, self.plain(("string",), C_STRING))
            elif nf is S.MANIFEST_KEY_METADATA:
                wanted[i] = (nf.name, K_BINARY, self.plain(("bytes",), C_BYTES))
            elif nf is S.PARTITION_SUMMARIES:
                wanted[i] = (nf.name, K_ARRAY, self.summaries)
            else:
                wanted[i] = (nf.name, K_INT64, long)
        self.fields(schema, wanted)

    def summaries(self, t: Any, col: int) -> None:
        """An array of field_summary records: each summary field in a nested column."""
        base, logical = self.unwrap(t)
        if logical or not isinstance(base, dict) or base["type"] != "array":
            raise _Declined("partitions is not an array")
        item, _ = self.unwrap(base["items"])
        if not isinstance(item, dict) or item["type"] not in ("record", "error"):
            raise _Declined("a partition summary is not a record")
        sidx = _field_index(item, "")
        wanted: dict[int, tuple[str, int, Callable[[Any, int], None]]] = {}
        for k, nf in enumerate(S.PARTITION_SUMMARY.fields):
            i = _lookup(sidx, nf)
            if i is None:
                continue
            if i in wanted:
                raise _Declined("one field read as two")
            is_bool = nf.name.startswith("contains_")
            wanted[i] = (f"s{k}", (K_BOOL if is_bool else K_BINARY) | K_NESTED,
                         self.plain(("boolean",), C_BOOL) if is_bool else
                         self.plain(("bytes",), C_BYTES))
        self.words += [C_ARRAY, col]
        self.fields(item, wanted)


_PROGRAMS: dict[tuple[str, str], _Program | None] = {}


def _program(schema_json: str, what: str = "entry") -> _Program | None:
    """The program of a writer schema (None: declined), compiled once per schema: of a
    manifest (``what="entry"``) or of a manifest list (``"manifest_list"``)."""
    key = (what, schema_json)
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    try:
        schema = json.loads(schema_json)
        if not isinstance(schema, dict) or schema.get("type") != "record":
            raise _Declined("not a record")
        compiled = _Program(schema)
        getattr(compiled, what)(schema)
        if len(compiled.words) > 65536 or len(compiled.names) > 128:
            raise _Declined("too large a schema")
        compiled.code = b"".join(w.to_bytes(4, "little", signed=True) for w in compiled.words)
        compiled.kind_codes = bytes(compiled.kinds)
        program: _Program | None = compiled
    except (_Declined, KeyError, TypeError, ValueError, AttributeError, RecursionError):
        program = None
    if len(_PROGRAMS) < 256:
        _PROGRAMS[key] = program
    return program


def _decode(data: bytes, location: str, what: str) -> tuple[_Program, list[Any]] | None:
    """The Avro file ``data`` decoded by the program of its writer schema (``what``, as
    :func:`_program` takes it): the program and the raw columns, or None when declined;
    :class:`~floe.errors.MetadataError` for invalid bytes."""
    assert _native is not None
    with avro_errors(location):
        meta, blocks = container_blocks(data)
        if "avro.schema" not in meta:
            raise AvroCorrupt("the header has no avro.schema")
        schema_json = meta["avro.schema"].decode("utf-8", "replace")
        program = _program(schema_json, what)
        if program is None:
            json.loads(schema_json)  # invalid JSON is an invalid file, not a declined one
            return None
        decoded = []
        for count, block, _ in blocks:
            if count > len(block):  # as floe.avro._read_avro (a count beyond 64 bits too)
                raise AvroCorrupt(f"a block of {len(block)} bytes cannot hold {count} records")
            decoded.append((count, bytes(block)))  # bytes: no copy when it is already
        try:
            return program, _native.decode(program.code, program.kind_codes, decoded)
        except _native.Unsupported:
            return None
        except _native.Truncated:
            raise AvroTruncated() from None
        except _native.Corrupt as e:
            raise AvroCorrupt(str(e)) from None


def decode_manifest_list(data: bytes, location: str) -> list[ManifestFile] | None:
    """What :func:`floe.manifest.read_manifest_list` reads from the bytes ``data``: the
    records decoded by the extension into Arrow-layout column buffers, made into
    :class:`~floe.manifest.ManifestFile` values column by column. None when declined (a
    content the enum does not know too: the Python decoder says what is wrong);
    :class:`~floe.errors.MetadataError` for invalid bytes."""
    decoded = _decode(data, location, "manifest_list")
    if decoded is None:
        return None
    program, raw = decoded
    columns = dict(zip(program.names, zip(program.kinds, raw, strict=True), strict=True))
    n = raw[program.names.index(S.MANIFEST_PATH.name)][0]
    values: list[list[Any]] = []
    for nf, default in zip(LIST_FIELDS, LIST_DEFAULTS, strict=True):
        column = columns.get(nf.name)
        if column is None:
            values.append([default] * n)
        elif nf is S.PARTITION_SUMMARIES:
            values.append(_summaries(column[1], columns))
        else:
            got = _values(*column, text=nf is S.MANIFEST_PATH)
            values.append(got if default is None else
                          [default if v is None else v for v in got])
    contents = {c.value: c for c in ManifestContent}
    i_content = LIST_FIELDS.index(S.MANIFEST_CONTENT)
    try:
        values[i_content] = [contents[c] for c in values[i_content]]
    except KeyError:
        return None
    return list(starmap(ManifestFile, zip(*values, strict=True)))


#: The eight bits of each byte value, least significant first (Arrow's bit order).
_BITS = [tuple(bool(b >> i & 1) for i in range(8)) for b in range(256)]


def _bits(bitmap: bytes, length: int) -> list[bool]:
    return list(chain.from_iterable(map(_BITS.__getitem__, bitmap)))[:length]


def _values(kind: int, raw: tuple[int, int, bytes, bytes, bytes, bytes], text: bool = False
            ) -> list[Any]:
    """The Python values of a column the extension decoded (Arrow's layout: validity bits,
    little-endian values, int32 offsets), None where null; binary values as str when
    ``text`` (UTF-8 the extension checked)."""
    length, nulls, validity, values, offsets, data = raw
    kind &= ~K_NESTED
    got: list[Any]
    if kind == K_INT64:
        got = memoryview(values).cast("q").tolist()
    elif kind == K_BOOL:
        got = _bits(values, length)
    elif kind == K_BINARY:
        o = memoryview(offsets).cast("i").tolist()
        if text and data.isascii():  # byte offsets are character offsets
            data = data.decode("ascii")  # type: ignore[assignment]
        got = list(map(data.__getitem__, map(slice, o, o[1:])))
        if text and isinstance(data, bytes):
            got = [v.decode() for v in got]
    else:
        raise ValueError(f"a column of kind {kind}")
    if nulls:
        got = [v if ok else None for v, ok in zip(got, _bits(validity, length))]
    return got


def _summaries(raw: tuple[int, int, bytes, bytes, bytes, bytes],
               columns: dict[str, tuple[int, Any]]) -> list[list[PartitionFieldSummary] | None]:
    """Each manifest's partition summaries from the C_ARRAY column ``raw`` and its nested
    columns ``s0``... (a summary field the list does not have is None), None where the list
    holds a null."""
    length, nulls, validity, _, offsets, _ = raw
    o = memoryview(offsets).cast("i").tolist()
    items = o[-1]
    fields = []
    for k in range(len(S.PARTITION_SUMMARY.fields)):
        column = columns.get(f"s{k}")
        field = [None] * items if column is None else _values(*column)
        if len(field) != items:
            raise ValueError("malformed program: a nested column's length")
        fields.append(field)
    # one object per distinct summary: manifests of the same partitions repeat them (690
    # distinct day summaries among 10,000 manifests of 10 files), and an evaluator that
    # remembers its answer per summary finds a shared one by identity
    interned: dict[tuple[Any, ...], PartitionFieldSummary] = {}
    summaries = [interned.get(t) or interned.setdefault(t, PartitionFieldSummary(*t))
                 for t in zip(*fields, strict=True)]
    got: list[list[PartitionFieldSummary] | None] = list(
        map(summaries.__getitem__, map(slice, o, o[1:])))
    if nulls:
        got = [v if ok else None for v, ok in zip(got, _bits(validity, length))]
    return got
