"""Iceberg field ids of an ORC file, read from its footer.

Iceberg Java writes each column's field id as the ORC type attribute ``iceberg.id`` (spec
"ORC": "Iceberg field ids are stored as ORC type attributes"). pyarrow's ORC reader does not
expose type attributes, so floe reads them from the file tail itself: the postscript (last
byte: its length; uncompressed), then the footer it points at (in compression chunks of the
postscript's codec), then the footer's type tree, a protobuf ``Footer.types`` list in
pre-order (``orc_proto.proto``). :func:`orc_schema_with_ids` puts the ids on pyarrow's
schema of the same file, whose fields follow the same tree.

Supported codecs: none, zlib (Iceberg's default for ORC), snappy, zstd, lz4.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from floe.errors import FloeError

__all__ = ["OrcType", "orc_types", "orc_schema_with_ids", "ICEBERG_ID"]

ICEBERG_ID = "iceberg.id"
_MAGIC = b"ORC"
# orc_proto.proto Type.Kind
_LIST, _MAP, _STRUCT = 10, 11, 12


@dataclass
class OrcType:
    """One node of the footer's type tree."""

    kind: int
    subtypes: list[int] = field(default_factory=list)
    field_names: list[str] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def field_id(self) -> int | None:
        raw = self.attributes.get(ICEBERG_ID)
        return int(raw) if raw is not None and raw.lstrip("-").isdigit() else None


# -- protobuf wire format (only what the tail needs) -------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("truncated field")
            yield number, wire, buf[pos:pos + n]
            pos += n
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _packed_or_single(value: int | bytes) -> list[int]:
    if isinstance(value, int):
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


# -- compression ------------------------------------------------------------------------------


def _decompress(kind: int, data: bytes, block_size: int) -> bytes:
    """ORC compression chunks: a 3-byte little-endian header (length << 1 | is-original)."""
    if kind == 0:
        return data
    out, pos = [], 0
    while pos < len(data):
        if pos + 3 > len(data):
            raise ValueError("truncated compression chunk header")
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        pos += 3
        n, original = header >> 1, header & 1
        chunk = data[pos:pos + n]
        if len(chunk) != n:
            raise ValueError("truncated compression chunk")
        pos += n
        out.append(chunk if original else _codec(kind, chunk, block_size))
    return b"".join(out)


def _codec(kind: int, chunk: bytes, block_size: int) -> bytes:
    if kind == 1:  # ZLIB: raw deflate
        return zlib.decompress(chunk, -15)
    if kind == 2:  # SNAPPY: the raw format starts with the uncompressed length
        size, _ = _varint(chunk, 0)
        data: bytes = pa.Codec("snappy").decompress(chunk, decompressed_size=size).to_pybytes()
        return data
    if kind == 5:  # ZSTD
        import zstandard

        return zstandard.ZstdDecompressor().decompress(chunk, max_output_size=block_size)
    if kind == 4:  # LZ4: the raw block format, at most one compression block
        out = pa.Codec("lz4_raw").decompress(chunk, decompressed_size=block_size)
        raw: bytes = out.to_pybytes()
        return raw
    raise ValueError(f"unsupported ORC compression kind {kind}")


# -- the tail ---------------------------------------------------------------------------------


def orc_types(data: bytes, location: str) -> list[OrcType]:
    """The footer's type tree of an ORC file (``data``: its bytes)."""
    try:
        if len(data) < 4 or not data.startswith(_MAGIC):
            raise ValueError("not an ORC file (no 'ORC' magic)")
        ps_len = data[-1]
        postscript = data[-1 - ps_len:-1]
        footer_len = compression = 0
        block_size = 256 * 1024
        for number, _, value in _fields(postscript):
            if number == 1 and isinstance(value, int):
                footer_len = value
            elif number == 2 and isinstance(value, int):
                compression = value
            elif number == 3 and isinstance(value, int):
                block_size = value
        end = len(data) - 1 - ps_len
        if footer_len <= 0 or footer_len > end:
            raise ValueError("bad footer length in the postscript")
        footer = _decompress(compression, data[end - footer_len:end], block_size)
        types = []
        for number, _, value in _fields(footer):
            if number == 4 and isinstance(value, bytes):
                types.append(_type(value))
        if not types:
            raise ValueError("the footer has no types")
        return types
    except (ValueError, IndexError, zlib.error, pa.ArrowException) as e:
        raise FloeError(f"{location}: cannot read the ORC footer: {e}") from None


def _type(buf: bytes) -> OrcType:
    t = OrcType(kind=0)
    for number, _, value in _fields(buf):
        if number == 1 and isinstance(value, int):
            t.kind = value
        elif number == 2:
            t.subtypes += _packed_or_single(value)
        elif number == 3 and isinstance(value, bytes):
            t.field_names.append(value.decode("utf-8"))
        elif number == 7 and isinstance(value, bytes):
            key = val = ""
            for n2, _, v2 in _fields(value):
                if n2 == 1 and isinstance(v2, bytes):
                    key = v2.decode("utf-8")
                elif n2 == 2 and isinstance(v2, bytes):
                    val = v2.decode("utf-8")
            t.attributes[key] = val
    return t


def orc_schema_with_ids(arrow_schema: pa.Schema, types: list[OrcType],
                        field_id_key: bytes) -> pa.Schema | None:
    """pyarrow's schema of the file with each field's ``iceberg.id`` under ``field_id_key``
    in its metadata; None when the file has no ids (or its tree does not match pyarrow's)."""
    root = types[0]
    if root.kind != _STRUCT or len(root.subtypes) != len(arrow_schema):
        return None
    found = False

    def with_id(f: pa.Field, index: int) -> pa.Field:
        nonlocal found
        t = types[index]
        fid = t.field_id
        found = found or fid is not None
        md = dict(f.metadata or {})
        md.pop(field_id_key, None)
        if fid is not None:
            md[field_id_key] = str(fid).encode()
        return pa.field(f.name, typed(f.type, t), f.nullable, md or None)

    def typed(at: pa.DataType, t: OrcType) -> pa.DataType:
        if t.kind == _STRUCT and pa.types.is_struct(at) and len(t.subtypes) == at.num_fields:
            return pa.struct([with_id(at.field(i), s) for i, s in enumerate(t.subtypes)])
        if t.kind == _LIST and (pa.types.is_list(at) or pa.types.is_large_list(at)) \
                and len(t.subtypes) == 1:
            vf = with_id(at.value_field, t.subtypes[0])
            return pa.large_list(vf) if pa.types.is_large_list(at) else pa.list_(vf)
        if t.kind == _MAP and pa.types.is_map(at) and len(t.subtypes) == 2:
            kf = with_id(at.key_field, t.subtypes[0])
            vf = with_id(at.item_field, t.subtypes[1])
            return pa.map_(kf, vf)
        return at

    out = pa.schema([with_id(f, s) for f, s in zip(arrow_schema, root.subtypes, strict=True)],
                    metadata=arrow_schema.metadata)
    return out if found else None
