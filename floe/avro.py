"""Avro object container files, as manifests and manifest lists use them.

Reading uses a decoder generated per writer schema: the schema is compiled once into Python
source with the varint decoding inlined, records become tuples in writer field order,
``logicalType: map`` arrays become dicts, and logical types are left undecoded (dates, times
and timestamps stay ints, decimals and uuids stay bytes), which is already floe's value
representation for everything but decimals and uuids. Generic readers such as fastavro build
a dict per record and per map entry and convert every logical value; a manifest of 100k
entries with statistics holds millions of such values, and most callers need few of them.

Fields named in ``lazy`` are not decoded at read time when they are maps of integers to
integers (``column_sizes``, ``value_counts``...) or to bytes (``lower_bounds``,
``upper_bounds``): their bytes are skipped and kept, and :class:`LazyIntMap` /
:class:`LazyBytesMap` decode them on first use. Several such maps in a row are skipped by one
regular expression match per record (:class:`_LazyRun`): in a manifest of 100k entries with
statistics that is a third less decoding time than skipping them one by one in Python.

Writing delegates to fastavro, which passes raw values of logical types through unchanged.

The bytes are anyone's (a bucket is writable by more than floe): every count, length and size
is checked against the bytes left before it is used, so a hostile file raises
:class:`~floe.errors.MetadataError` instead of looping, going backwards or allocating what its
size does not pay for. Every item of Iceberg metadata takes at least one byte; Avro allows
zero-byte items (``null``, an empty record), and floe refuses more of them in a block than
there are bytes left, which is what bounds a count of 2^62. Deflate blocks inflate to at most
:data:`MAX_INFLATE_RATIO` times the file's size (and :data:`MIN_INFLATE_LIMIT` at least).
"""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any


from floe.bulk import gc_paused
from floe.errors import MetadataError

__all__ = ["AvroFile", "LazyIntMap", "read_avro", "write_avro", "MAGIC", "AvroTruncated",
           "AvroCorrupt", "read_header", "read_long", "container_blocks",
           "decompress_block", "inflate", "avro_errors"]

MAGIC = b"Obj\x01"
_SYNC_SIZE = 16
#: How much a compressed file may grow when inflated: real manifests compress 3-10x; a
#: deflate bomb reaches 1000x.
MAX_INFLATE_RATIO = 100
MIN_INFLATE_LIMIT = 64 << 20
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class AvroTruncated(Exception):
    """The container file ends in the middle of a header or block."""


class AvroCorrupt(Exception):
    """The container file is not valid Avro (the message says why)."""




def _varint_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """Finish a multi-byte zigzag varint whose first byte (``first``) has been read."""
    value = first & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise AvroCorrupt("varint longer than 10 bytes")


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b & 0x80:
        return _varint_tail(buf, pos + 1, b)
    return (b >> 1) ^ -(b & 1), pos + 1


_VARINT_RUNS: dict[int, re.Pattern[bytes]] = {}


def _skip_varints(buf: bytes, pos: int, count: int) -> int:
    if count > len(buf) - pos:  # each varint takes a byte at least
        raise AvroTruncated()
    pattern = _VARINT_RUNS.get(count)
    if pattern is None:
        pattern = re.compile(rb"(?:[\x80-\xff]{0,9}[\x00-\x7f]){%d}" % count, re.DOTALL)
        if len(_VARINT_RUNS) < 1024:
            _VARINT_RUNS[count] = pattern
    m = pattern.match(buf, pos)
    if m is None:
        raise AvroTruncated()
    return m.end()


