"""The generated Avro decoder: lazy statistics maps skipped by one expression per record
shape (floe.avro._LazyRun) read exactly what fastavro reads, whatever the shapes."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import fastavro
import pytest

from floe.avro import (
    MAGIC,
    LazyMap,
    _LazyRun,
    compile_decoder,
    encode_bytes_map,
    encode_int_map,
    encode_long,
    read_avro,
)

LAZY = frozenset({"sizes", "counts", "lower", "upper"})


def _map(name: str, value: str, key_id: int) -> dict[str, Any]:
    """An optional Iceberg map (array of key/value records, ``logicalType: map``)."""
    return {"name": name, "type": ["null", {
        "type": "array", "logicalType": "map", "items": {
            "type": "record", "name": f"k{key_id}_{name}", "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value, "field-id": key_id + 1}]}}]}


SCHEMA = {"type": "record", "name": "entry", "fields": [
    {"name": "path", "type": "string"},
    _map("sizes", "long", 100), _map("counts", "long", 102),
    _map("lower", "bytes", 104), _map("upper", "bytes", 106),
    {"name": "after", "type": ["null", "long"]},
]}


def _ints(n: int, big: bool = False) -> dict[int, int]:
    return {(i * 1000 if big else i): (i * 7_919_000_003 if big else i) for i in range(1, n + 1)}


def _bytes(n: int, length: int = 8) -> dict[int, bytes]:
    return {i: bytes([i % 256]) * length for i in range(1, n + 1)}


def _record(i: int, sizes: Any, counts: Any, lower: Any, upper: Any) -> dict[str, Any]:
    return {"path": f"s3://b/data/{i:06d}.parquet", "sizes": _plain(sizes),
            "counts": _plain(counts), "lower": _plain(lower), "upper": _plain(upper),
            "after": None if i % 3 else i}


#: Records by shape: what a manifest's statistics maps can look like.
SHAPES: dict[str, Callable[[int], dict[str, Any]]] = {
    "ten columns": lambda i: _record(i, _ints(10), _ints(10), _bytes(10), _bytes(10)),
    "one null map": lambda i: _record(i, _ints(10), None, _bytes(10), _bytes(10)),
    "all null": lambda i: _record(i, None, None, None, None),
    "empty maps": lambda i: _record(i, {}, {}, {}, {}),
    "bounds of 32 bytes": lambda i: _record(i, _ints(3), _ints(3), _bytes(3, 32),
                                            _bytes(3, 32)),
    "bounds of 33 bytes": lambda i: _record(i, _ints(3), _ints(3), _bytes(3, 33),
                                            _bytes(3, 33)),
    "bounds of 200 bytes": lambda i: _record(i, _ints(2), _ints(2), _bytes(2, 200),
                                             _bytes(2, 200)),
    "multi-byte keys and values": lambda i: _record(i, _ints(12, big=True),
                                                    _ints(12, big=True), _bytes(4), _bytes(4)),
    "70 columns": lambda i: _record(i, _ints(70), _ints(70), _bytes(70, 4), _bytes(70, 4)),
    "varying lengths": lambda i: _record(i, _ints(5), _ints(5), _bytes(5, i % 40),
                                         _bytes(5, (i * 7) % 40)),
}


def _write(records: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(SCHEMA), records, codec="null",
                    sync_interval=1 << 14)
    return out.getvalue()


def _plain(value: Any) -> Any:
    """A decoded map as fastavro gives it (a list of key/value records), None as None."""
    if value is None:
        return None
    return [{"key": k, "value": v} for k, v in dict(value).items()]


def _check(data: bytes, lazy_maps: int = 4) -> int:
    """Compare floe's lazy and eager decoding with fastavro's; the records read."""
    expected = list(fastavro.reader(io.BytesIO(data)))
    for lazy in (LAZY, frozenset()):
        got = read_avro(data, "mem.avro", lazy).records
        assert len(got) == len(expected)
        for rec, want in zip(got, expected, strict=True):
            path, sizes, counts, lower, upper, after = rec
            assert (path, after) == (want["path"], want["after"])
            maps = (sizes, counts, lower, upper)
            if lazy:
                assert all(m is None or isinstance(m, LazyMap) for m in maps)
            assert [_plain(m) for m in maps] == [want[k] for k in ("sizes", "counts", "lower",
                                                                   "upper")]
    return len(expected)


def _run_state() -> _LazyRun:
    decode = compile_decoder(SCHEMA, LAZY)
    runs = [v for v in decode.__globals__.values() if isinstance(v, _LazyRun)]
    assert len(runs) == 1
    return runs[0]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_one_shape(shape: str) -> None:
    assert _check(_write([SHAPES[shape](i) for i in range(1500)])) == 1500


def test_shapes_change_between_and_within_blocks() -> None:
    """Runs of each shape long enough for an expression to be learned, then a record of
    another shape in the middle of the run of another, and single records of every shape."""
    order = sorted(SHAPES)
    records = []
    for k, name in enumerate(order):
        records += [SHAPES[name](i) for i in range(600)]
        records.append(SHAPES[order[(k + 1) % len(order)]](k))
        records += [SHAPES[name](i) for i in range(300)]
    records += [SHAPES[name](i) for name in order for i in range(3)]
    assert _check(_write(records)) == len(records)


def test_the_fast_path_is_taken() -> None:
    """A manifest of one shape is read by one expression after the first records (else the
    tests above would not check it)."""
    run = _run_state()
    data = _write([SHAPES["ten columns"](i) for i in range(2000)])
    _check(data)
    misses = run.misses
    _check(data)
    assert run.misses == misses  # the second time, every record matched the expression


def _container(blocks: list[tuple[int, bytes]]) -> bytes:
    """An Avro container file of hand-encoded blocks (codec null)."""
    schema = json.dumps(SCHEMA).encode()
    sync = b"0123456789abcdef"
    header = MAGIC + encode_long(1) + encode_long(len(b"avro.schema")) + b"avro.schema" + \
        encode_long(len(schema)) + schema + b"\x00" + sync
    body = b"".join(encode_long(count) + encode_long(len(raw)) + raw + sync
                    for count, raw in blocks)
    return header + body


def _string(s: str) -> bytes:
    return encode_long(len(s)) + s.encode()


def _two_blocks_int_map(m: dict[int, int]) -> bytes:
    """A map in two blocks, the second with its size in bytes (negative count)."""
    items = list(m.items())
    first, second = items[:1], items[1:]
    tail = b"".join(encode_long(k) + encode_long(v) for k, v in second)
    return (encode_long(len(first)) + b"".join(encode_long(k) + encode_long(v)
                                               for k, v in first)
            + encode_long(-len(second)) + encode_long(len(tail)) + tail + b"\x00")


def test_maps_in_several_blocks_are_read_field_by_field() -> None:
    """Avro lets a map span blocks; the expressions match one block only, so such records
    fall back to reading each field, between records that match."""
    def rec(i: int, several: bool) -> bytes:
        sizes = _two_blocks_int_map(_ints(4)) if several else encode_int_map(_ints(4))
        return (_string(f"p{i}") + b"\x02" + sizes + b"\x02" + encode_int_map(_ints(4))
                + b"\x02" + encode_bytes_map(_bytes(4)) + b"\x02" + encode_bytes_map(_bytes(4))
                + b"\x00")
    records = [rec(i, several=i % 97 == 5) for i in range(1200)]
    data = _container([(300, b"".join(records[k:k + 300])) for k in range(0, 1200, 300)])
    assert _check(data) == 1200
