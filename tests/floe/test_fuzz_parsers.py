"""Hostile input (issue 23): every parser of bytes someone else wrote either parses or raises
floe's error type with a message; never another exception, a hang or an allocation the
input's size does not pay for, and never a file written.

Each parser is fed valid bytes written by floe itself (a small partitioned table), mutated
(bytes flipped, cut, inserted, Avro varints set huge or negative), and random bytes. The runs
are derandomized so CI is reproducible; ``FLOE_FUZZ_EXAMPLES=N`` runs N examples per parser
for a longer local search. The hostile cases found so far are kept as plain tests below the
fuzz tests; those that hung or allocated without bound before their fix (an Avro block count of
2^62, a header read backwards, overlapping Roaring runs) assert the error, not a time.

Parsers covered: table metadata JSON (and gzip), manifest lists and manifests (floe's Avro
decoder, statistics maps lazy or not), partition statistics files (Parquet and Avro), data
files as a scan reads them (Parquet, ORC, Avro; ORC footers floe parses itself), Puffin
deletion vectors and their Roaring bitmaps, the catalog configuration file and the filter
language.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from floe.avro import MAGIC, AvroCorrupt, encode_long, read_avro
from floe.catalog.base import read_metadata
from floe.catalog.config import load_catalogs
from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import FilterInvalid, FloeError, MetadataError
from floe.expressions import parse_filter
from floe.io import FileIO
from floe.io.orc import orc_types
from floe.maintenance.partition_stats import compute_partition_stats, read_partition_stats
from floe.manifest import DataFile, FileContent, read_manifest, read_manifest_list
from floe.metadata import parse_metadata
from floe.partitioning import parse_partition_by
from floe.scan import DeleteFile, FileScanTask
from floe.scan.readers import (
    NAME_MAPPING_PROPERTY,
    ReadOptions,
    UnsupportedDeletes,
    read_task,
    roaring64_positions,
)
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, False), NestedField(2, "cat", STRING, False))

FUZZ = settings(
    max_examples=int(os.environ.get("FLOE_FUZZ_EXAMPLES", "600")),
    deadline=None,
    derandomize=True,
    database=None,  # nothing written under .hypothesis/ either
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)


# -- valid inputs, written by floe ---------------------------------------------------------------


@dataclasses.dataclass(repr=False)
class Valid:
    """A small partitioned table's files: the bytes each fuzz test starts from."""

    root: Path
    table: Any
    metadata: bytes
    manifest_list: bytes
    manifest: bytes
    manifest_file: Any
    stats: bytes
    stats_file: Any
    parquet: bytes
    orc: bytes
    avro_data: bytes
    puffin: bytes


def _puffin(positions: list[int]) -> tuple[bytes, int, int]:
    """A Puffin file holding one ``deletion-vector-v1`` blob: bytes, blob offset, blob size."""
    lows = sorted(positions)
    bitmap = struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, len(lows) - 1)
    bitmap += struct.pack("<I", len(bitmap) + 4) + struct.pack(f"<{len(lows)}H", *lows)
    vector = b"\xd1\xd3\x39\x64" + struct.pack("<Q", 1) + struct.pack("<I", 0) + bitmap
    blob = struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    return b"PFA1" + blob, 4, len(blob)


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> Valid:
    root = tmp_path_factory.mktemp("fuzz-wh")
    cat = FileSystemCatalog("c", str(root))
    t = cat.create_table("db.t", SCHEMA, spec=parse_partition_by("cat", SCHEMA))
    for k in range(3):
        ids = list(range(k * 5, k * 5 + 5))
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "cat": [f"c{i % 2}" for i in ids]}))
    compute_partition_stats(t)
    t.refresh()
    md = t.metadata
    io = FileIO()
    mlist = md.current_snapshot().manifest_list
    manifests = read_manifest_list(io, mlist)
    entry = read_manifest(io, manifests[0])[0]
    stats_file = md.partition_statistics[0]
    data = tmp_path_factory.mktemp("fuzz-data")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": ["a", "b", "c"]})
    orc.write_table(rows, str(data / "d.orc"))
    import fastavro

    with open(data / "d.avro", "wb") as fh:
        fastavro.writer(fh, {"type": "record", "name": "r", "fields": [
            {"name": "id", "type": "long", "field-id": 1},
            {"name": "cat", "type": ["null", "string"], "field-id": 2}]},
            [{"id": 1, "cat": "a"}, {"id": 2, "cat": None}])
    return Valid(
        root=root, table=t,
        metadata=Path(t.metadata_location.removeprefix("file://")).read_bytes(),
        manifest_list=io.read(mlist), manifest=io.read(manifests[0].manifest_path),
        manifest_file=manifests[0], stats=io.read(stats_file.statistics_path),
        stats_file=stats_file, parquet=io.read(entry.data_file.file_path),
        orc=(data / "d.orc").read_bytes(), avro_data=(data / "d.avro").read_bytes(),
        puffin=_puffin([0, 2])[0],
    )