def encode_long(n: int) -> bytes:
    """An Avro ``long`` (zig-zag varint)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _encode_map(m: Mapping[int, Any], encode_value: Callable[[Any], bytes]) -> bytes:
    """A map with int keys as Avro encodes it (one block; keys written as Avro longs)."""
    if not m:
        return b"\x00"
    return b"".join([encode_long(len(m)), *(encode_long(k) + encode_value(v)
                                            for k, v in m.items()), b"\x00"])


def encode_int_map(m: Mapping[int, int]) -> bytes:
    """A ``map<int, long>`` (column sizes, value counts...), what :class:`LazyIntMap` reads."""
    return _encode_map(m, encode_long)


def encode_bytes_map(m: Mapping[int, bytes]) -> bytes:
    """A ``map<int, bytes>`` (bounds), what :class:`LazyBytesMap` reads."""
    return _encode_map(m, lambda v: encode_long(len(v)) + v)


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = read_long(buf, pos)
    if size < 0:  # a slice would not fail, and the position would go back
        raise AvroCorrupt("negative length")
    if size > len(buf) - pos:
        raise AvroTruncated()
    return buf[pos:pos + size], pos + size


def _decode_map(raw: bytes, read_value: Callable[[bytes, int], tuple[Any, int]]
                ) -> dict[int, Any]:
    out: dict[int, Any] = {}
    pos = 0
    n, pos = read_long(raw, pos)
    while n:
        if n < 0:
            n = -n
            _, pos = read_long(raw, pos)
        if n > len(raw) - pos:  # an entry takes a byte at least: a count of 2^62 is refused
            raise AvroTruncated()
        for _ in range(n):
            k, pos = read_long(raw, pos)
            out[k], pos = read_value(raw, pos)
        n, pos = read_long(raw, pos)
    return out


def _decode_int_map(raw: bytes) -> dict[int, int]:
    return _decode_map(raw, read_long)


def _decode_bytes_map(raw: bytes) -> dict[int, bytes]:
    return _decode_map(raw, _read_bytes)


def _skip_bytes_entries(buf: bytes, pos: int, count: int) -> int:
    """Past ``count`` ``(long key, bytes value)`` map entries."""
    if count > len(buf) - pos:
        raise AvroTruncated()
    for _ in range(count):
        while buf[pos] & 0x80:  # the key
            pos += 1
        pos += 1
        b = buf[pos]
        pos += 1
        if b & 0x80:
            size, pos = _varint_tail(buf, pos, b)
        else:
            size = (b >> 1) ^ -(b & 1)
        if size < 0:
            raise AvroCorrupt("negative length")
        pos += size
    if pos > len(buf):
        raise AvroTruncated()
    return pos


def native_module() -> Any:
    """The C extension ``floe._native``, or None when it is not built (then the Python
    decoders are used)."""
    try:
        return importlib.import_module("floe._native")
    except ImportError:
        return None


_NATIVE = native_module()


def native_on() -> bool:
    """Whether the C paths are switched on: ``FLOE_NATIVE`` is not ``0``."""
    return os.environ.get("FLOE_NATIVE", "").strip() != "0"


class LazyMap(Mapping[int, Any]):
    """A map of a manifest entry kept as its Avro bytes until first used; then a plain
    mapping. Most readers of a big manifest never look at most entries' maps."""

    __slots__ = ("_raw", "_map")
    #: The Python decoder, the reference. The C extension's ``decode_map`` is used first
    #: when the native path is on (a map of 10 entries: 0.5-0.8 us against 6.5-7.5); what
    #: it refuses is decoded here, which says what is wrong.
    _decode: Callable[[bytes], dict[int, Any]]
    _as_bytes = False

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._map: dict[int, Any] | None = None

    def _decoded(self) -> dict[int, Any]:
        m = self._map
        if m is None:
            ext = _NATIVE
            if ext is not None and native_on():
                try:
                    m = self._map = ext.decode_map(self._raw, self._as_bytes)
                    return m
                except (ext.Truncated, ext.Corrupt, ext.Unsupported):
                    pass
            try:
                m = self._map = type(self)._decode(self._raw)
            except (AvroTruncated, AvroCorrupt, IndexError) as e:  # checked when skipped
                raise MetadataError("<a manifest's statistics map>",
                                    f"not a valid Avro map: {e!r}") from None
        return m

    @property
    def raw(self) -> bytes | None:
        """The Avro bytes, while still undecoded (None once decoded)."""
        return self._raw if self._map is None else None

    def __getitem__(self, key: int) -> Any:
        return self._decoded()[key]

    def get(self, key: int, default: Any = None) -> Any:
        return self._decoded().get(key, default)

    def __iter__(self) -> Iterator[int]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        return repr(self._decoded())

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self._decoded(),))


class LazyIntMap(LazyMap):
    """A ``map<int, long>`` (column sizes, value counts...) decoded on first use."""

    __slots__ = ()
    _decode = staticmethod(_decode_int_map)


class LazyBytesMap(LazyMap):
    """A ``map<int, bytes>`` (lower and upper bounds) decoded on first use."""

    __slots__ = ()
    _decode = staticmethod(_decode_bytes_map)
    _as_bytes = True


# -- decoder generation ---------------------------------------------------------------------


def _schema_name(schema: dict[str, Any], namespace: str | None) -> tuple[str, str | None]:
    name = str(schema["name"])
    ns = schema.get("namespace", namespace)
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    return (f"{ns}.{name}" if ns else name), ns


class _DecoderBuilder:
    """Emits Python source that decodes one value of a schema into a local variable."""

    def __init__(self, lazy: frozenset[str]) -> None:
        self.lines: list[str] = []
        self.named: dict[str, Any] = {}
        self.consts: dict[str, Any] = {}
        self.lazy = lazy
        self.n = 0
        self.depth = 0

    def var(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def resolve(self, schema: Any, namespace: str | None) -> tuple[Any, str | None]:
        if isinstance(schema, str) and schema not in _PRIMITIVES:
            key = schema if "." in schema or not namespace else f"{namespace}.{schema}"
            found = self.named.get(key, self.named.get(schema))
            if found is None:
                raise AvroCorrupt(f"unknown named type {schema!r}")
            return tuple(found)
        if isinstance(schema, dict) and schema.get("type") in ("record", "fixed", "enum", "error"):
            full, ns = _schema_name(schema, namespace)
            self.named.setdefault(full, (schema, ns))
            self.named.setdefault(str(schema["name"]), (schema, ns))
            return schema, ns
        return schema, namespace

    def long(self, target: str, ind: int) -> None:
        self.emit(ind, f"{target} = buf[pos]")
        self.emit(ind, "pos += 1")
        self.emit(ind, f"if {target} & 128:")
        self.emit(ind + 1, f"{target}, pos = _varint_tail(buf, pos, {target})")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{target} = ({target} >> 1) ^ -({target} & 1)")

    def value(self, schema: Any, target: str, ind: int, namespace: str | None,
              field_name: str = "") -> None:
        self.depth += 1
        if self.depth > 64:
            raise AvroCorrupt("schema nests too deeply (recursive types are not supported)")
        schema, namespace = self.resolve(schema, namespace)
        kind: Any
        if isinstance(schema, list):
            kind = "union"
        elif isinstance(schema, str):
            kind = schema
        else:
            kind = schema["type"]
        if isinstance(kind, (dict, list)):  # {"type": {...}} wrapping
            self.value(kind, target, ind, namespace, field_name)
        elif kind == "union":
            self.union(schema, target, ind, namespace, field_name)
        elif kind == "null":
            self.emit(ind, f"{target} = None")
        elif kind == "boolean":
            self.emit(ind, f"{target} = buf[pos] != 0")
            self.emit(ind, "pos += 1")
        elif kind in ("int", "long"):
            self.long(target, ind)
        elif kind == "float":
            self.emit(ind, f"{target} = _unpack_float(buf, pos)[0]")
            self.emit(ind, "pos += 4")
        elif kind == "double":
            self.emit(ind, f"{target} = _unpack_double(buf, pos)[0]")
            self.emit(ind, "pos += 8")
        elif kind in ("bytes", "string"):
            n = self.var("n")
            self.long(n, ind)
            self.emit(ind, f"if {n} < 0: raise AvroCorrupt('negative length')")
            decode = ".decode()" if kind == "string" else ""
            self.emit(ind, f"{target} = buf[pos:pos + {n}]{decode}")
            self.emit(ind, f"pos += {n}")
        elif kind == "fixed":
            size = int(schema["size"])
            if size < 0:
                raise AvroCorrupt(f"fixed type of negative size {size}")
            self.emit(ind, f"{target} = buf[pos:pos + {size}]")
            self.emit(ind, f"pos += {size}")
        elif kind == "enum":
            symbols = self.var("SYMBOLS")
            self.consts[symbols] = tuple(schema["symbols"])
            i = self.var("i")
            self.long(i, ind)
            self.emit(ind, f"if not 0 <= {i} < {len(schema['symbols'])}:")
            self.emit(ind + 1, f"raise AvroCorrupt('bad enum index ' + str({i}))")
            self.emit(ind, f"{target} = {symbols}[{i}]")
        elif kind in ("record", "error"):
            self.record(schema["fields"], target, ind, namespace)
        elif kind == "array":
            self.array(schema, target, ind, namespace, field_name)
        elif kind == "map":
            self.blocks(target, ind, "{}", lambda i, d: self._map_item(schema, d, i, namespace))
        else:
            raise AvroCorrupt(f"unknown Avro type {kind!r}")
        self.depth -= 1

    def record(self, fields: list[dict[str, Any]], target: str, ind: int,
               namespace: str | None) -> None:
        names = []
        k = 0
        while k < len(fields):
            run = self._lazy_run(fields[k:], namespace)
            if len(run) > 1:
                names += self._lazy_run_fast(fields[k:k + len(run)], run, ind, namespace)
                k += len(run)
                continue
            v = self.var()
            self.value(fields[k]["type"], v, ind, namespace, str(fields[k]["name"]))
            names.append(v)
            k += 1
        self.emit(ind, f"{target} = ({', '.join(names)}{',' if len(names) == 1 else ''})")

    def union(self, branches: list[Any], target: str, ind: int, namespace: str | None,
              field_name: str) -> None:
        b = self.var("b")
        self.emit(ind, f"{b} = buf[pos]")
        self.emit(ind, "pos += 1")
        for i, branch in enumerate(branches):
            self.emit(ind, f"{'if' if i == 0 else 'elif'} {b} == {2 * i}:")
            self.value(branch, target, ind + 1, namespace, field_name)
        self.emit(ind, "else:")
        self.emit(ind + 1, f"raise AvroCorrupt('bad union index ' + str({b}))")

    def _map_item(self, schema: dict[str, Any], d: str, ind: int, ns: str | None) -> None:
        k, v = self.var("k"), self.var()
        self.value("string", k, ind, ns)
        self.value(schema["values"], v, ind, ns)
        self.emit(ind, f"{d}[{k}] = {v}")

    def blocks(self, target: str, ind: int, empty: str,
               item: Callable[[int, str], None]) -> None:
        n = self.var("n")
        self.emit(ind, f"{target} = {empty}")
        self.long(n, ind)
        self.emit(ind, f"while {n}:")
        self.emit(ind + 1, f"if {n} < 0:")
        self.emit(ind + 2, f"{n} = -{n}")
        self.long(self.var("size"), ind + 2)
        self.emit(ind + 1, f"if {n} > len(buf) - pos: raise AvroTruncated()")
        self.emit(ind + 1, f"for _ in range({n}):")
        item(ind + 2, target)
        self.long(n, ind + 1)

    def _lazy_map(self, target: str, ind: int, skip: str, cls: str) -> None:
        """A map kept as its Avro bytes: its blocks are skipped (``skip`` past ``{n}``
        entries; a block with its size in bytes is jumped over) and ``cls`` wraps them."""
        start = self.var("start")
        self.emit(ind, f"{start} = pos")
        n = self.var("n")
        self.long(n, ind)
        self.emit(ind, f"while {n}:")
        self.emit(ind + 1, f"if {n} < 0:")
        # the block's size in bytes: its entries are still skipped one by one, so that what
        # the map decodes later has been checked now
        self.emit(ind + 2, f"{n} = -{n}")
        self.long(self.var("size"), ind + 2)
        self.emit(ind + 1, "pos = " + skip.format(n=n))
        self.long(n, ind + 1)
        self.emit(ind, f"{target} = {cls}(buf[{start}:pos])")

    def _lazy_kind(self, field: dict[str, Any], namespace: str | None) -> str | None:
        """``"i"`` / ``"b"`` for an optional field (``["null", map]``) read as a
        :class:`LazyIntMap` / :class:`LazyBytesMap`, else None."""
        branches = field.get("type")
        if str(field.get("name")) not in self.lazy or not isinstance(branches, list) \
                or len(branches) != 2 or branches[0] != "null":
            return None
        array, _ = self.resolve(branches[1], namespace)
        if not isinstance(array, dict) or array.get("type") != "array" \
                or array.get("logicalType") != "map":
            return None
        kv = _key_value_record(self.resolve(array["items"], namespace)[0])
        if kv is None or not _is_varint(kv[0]):
            return None
        if kv[1] == "bytes":
            return "b"
        return "i" if _is_varint(kv[1]) else None

    def _lazy_run(self, fields: list[dict[str, Any]], namespace: str | None) -> list[str]:
        """The kinds of the lazy map fields at the start of ``fields``, in a row."""
        run = []
        for f in fields:
            kind = self._lazy_kind(f, namespace)
            if kind is None:
                break
            run.append(kind)
        return run

    def _lazy_run_fast(self, fields: list[dict[str, Any]], run: list[str], ind: int,
                       namespace: str | None) -> list[str]:
        """Consecutive optional lazy maps (a manifest entry's six statistics maps) skipped by
        one regular expression match (:class:`_LazyRun`); when it does not match, read one
        by one as usual."""
        state = self.var("RUN")
        self.consts[state] = _LazyRun(run)
        m, regs = self.var("m"), self.var("regs")
        names = [self.var() for _ in fields]
        start = self.var("start")
        self.emit(ind, f"{m} = {state}.match(buf, pos)")
        self.emit(ind, f"if {m} is None:")
        self.emit(ind + 1, f"{start} = pos")
        for f, v in zip(fields, names, strict=True):
            self.value(f["type"], v, ind + 1, namespace, str(f["name"]))
        self.emit(ind + 1, f"{state}.miss(buf, {start}, pos, ({', '.join(names)},))")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{regs} = {m}.regs")
        self.emit(ind + 1, f"pos = {regs}[0][1]")
        for k, (kind, v) in enumerate(zip(run, names, strict=True)):
            s, e = self.var("s"), self.var("e")
            cls = "LazyIntMap" if kind == "i" else "LazyBytesMap"
            self.emit(ind + 1, f"{s}, {e} = {regs}[{k + 1}]")
            # the group holds the union index too: 0 is null
            self.emit(ind + 1, f"{v} = {cls}(buf[{s} + 1:{e}]) if buf[{s}] else None")
        return names

    def array(self, schema: dict[str, Any], target: str, ind: int, namespace: str | None,
              field_name: str) -> None:
        items, item_ns = self.resolve(schema["items"], namespace)
        kv = _key_value_record(items) if schema.get("logicalType") == "map" else None
        if kv is None:
            def item(i: int, lst: str) -> None:
                v = self.var()
                self.value(schema["items"], v, i, namespace)
                self.emit(i, f"{lst}.append({v})")
            self.blocks(target, ind, "[]", item)
            return
        if field_name in self.lazy and _is_varint(kv[0]) and kv[1] == "bytes":
            self._lazy_map(target, ind, "_skip_bytes_entries(buf, pos, {n})", "LazyBytesMap")
            return
        if field_name in self.lazy and all(_is_varint(t) for t in kv):
            self._lazy_map(target, ind, "_skip_varints(buf, pos, {n} * 2)", "LazyIntMap")
            return

        def kv_item(i: int, d: str) -> None:
            k, v = self.var("k"), self.var()
            self.value(kv[0], k, i, item_ns)
            self.value(kv[1], v, i, item_ns)
            self.emit(i, f"{d}[{k}] = {v}")
        self.blocks(target, ind, "{}", kv_item)


_VARINT = rb"[\x80-\xff]{0,9}[\x00-\x7f]"
#: Values of bytes maps :class:`_LazyRun` matches: up to 32 bytes (bounds are 16 characters
#: or bytes unless a table asks for more). Each length is an alternative; every one more
#: adds to the time to compile an expression.
_SHORT_BYTES_MAX = 32
_SHORT_BYTES = b"(?:" + b"|".join(re.escape(bytes([2 * n])) + (b".{%d}" % n if n else b"")
                                  for n in range(_SHORT_BYTES_MAX + 1)) + b")"
_RUN_LEARN_EVERY = 256
#: Compiled expressions by shape: ``("i" | "b", entries or None for null)`` per map.
_RUN_PATTERNS: dict[tuple[tuple[str, int | None], ...], Callable[..., Any]] = {}


def _never(buf: bytes, pos: int) -> None:
    return None


class _LazyRun:
    """How a decoder skips consecutive optional lazy maps (the six statistics maps of a
    manifest entry) in one call: an expression matching one shape of those maps (each null,
    or one block of ``n`` entries, bytes values of up to :data:`_SHORT_BYTES_MAX` bytes).

    Files of a manifest usually all have statistics for the same columns, so one expression
    skips the maps of nearly every record. A record it does not match is read field by
    field, and every :data:`_RUN_LEARN_EVERY` th such record makes its shape the one tried
    next: compiling an expression costs about what it saves on a few hundred records, so a
    small manifest never pays for one. A match is an exact parse: the expression checks every
    varint and every length.
    """

    __slots__ = ("kinds", "match", "misses")

    def __init__(self, kinds: list[str]) -> None:
        self.kinds = tuple(kinds)
        self.match: Callable[[bytes, int], Any] = _never
        self.misses = 0

    def miss(self, buf: bytes, start: int, end: int, values: tuple[LazyMap | None, ...]
             ) -> None:
        """A record whose maps, ``buf[start:end]``, were read field by field as ``values``."""
        self.misses += 1
        if self.misses % _RUN_LEARN_EVERY:
            return
        shape = []
        for kind, v in zip(self.kinds, values, strict=True):
            raw = None if v is None else v.raw
            n = None if raw is None else read_long(raw, 0)[0]
            if n is not None and not 0 <= n <= 256:  # too long to be worth compiling
                return
            shape.append((kind, n))
        key = tuple(shape)
        match = _RUN_PATTERNS.get(key)
        if match is None:
            match = re.compile(b"".join(_map_pattern(kind, n) for kind, n in key),
                               re.DOTALL).match
            if len(_RUN_PATTERNS) < 256:
                _RUN_PATTERNS[key] = match
        got = match(buf, start)
        if got is not None and got.end() == end:  # not when maps have several blocks or
            self.match = match  # long values


def _map_pattern(kind: str, n: int | None) -> bytes:
    """One optional map of a :class:`_LazyRun` shape, union index included, as a group."""
    if n is None:
        return b"(\x00)"
    # the entries written out n times: a repeated group would be matched by the engine's
    # general repeat, which saves its state at every step
    entry = _VARINT * 2 if kind == "i" else _VARINT + _SHORT_BYTES
    return b"(\x02" + re.escape(encode_long(n)) + (entry * n + b"\x00" if n else b"") + b")"


def _key_value_record(items: Any) -> tuple[Any, Any] | None:
    if not isinstance(items, dict) or items.get("type") != "record":
        return None
    fields = items.get("fields", [])
    if len(fields) != 2 or [f["name"] for f in fields] != ["key", "value"]:
        return None
    return fields[0]["type"], fields[1]["type"]


def _is_varint(schema: Any) -> bool:
    return schema in ("int", "long") or (
        isinstance(schema, dict) and schema.get("type") in ("int", "long")
    )


_DECODERS: dict[tuple[str, frozenset[str]], Callable[..., int]] = {}


def compile_decoder(schema: Any, lazy: frozenset[str] = frozenset()) -> Callable[..., int]:
    """``decode(buf, pos, count, append) -> pos``: decodes ``count`` records of ``schema``."""
    key = (json.dumps(schema, sort_keys=True), lazy)
    fn = _DECODERS.get(key)
    if fn is not None:
        return fn
    b = _DecoderBuilder(lazy)
    b.emit(1, "for _ in range(count):")
    b.value(schema, "rec", 2, None)
    b.emit(2, "append(rec)")
    b.emit(1, "return pos")
    source = "def decode(buf, pos, count, append):\n" + "\n".join(b.lines) + "\n"
    namespace: dict[str, Any] = {
        "_varint_tail": _varint_tail, "_skip_varints": _skip_varints, "AvroCorrupt": AvroCorrupt,
        "AvroTruncated": AvroTruncated,
        "LazyIntMap": LazyIntMap, "LazyBytesMap": LazyBytesMap,
        "_skip_bytes_entries": _skip_bytes_entries,
        "_unpack_float": struct.Struct("<f").unpack_from,
        "_unpack_double": struct.Struct("<d").unpack_from, **b.consts,
    }
    exec(compile(source, f"<avro decoder {len(_DECODERS)}>", "exec"), namespace)  # noqa: S102
    fn = namespace["decode"]
    if len(_DECODERS) < 256:
        _DECODERS[key] = fn
    return fn


# -- container files ------------------------------------------------------------------------


class AvroFile:
    """A decoded Avro object container file: key/value metadata, writer schema, records."""

    __slots__ = ("metadata", "schema", "records")

    def __init__(self, metadata: dict[str, str], schema: Any, records: list[Any]) -> None:
        self.metadata = metadata
        self.schema = schema
        self.records = records


def read_header(buf: bytes) -> tuple[dict[str, bytes], bytes, int]:
    if buf[:4] != MAGIC:
        raise AvroCorrupt("missing the Avro magic bytes 'Obj\\x01'")
    pos = 4
    meta: dict[str, bytes] = {}
    n, pos = read_long(buf, pos)
    while n:
        if n < 0:
            n = -n
            _, pos = read_long(buf, pos)
        if n > len(buf) - pos:
            raise AvroTruncated()
        for _ in range(n):
            klen, pos = read_long(buf, pos)
            if klen < 0:
                raise AvroCorrupt("negative length in the header")
            key = buf[pos:pos + klen].decode()
            pos += klen
            vlen, pos = read_long(buf, pos)
            if vlen < 0:
                raise AvroCorrupt("negative length in the header")
            meta[key] = buf[pos:pos + vlen]
            pos += vlen
        n, pos = read_long(buf, pos)
    sync = buf[pos:pos + _SYNC_SIZE]
    pos += _SYNC_SIZE
    if pos > len(buf):
        raise AvroTruncated()
    return meta, sync, pos


def container_blocks(data: bytes, decompress: bool = True
                     ) -> tuple[dict[str, bytes], Iterator[tuple[int, bytes, int]]]:
    """The header metadata of an Avro container file and an iterator over its blocks as
    (record count, block, byte offset of the block) with sizes and sync markers checked;
    raises :class:`AvroTruncated` / :class:`AvroCorrupt` (also while iterating). Without
    ``decompress`` the blocks are as stored (:func:`decompress_block` them)."""
    meta, sync, pos = read_header(data)
    codec = (meta.get("avro.codec") or b"null").decode()
    budget = [max(MIN_INFLATE_LIMIT, MAX_INFLATE_RATIO * len(data))]

    def inflate(raw: bytes) -> bytes:
        out = decompress_block(codec, raw, budget[0])
        budget[0] -= len(out)
        return out

    def blocks(pos: int) -> Iterator[tuple[int, bytes, int]]:
        end = len(data)
        while pos < end:
            count, pos = read_long(data, pos)
            size, pos = read_long(data, pos)
            if count < 0 or size < 0:
                raise AvroCorrupt("negative block count or size")
            block_end = pos + size
            if block_end + _SYNC_SIZE > end:
                raise AvroTruncated()
            if data[block_end:block_end + _SYNC_SIZE] != sync:
                raise AvroCorrupt(f"sync marker mismatch after the block at byte {pos}")
            raw = data[pos:block_end]
            yield count, inflate(raw) if decompress else raw, pos
            pos = block_end + _SYNC_SIZE

    return meta, blocks(pos)


def _inflater() -> tuple[Callable[..., Any], Any]:
    """``decompressobj`` of ISA-L (python-isal, the same interface as zlib's and about 1.5x
    faster on manifests' blocks) and its error, or zlib's where it is not installed."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.decompressobj, zlib.error
    return isal_zlib.decompressobj, isal_zlib.error


#: (decompressobj, its error class), chosen on first use.
_INFLATER: list[tuple[Callable[..., Any], Any]] = []


def inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """zlib / deflate / gzip (by ``wbits``) ``data``, refused (:class:`AvroCorrupt`) when it
    inflates to more than ``limit`` bytes: a bomb stops at the limit instead of filling the
    memory. Invalid data raises ``zlib.error``, whichever library inflates it."""
    if not _INFLATER:
        _INFLATER.append(_inflater())
    decompressobj, error = _INFLATER[0]
    d = decompressobj(wbits)
    try:
        out = d.decompress(data, limit)
        tail = d.unconsumed_tail or d.flush()
    except error as e:
        if isinstance(e, zlib.error):
            raise
        raise zlib.error(str(e)) from e
    if tail:
        raise AvroCorrupt(f"inflates to more than {limit} bytes")
    if not d.eof:
        raise AvroCorrupt("incomplete or truncated compressed stream")
    return out


def decompress_block(codec: str, data: bytes, limit: int = MIN_INFLATE_LIMIT) -> bytes:
    """One block's bytes in any codec of the Avro spec, refused (:class:`AvroCorrupt`) when
    they would decompress to more than ``limit`` bytes (checked before or while
    decompressing, never after)."""
    if codec == "null":
        return data
    if codec == "deflate":
        return inflate(data, -15, limit)
    if codec == "snappy":
        return _unsnappy(data, limit)
    if codec in ("bzip2", "xz"):
        import bz2
        import lzma

        d = bz2.BZ2Decompressor() if codec == "bzip2" else lzma.LZMADecompressor()
        try:
            out: bytes = d.decompress(data, max_length=limit + 1)
        except (OSError, EOFError, lzma.LZMAError) as e:
            raise AvroCorrupt(f"cannot decompress a {codec} block: {e}") from None
        if len(out) > limit:
            raise AvroCorrupt(f"inflates to more than {limit} bytes")
        if not d.eof:
            raise AvroCorrupt("incomplete or truncated compressed stream")
        return out
    if codec == "zstandard":
        return _unzstd(data, limit)
    raise AvroCorrupt(f"unsupported Avro codec {codec!r}")


def _unsnappy(data: bytes, limit: int) -> bytes:
    """An Avro snappy block: raw snappy, then the CRC-32 (big-endian) of what it holds. The
    length snappy declares at its start is checked against ``limit`` first."""
    if len(data) < 4:
        raise AvroCorrupt("a snappy block shorter than its checksum")
    length = shift = 0
    for i, b in enumerate(data[:min(5, len(data) - 4)]):  # snappy's own (unsigned) varint
        length |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    else:
        raise AvroCorrupt("a snappy block with no length")
    if length > limit:
        raise AvroCorrupt(f"inflates to more than {limit} bytes")
    from cramjam import snappy

    try:
        out = bytes(snappy.decompress_raw(data[:-4]))
    except Exception as e:  # cramjam's DecompressionError
        raise AvroCorrupt(f"cannot decompress a snappy block: {e}") from None
    if zlib.crc32(out) != int.from_bytes(data[-4:], "big"):
        raise AvroCorrupt("a snappy block's checksum does not match its bytes")
    return out


def _unzstd(data: bytes, limit: int) -> bytes:
    """An Avro zstandard block (a zstd frame), with the ``zstandard`` package where it is
    installed (floe does not require it)."""
    try:
        import zstandard
    except ImportError:
        raise AvroCorrupt("a zstandard block: install the 'zstandard' package to read it")\
            from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            out: bytes = reader.read(limit + 1)
    except zstandard.ZstdError as e:
        raise AvroCorrupt(f"cannot decompress a zstandard block: {e}") from None
    if len(out) > limit:
        raise AvroCorrupt(f"inflates to more than {limit} bytes")
    return out


def read_avro(data: bytes, location: str, lazy: frozenset[str] = frozenset()) -> AvroFile:
    """Decode a whole container file; any defect raises MetadataError naming ``location``.

    The cyclic garbage collector is paused while decoding: the records are acyclic, and
    without the pause its generation scans over the growing list of tuples cost a third of
    the decoding time of a large manifest.
    """
    with gc_paused():
        return _read_avro(data, location, lazy)


@contextmanager
def avro_errors(location: str) -> Iterator[None]:
    """Any defect of the Avro file read inside raises :class:`MetadataError` naming
    ``location`` (what :func:`read_avro` raises; floe/scan/native.py reads manifests too)."""
    try:
        yield
    except (AvroTruncated, IndexError, struct.error):
        raise MetadataError(location, "truncated Avro file (ends in the middle of a block)")\
            from None
    except (AvroCorrupt, zlib.error, UnicodeDecodeError, ValueError, KeyError, TypeError,
            AttributeError) as e:
        raise MetadataError(location, f"not a valid Avro file: {e}") from None
    except (RecursionError, SyntaxError, MemoryError):
        # a schema nested deeper than Python compiles or parses (json.loads, the decoder)
        raise MetadataError(location, "not a valid Avro file: the schema nests too deeply")\
            from None


def _read_avro(data: bytes, location: str, lazy: frozenset[str]) -> AvroFile:
    with avro_errors(location):
        meta, blocks = container_blocks(data)
        metadata = {k: v.decode("utf-8", "replace") for k, v in meta.items()}
        if "avro.schema" not in metadata:
            raise AvroCorrupt("the header has no avro.schema")
        schema = json.loads(metadata["avro.schema"])
        decode = compile_decoder(schema, lazy)
        records: list[Any] = []
        append = records.append
        for count, block, _ in blocks:
            if count > len(block):  # see the module docstring: zero-byte records
                raise AvroCorrupt(f"a block of {len(block)} bytes cannot hold {count} records")
            if decode(block, 0, count, append) > len(block):
                raise AvroTruncated()
    return AvroFile(metadata, schema, records)


def write_avro(
    out: IO[bytes],
    schema: dict[str, Any],
    records: list[dict[str, Any]],
    metadata: dict[str, str],
    codec: str = "deflate",
) -> None:
    """Write a container file with fastavro; values of logical types must already be raw."""
    import fastavro  # only writers need it (reading is floe's own decoder)

    parsed = fastavro.parse_schema(schema)
    fastavro.writer(out, parsed, records, codec=codec, metadata=metadata)