# -- mutations -------------------------------------------------------------------------------


_HOSTILE_VARINTS = [encode_long(v) for v in (2**62, -(2**62), 2**40, -1, -(2**31), 2**31,
                                             2**63 - 1, -(2**63))]


_OP = st.tuples(st.sampled_from(["flip", "cut", "insert", "varint", "delete"]),
                st.integers(0, 1 << 20), st.integers(1, 255), st.binary(min_size=1, max_size=16),
                st.sampled_from(_HOSTILE_VARINTS))
#: A mutation: ("ops", [(op, where, xor, inserted, varint)...]) applied to valid bytes,
#: ("half", None) their first half, or ("random", bytes) instead of them. What is drawn never
#: depends on the bytes (hypothesis replays and shrinks the draws).
MUTATION = st.one_of(st.tuples(st.just("ops"), st.lists(_OP, min_size=1, max_size=4)),
                     st.tuples(st.just("half"), st.none()),
                     st.tuples(st.just("random"), st.binary(max_size=512)))


def hostile(data: bytes, mutation: tuple[str, Any]) -> bytes:
    kind, arg = mutation
    if kind == "random":
        return bytes(arg)
    if kind == "half":
        return data[:len(data) // 2]
    buf = bytearray(data)
    for op, where, xor, inserted, varint in arg:
        at = where % max(len(buf), 1)
        if op == "flip" and buf:
            buf[at] ^= xor
        elif op == "cut":
            del buf[at:]
        elif op == "insert":
            buf[at:at] = inserted
        elif op == "delete":
            del buf[at:at + len(inserted)]
        elif op == "varint":  # an Avro count, length or size that is huge or negative
            buf[at:at + len(inserted) % 10 + 1] = varint
    return bytes(buf)


@dataclasses.dataclass(repr=False)
class Inputs:
    """Where a fuzz test writes its inputs: a directory whose listing must not change but
    for the input files the test itself writes."""

    root: Path
    names: list[str] = dataclasses.field(default_factory=list)

    def write(self, data: bytes, suffix: str) -> str:
        self.names.append(f"input-{len(self.names)}{suffix}")
        path = self.root / self.names[-1]
        path.write_bytes(data)
        return str(path)


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def inputs(tmp_path: Path, valid: Valid) -> Iterator[Inputs]:
    """A fresh input directory; after the test, nothing was written anywhere but by the test
    (the valid table's directory is unchanged too)."""
    table_before = _listing(valid.root)
    box = Inputs(tmp_path)
    yield box
    assert _listing(tmp_path) == sorted(box.names)
    assert _listing(valid.root) == table_before


def parses_or_floe_error(call: Callable[[], Any], error: type[FloeError] = FloeError) -> None:
    """The contract: a value, or ``error`` with a message; anything else fails the test."""
    try:
        call()
    except error as e:
        assert str(e).strip(), f"{type(e).__name__} without a message"


# -- table metadata JSON ------------------------------------------------------------------------


@FUZZ
@given(m=MUTATION)
def test_metadata_json(valid: Valid, inputs: Inputs, m: tuple[str, Any]) -> None:
    raw = hostile(valid.metadata, m)
    parses_or_floe_error(lambda: parse_metadata(raw, "m.json"), MetadataError)
    path = inputs.write(raw, ".metadata.json")
    parses_or_floe_error(lambda: read_metadata(FileIO(), path), FloeError)


_DOC_EDITS = st.sampled_from([
    ("format-version", 2**70), ("last-sequence-number", "x"), ("schemas", [{}]),
    ("current-schema-id", None), ("partition-specs", [{"spec-id": 0, "fields": [{}]}]),
    ("snapshots", [{"snapshot-id": 1}]), ("refs", {"main": {"snapshot-id": 9}}),
    ("properties", {"a": 1}), ("sort-orders", [{"order-id": "x"}]), ("snapshot-log", [7]),
    ("metadata-log", [{"timestamp-ms": 1}]), ("statistics", [{}]),
    ("partition-statistics", [{"snapshot-id": 1}]), ("location", 5),
])


@FUZZ
@given(edits=st.lists(_DOC_EDITS, min_size=1, max_size=3))
def test_metadata_json_wrong_values(valid: Valid, edits: list[tuple[str, Any]]) -> None:
    """Well-formed JSON with fields of the wrong shape."""
    doc = json.loads(valid.metadata)
    for key, value in edits:
        doc[key] = value
    parses_or_floe_error(lambda: parse_metadata(json.dumps(doc).encode(), "m.json"),
                         MetadataError)


# -- Avro: manifest lists and manifests ---------------------------------------------------------


def _touch_entries(entries: list[Any]) -> None:
    """Decode what a manifest reader keeps undecoded (the statistics maps)."""
    for e in entries:
        df = e.data_file
        for m in (df.column_sizes, df.value_counts, df.null_value_counts, df.nan_value_counts,
                  df.lower_bounds, df.upper_bounds):
            if m is not None:
                dict(m)


@FUZZ
@given(m=MUTATION)
def test_manifest_list(valid: Valid, inputs: Inputs, m: tuple[str, Any]) -> None:
    path = inputs.write(hostile(valid.manifest_list, m), ".avro")
    parses_or_floe_error(lambda: read_manifest_list(FileIO(), path), MetadataError)


@FUZZ
@given(m=MUTATION)
def test_manifest(valid: Valid, inputs: Inputs, m: tuple[str, Any]) -> None:
    path = inputs.write(hostile(valid.manifest, m), ".avro")
    manifest = dataclasses.replace(valid.manifest_file, manifest_path=path)
    for lazy in (True, False):
        parses_or_floe_error(
            lambda lazy=lazy: _touch_entries(read_manifest(FileIO(), manifest,
                                                           lazy_stats=lazy)), MetadataError)


# -- partition statistics files -----------------------------------------------------------------


@FUZZ
@given(m=MUTATION, suffix=st.sampled_from([".parquet", ".avro"]))
def test_partition_stats(valid: Valid, inputs: Inputs, m: tuple[str, Any], suffix: str
                         ) -> None:
    path = inputs.write(hostile(valid.stats, m), suffix)
    stats_file = dataclasses.replace(valid.stats_file, statistics_path=path)
    parses_or_floe_error(lambda: read_partition_stats(FileIO(), valid.table.metadata,
                                                      stats_file))


# -- data files (footers) and deletion vectors, read as a scan reads them --------------------------


def _read(task: FileScanTask, md: Any = None) -> list[Any]:
    return [b for b in read_task(FileIO(), task, ReadOptions(md, SCHEMA, None))]


_MAPPED = SimpleNamespace(
    properties={NAME_MAPPING_PROPERTY: json.dumps([{"field-id": 1, "names": ["id"]},
                                                   {"field-id": 2, "names": ["cat"]}])},
    spec_by_id=lambda _: None, schemas=[])


@FUZZ
@given(m=MUTATION, fmt=st.sampled_from(["PARQUET", "ORC", "AVRO"]))
def test_data_files(valid: Valid, inputs: Inputs, m: tuple[str, Any], fmt: str) -> None:
    source = {"PARQUET": valid.parquet, "ORC": valid.orc, "AVRO": valid.avro_data}[fmt]
    path = inputs.write(hostile(source, m), "." + fmt.lower())
    df = DataFile(FileContent.DATA, path, fmt, ("c0",), 3, len(source))
    parses_or_floe_error(lambda: _read(FileScanTask(df, (), None, 0, 1), _MAPPED))


@FUZZ
@given(m=MUTATION)
def test_orc_footer(valid: Valid, m: tuple[str, Any]) -> None:
    raw = hostile(valid.orc, m)
    parses_or_floe_error(lambda: orc_types(raw, "d.orc"))


@FUZZ
@given(m=MUTATION)
def test_deletion_vector(valid: Valid, inputs: Inputs, m: tuple[str, Any]) -> None:
    raw = hostile(valid.puffin, m)
    path = inputs.write(raw, ".puffin")
    target = inputs.write(valid.parquet, ".parquet")
    dv = DataFile(FileContent.POSITION_DELETES, path, "PUFFIN", ("c0",), 2, len(raw),
                  referenced_data_file=target, content_offset=4,
                  content_size_in_bytes=len(valid.puffin) - 4)
    task = FileScanTask(DataFile(FileContent.DATA, target, "PARQUET", ("c0",), 5, 1),
                        (DeleteFile(dv, 2, 0),), None, 0, 1)
    parses_or_floe_error(lambda: _read(task))


@FUZZ
@given(m=MUTATION)
def test_roaring_bitmap(valid: Valid, m: tuple[str, Any]) -> None:
    raw = hostile(valid.puffin[12:-4], m)
    parses_or_floe_error(lambda: roaring64_positions(raw))


# -- the catalog configuration file ----------------------------------------------------------

_CATALOGS_TOML = b"""
[catalogs.wh]
type = "filesystem"
warehouse = "wh"

[catalogs.db]
type = "sql"
uri = "sqlite:///catalog.db"
warehouse = "${FLOE_FUZZ_UNSET}/w"
"""


@FUZZ
@given(m=MUTATION)
def test_catalogs_toml(inputs: Inputs, m: tuple[str, Any]) -> None:
    path = inputs.write(hostile(_CATALOGS_TOML, m), ".toml")
    parses_or_floe_error(lambda: load_catalogs(path, warehouse="", pyiceberg=False))


# -- the filter language ------------------------------------------------------------------------

_FILTER_WORDS = ["id", "cat", "a.b", "=", "!=", "<", "<=", ">", ">=", "<>", "IN", "NOT", "AND",
                 "OR", "IS", "NULL", "NAN", "STARTS", "WITH", "(", ")", ",", "'x'", "'",
                 "1", "-1", "1e400", "1.5", "TRUE", "FALSE", "DATE", "'2024-01-01'",
                 "TIMESTAMP", "'2024-13-45 25:00'", "\"q\"", "`b`", "9" * 5000]


@FUZZ
@given(text=st.one_of(
    st.lists(st.sampled_from(_FILTER_WORDS), max_size=12).map(" ".join),
    st.text(max_size=64),
    st.integers(1, 3000).map(lambda n: "(" * n + "id = 1" + ")" * n),
    st.integers(1, 3000).map(lambda n: "NOT " * n + "id = 1"),
))
def test_filter(text: str) -> None:
    parses_or_floe_error(lambda: parse_filter(text), FilterInvalid)


# -- the hostile cases found, kept (each failed before its fix: another exception, a hang, or
#    an allocation of gigabytes) ----------------------------------------------------------------

_SYNC = bytes(range(16))


def _container(schema: Any, blocks: list[tuple[int, bytes]], *, codec: str = "null",
               header: bytes | None = None) -> bytes:
    """An Avro object container file, written by hand so that it can lie."""
    meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": codec.encode()}
    if header is None:
        header = encode_long(len(meta)) + b"".join(
            encode_long(len(k)) + k.encode() + encode_long(len(v)) + v
            for k, v in meta.items()) + b"\x00"
    out = MAGIC + header + _SYNC
    for count, block in blocks:
        out += encode_long(count) + encode_long(len(block)) + block + _SYNC
    return out


def _record(*fields: tuple[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "r", "fields": [{"name": n, "type": t} for n, t in fields]}


_INT_MAP = ["null", {"type": "array", "logicalType": "map", "items": {
    "type": "record", "name": "kv", "fields": [{"name": "key", "type": "int"},
                                               {"name": "value", "type": "long"}]}}]


@pytest.mark.parametrize("data", [
    # a block of 2^62 records (of one byte each, and of none)
    _container(_record(("a", "int")), [(2**62, b"\x02")]),
    _container(_record(), [(2**62, b"")]),
    # an array block of 2^62 items; a negative block count of -2^62 (items with a size)
    _container(_record(("a", {"type": "array", "items": "int"})),
               [(1, encode_long(2**62) + b"\x02\x00")]),
    _container(_record(("a", {"type": "array", "items": "null"})),
               [(1, encode_long(-(2**62)) + encode_long(4) + b"\x00")]),
    # a string of 2^40 bytes, of -1 bytes
    _container(_record(("s", "string")), [(1, encode_long(2**40) + b"abc")]),
    _container(_record(("s", "bytes")), [(1, encode_long(-1) + b"abc")]),
    # an enum index outside the symbols, a fixed of negative size
    _container(_record(("e", {"type": "enum", "name": "E", "symbols": ["A"]})),
               [(1, encode_long(-1))]),
    _container(_record(("f", {"type": "fixed", "name": "F", "size": -4})), [(1, b"\x00")]),
    # a header map of 2^62 entries; a header key of negative length (read backwards forever)
    _container({}, [], header=encode_long(2**62) + b"\x02a\x02b\x00"),
    _container({}, [], header=encode_long(1) + encode_long(-3) + b"\x00"),
    # a schema nested deeper than Python compiles the decoder, or parses the JSON
    _container(functools.reduce(lambda t, _: {"type": "array", "items": t}, range(30), "int"),
               [(1, b"\x00")]),
    _container(json.loads("[" * 50 + "]" * 50), [(1, b"\x00")]),
    MAGIC + b"\x02\x16avro.schema" + encode_long(200_000) + b"[" * 100_000 + b"]" * 100_000
    + b"\x00" + _SYNC,
], ids=["records-2^62", "empty-records-2^62", "array-2^62", "array-negative-2^62",
        "string-2^40", "bytes-negative", "enum-index", "fixed-negative", "header-2^62",
        "header-negative-key", "schema-deep-decoder", "schema-deep-union", "schema-deep-json"])
def test_hostile_avro(data: bytes) -> None:
    with pytest.raises(MetadataError, match="^x.avro: .*(Avro|truncated)"):
        read_avro(data, "x.avro")


@pytest.mark.parametrize("lazy", [frozenset(), frozenset({"m"})])
@pytest.mark.parametrize("entries", [
    encode_long(2**31) + b"\x02\x04\x00",  # a map of 2^31 entries in 3 bytes
    encode_long(-1) + encode_long(-2),  # a block whose byte size sends the reader back to it
], ids=["2^31-entries", "size-backwards"])
def test_hostile_statistics_maps(entries: bytes, lazy: frozenset[str]) -> None:
    """Manifest statistics maps, decoded or kept lazily (checked when skipped)."""
    data = _container(_record(("m", _INT_MAP)), [(1, b"\x02" + entries)])
    with pytest.raises(MetadataError):
        f = read_avro(data, "x.avro", lazy)
        dict(f.records[0][0])


def test_deflate_bomb_stops_at_the_limit() -> None:
    """A deflate block of 256 MiB of zeros in a file of 250 kB is refused, not inflated."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    block = b"".join(z.compress(chunk) for _ in range(256)) + z.flush()
    data = _container(_record(("b", "bytes")), [(1, block)], codec="deflate")
    with pytest.raises(MetadataError, match="inflates to more than"):
        read_avro(data, "x.avro")


def _inflated(inflater: Any, data: bytes, wbits: int, limit: int) -> Any:
    """What floe.avro.inflate gives with ``inflater``'s library: the bytes, or the error's
    type."""
    import floe.avro as avro_mod

    saved = list(avro_mod._INFLATER)
    avro_mod._INFLATER[:] = [inflater]
    try:
        return avro_mod.inflate(data, wbits, limit)
    except (zlib.error, AvroCorrupt) as e:
        return type(e)
    finally:
        avro_mod._INFLATER[:] = saved


@given(raw=st.binary(max_size=3000), level=st.integers(0, 9), wbits=st.sampled_from([-15, 31]),
       cut=st.integers(0, 4000), flip=st.integers(0, 4000), limit=st.integers(1, 5000))
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@example(raw=b"\x18\xca8\xc5\x05", level=1, wbits=31, cut=0, flip=11, limit=1)
def test_isal_inflates_as_zlib_does(raw: bytes, level: int, wbits: int, cut: int, flip: int,
                                    limit: int) -> None:
    """ISA-L (python-isal), which inflates deflate blocks when installed, gives the bytes
    zlib gives and refuses what zlib refuses (truncated, corrupt, over the limit): callers
    turn either refusal into MetadataError."""
    from isal import isal_zlib

    z = zlib.compressobj(level, zlib.DEFLATED, wbits)
    good = z.compress(raw) + z.flush()
    cases = [good, good[:cut % (len(good) + 1)]]
    if good:
        bad = bytearray(good)
        bad[flip % len(bad)] ^= 0x5A
        cases.append(bytes(bad))
    for data in cases:
        for lim in (limit, 1 << 20):
            want = _inflated((zlib.decompressobj, zlib.error), data, wbits, lim)
            got = _inflated((isal_zlib.decompressobj, isal_zlib.error), data, wbits, lim)
            if isinstance(want, bytes):
                assert got == want, (data, lim)
            else:  # refused by both, each in its words: zlib may call a stream corrupt
                # that ISA-L calls incomplete or over the limit, and the other way round
                assert got in (zlib.error, AvroCorrupt), (data, lim, got)


def test_deflate_bomb_stops_at_the_limit_with_either_library() -> None:
    from isal import isal_zlib

    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = b"".join(z.compress(bytes(1 << 20)) for _ in range(64)) + z.flush()
    for inflater in ((zlib.decompressobj, zlib.error), (isal_zlib.decompressobj,
                                                        isal_zlib.error)):
        assert _inflated(inflater, block, -15, 1 << 20) is AvroCorrupt
        assert _inflated(inflater, block, -15, 64 << 20) == bytes(64 << 20)


def _bytes_record(value: bytes) -> bytes:
    """The Avro encoding of one record of ``{"b": bytes}``."""
    return encode_long(len(value)) + value


def _snappy_block(raw: bytes) -> bytes:
    from cramjam import snappy

    return bytes(snappy.compress_raw(raw)) + zlib.crc32(raw).to_bytes(4, "big")


def _block(codec: str, raw: bytes) -> bytes:
    import bz2
    import lzma

    import zstandard

    if codec == "snappy":
        return _snappy_block(raw)
    if codec == "bzip2":
        return bz2.compress(raw)
    if codec == "xz":
        return lzma.compress(raw)
    return zstandard.ZstdCompressor().compress(raw)


@pytest.mark.parametrize("codec", ["snappy", "bzip2", "xz", "zstandard"])
def test_every_avro_codec_reads_and_its_bombs_stop_at_the_limit(codec: str) -> None:
    """A block in each codec of the Avro spec reads back; one of 256 MiB of zeros in a
    small file is refused before it is decompressed whole. (Snappy expands at most ~21
    times, so its bomb is a block whose declared length lies: 4 GiB in 20 bytes.)"""
    value = b"floe " * 1000
    data = _container(_record(("b", "bytes")), [(1, _block(codec, _bytes_record(value)))],
                      codec=codec)
    assert read_avro(data, "x.avro").records == [(value,)]
    if codec == "snappy":
        bomb = b"\xff\xff\xff\xff\x0f" + bytes(11) + b"\0\0\0\0"
    else:
        bomb = _block(codec, _bytes_record(bytes(256 << 20)))
    assert len(bomb) < 256 << 10
    data = _container(_record(("b", "bytes")), [(1, bomb)], codec=codec)
    with pytest.raises(MetadataError, match="inflates to more than"):
        read_avro(data, "x.avro")


def test_a_snappy_block_whose_checksum_does_not_match_is_refused() -> None:
    block = bytearray(_snappy_block(_bytes_record(b"floe")))
    block[-1] ^= 1
    data = _container(_record(("b", "bytes")), [(1, bytes(block))], codec="snappy")
    with pytest.raises(MetadataError, match="checksum does not match"):
        read_avro(data, "x.avro")


def test_gzip_bomb_metadata_stops_at_the_limit() -> None:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    data = b"".join(z.compress(chunk) for _ in range(256)) + z.flush()
    with pytest.raises(MetadataError, match="cannot decompress gzip metadata: inflates"):
        parse_metadata(data, "m.json.gz")


def test_metadata_number_of_5000_digits() -> None:
    with pytest.raises(MetadataError, match="^m.json: malformed JSON"):
        parse_metadata(b'{"format-version": ' + b"9" * 5000 + b"}", "m.json")


def test_filter_number_of_5000_digits() -> None:
    with pytest.raises(FilterInvalid, match="number too long"):
        parse_filter("id = " + "9" * 5000)


def _runs(*runs: tuple[int, int]) -> bytes:
    """A 64-bit bitmap of one run container with ``(start, length - 1)`` runs."""
    out = struct.pack("<Q", 1) + struct.pack("<I", 0)
    out += struct.pack("<I", 12347) + b"\x01" + struct.pack("<HH", 0, 0)
    return out + struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", *r) for r in runs)


@pytest.mark.parametrize("data", [
    _runs((0, 0xFFFF), (0, 0xFFFF)),  # overlapping runs: 65,535 of them make 2^32 values
    _runs((0xFFF0, 0xFF)),  # a run past the container's 2^16 values
    struct.pack("<Q", 1) + struct.pack("<I", 0) + struct.pack("<II", 12346, 1)
    + struct.pack("<HH", 0, 5000),  # a bitmap container that is not there
    struct.pack("<Q", 2**62) + b"\x00" * 8,  # 2^62 bitmaps
    struct.pack("<Q", 1) + b"\x00\x00",  # truncated
], ids=["overlapping-runs", "run-overflow", "bitmap-truncated", "bitmaps-2^62", "truncated"])
def test_hostile_roaring_bitmaps(data: bytes) -> None:
    with pytest.raises(UnsupportedDeletes, match="deletion vector"):
        roaring64_positions(data)


def test_deletion_vector_with_more_positions_than_its_record_count(tmp_path: Path) -> None:
    raw, offset, size = _puffin([0, 1, 2, 3])
    (tmp_path / "dv.puffin").write_bytes(raw)
    dv = DataFile(FileContent.POSITION_DELETES, str(tmp_path / "dv.puffin"), "PUFFIN", (), 2,
                  len(raw), referenced_data_file="d.parquet", content_offset=offset,
                  content_size_in_bytes=size)
    task = FileScanTask(DataFile(FileContent.DATA, "d.parquet", "PARQUET", (), 5, 1),
                        (DeleteFile(dv, 2, 0),), None, 0, 1)
    with pytest.raises(UnsupportedDeletes, match="more than its 2 positions"):
        _read(task)


def _damaged(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


@pytest.mark.parametrize("fmt, damage", [
    ("PARQUET", lambda v: _damaged(v.parquet, 20)),  # a data page pyarrow cannot decompress
    ("ORC", lambda v: _damaged(v.orc, 64)),  # a stripe footer
    ("AVRO", lambda v: v.avro_data.replace(b"\x02a", b"\x01a")),  # a string of -1 bytes
])
def test_damaged_data_files(valid: Valid, tmp_path: Path, fmt: str,
                            damage: Callable[[Valid], bytes]) -> None:
    path = tmp_path / f"d.{fmt.lower()}"
    path.write_bytes(damage(valid))
    df = DataFile(FileContent.DATA, str(path), fmt, ("c0",), 3, 1)
    with pytest.raises(FloeError, match=f"^{path}: cannot read data file: "):
        _read(FileScanTask(df, (), None, 0, 1), _MAPPED)


def test_partition_stats_avro_fastavro_cannot_read(valid: Valid, tmp_path: Path) -> None:
    (tmp_path / "s.avro").write_bytes(b"\x00\x00\x00\x00\x80")  # fastavro: IndexError
    stats_file = dataclasses.replace(valid.stats_file,
                                     statistics_path=str(tmp_path / "s.avro"))
    with pytest.raises(FloeError, match="not a readable partition statistics file"):
        read_partition_stats(FileIO(), valid.table.metadata, stats_file)
