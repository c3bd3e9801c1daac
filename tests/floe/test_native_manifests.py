"""The C decoder of manifests (floe/_native.c, floe/scan/native.py) against the Python one,
the reference: on real manifests it builds exactly the table the persistent cache stores
from the Python decoder's live entries, and the entries read back from it are the Python
decoder's; what it does not reproduce (decimal, uuid partitions) it declines; on hostile bytes
it raises MetadataError, declines, or answers what Python answers, and never crashes.

Skipped where the extension is not built (``setup.py``: ``make install`` builds it)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floe import avro_native, stats
from floe.avro import encode_long, read_header, read_long
from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import MetadataError
from floe.manifest import (
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    load_bytes,
    read_manifest,
    read_manifest_list,
)
from floe.partitioning import parse_partition_by
from floe.scan import manifests as scan_manifests
from floe.scan import native
from floe.scan.manifest_store import ManifestStore, StoredEntries, wire
from floe.schema import Schema
from floe.types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    DecimalType,
    NestedField,
    TimestampType,
    UUIDType,
)

pytestmark = pytest.mark.skipif(not native.available(), reason="floe._native is not built")

SCHEMA = Schema(
    NestedField(1, "id", LONG, False), NestedField(2, "i", INT), NestedField(3, "s", STRING),
    NestedField(4, "d", DATE), NestedField(5, "ts", TimestampType()),
    NestedField(6, "b", BOOLEAN), NestedField(7, "x", DOUBLE),
)
PARTITIONINGS = ["", "i", "id", "s", "d", "ts", "b", "day(ts)", "bucket(4, id)",
                 "truncate(2, s)", "s, bucket(3, i), day(ts)"]


class _Bytes:
    """An io serving one file's bytes (a manifest rewritten in memory)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, location: str) -> bytes:
        return self.data


def _rows(k: int, n: int = 6) -> pa.Table:
    ids = list(range(k * n, k * n + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i": pa.array([None if v % 5 == 0 else v % 4 for v in ids], pa.int32()),
        "s": pa.array([None if v % 7 == 0 else f"s{v % 3}" for v in ids], pa.string()),
        "d": pa.array([dt.date(2024, 1, 1 + v % 3) for v in ids], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1 + v % 2, v % 24) for v in ids], pa.timestamp("us")),
        "b": pa.array([v % 2 == 0 for v in ids], pa.bool_()),
        "x": pa.array([v / 3 for v in ids], pa.float64()),
    })


def _table(root: Path, partition_by: str, version: int, deletes: bool) -> Any:
    cat = FileSystemCatalog("c", str(root))
    spec = {"spec": parse_partition_by(partition_by, SCHEMA)} if partition_by else {}
    t = cat.create_table("db.t", SCHEMA, **spec,
                         properties={"format-version": str(version),
                                     "commit.manifest.min-count-to-merge": "3"})
    for k in range(4):
        t.append(_rows(k))
    t.delete_where("id = 4")  # copy-on-write: DELETED and EXISTING entries
    if deletes and version >= 2:
        t.delete_where("id = 9 OR id = 13", mode="merge-on-read")
        t.delete_equal(["id"], pa.table({"id": pa.array([15, 20], pa.int64())}))
    t.append(_rows(9))
    return t


def _manifests(t: Any) -> list[ManifestFile]:
    """Every manifest of every snapshot; each manifest list decoded natively as the Python
    decoder decodes it (tests/floe/test_native_manifest_lists.py)."""
    from tests.floe.test_native_manifest_lists import check_list

    seen: dict[str, ManifestFile] = {}
    for snap in t.metadata.snapshots:
        assert check_list(load_bytes(t.io, snap.manifest_list), snap.manifest_list)
        for m in read_manifest_list(t.io, snap.manifest_list):
            seen.setdefault(m.manifest_path, m)
    return list(seen.values())


def _python(io_: Any, m: ManifestFile) -> list[ManifestEntry]:
    return [e for e in read_manifest(io_, m, discard_deleted=True)
            if e.status != ManifestEntryStatus.DELETED]


def _same_entries(got: list[ManifestEntry], want: list[ManifestEntry]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert (a.status, a.snapshot_id, a.sequence_number, a.file_sequence_number) == \
            (b.status, b.snapshot_id, b.sequence_number, b.file_sequence_number)
        assert type(a.status) is type(b.status)
        for name, x, y in zip(a.data_file._fields, a.data_file, b.data_file, strict=True):
            if name in ("column_sizes", "value_counts", "null_value_counts",
                        "nan_value_counts", "lower_bounds", "upper_bounds"):
                x, y = None if x is None else dict(x), None if y is None else dict(y)
            assert x == y, name
            assert type(x) is type(y), name


def check(io_: Any, m: ManifestFile) -> pa.Table:
    """The native table of ``m`` is the cache's table of the Python decoder's live entries,
    and its entries are the Python decoder's."""
    data = load_bytes(io_, m.manifest_path)
    got = native.decode_live_table(data, m)
    live = _python(io_, m)
    want = ManifestStore._table(m, [wire(e) for e in live])
    assert want is not None
    assert got is not None, f"declined {m.manifest_path}"
    assert got.equals(want, check_metadata=True), (got.schema, want.schema)
    assert got.schema.metadata == want.schema.metadata
    _same_entries(list(StoredEntries.of(got)), live)
    return got


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("partition_by", PARTITIONINGS)
def test_floe_written_manifests(tmp_path: Path, partition_by: str, version: int) -> None:
    t = _table(tmp_path, partition_by, version, deletes=True)
    ms = _manifests(t)
    statuses = {e.status for m in ms for e in read_manifest(t.io, m)}
    assert statuses == set(ManifestEntryStatus)  # added, existing and deleted entries
    for m in ms:
        check(t.io, m)


def _rewritten(t: Any, m: ManifestFile, codec: str) -> tuple[_Bytes, ManifestFile]:
    """``m`` written again with ``codec`` (every entry, as it is)."""
    md = t.metadata
    spec = md.spec_by_id(m.partition_spec_id)
    out = io.BytesIO()
    w = ManifestWriter(out, m.manifest_path, spec, md.schema(), md.format_version,
                       m.added_snapshot_id, m.content, codec=codec)
    for e in read_manifest(t.io, m, lazy_stats=False):
        w.add_entry(e)
    w.close()
    data = out.getvalue()
    return _Bytes(data), dataclasses.replace(m, manifest_length=len(data))


@pytest.fixture(scope="module")
def v2_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _table(tmp_path_factory.mktemp("v2"), "s, bucket(3, i), day(ts)", 2, deletes=True)


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "bzip2", "xz"])
def test_codecs_and_inheritance(v2_table: Any, codec: str) -> None:
    """Uncompressed, deflate, snappy, bzip2 and xz blocks; the inheritance rules with every
    kind of manifest-list values (none to inherit, v1's sequence number 0, first row ids to
    assign)."""
    for m in _manifests(v2_table):
        io_, m = _rewritten(v2_table, m, codec)
        for variant in (m, dataclasses.replace(m, added_snapshot_id=None),
                        dataclasses.replace(m, sequence_number=0),
                        dataclasses.replace(m, sequence_number=7),
                        dataclasses.replace(m, first_row_id=1000)):
            check(io_, variant)


def test_an_empty_manifest(tmp_path: Path) -> None:
    t = _table(tmp_path, "s", 2, deletes=False)
    m = _manifests(t)[0]
    out = io.BytesIO()
    ManifestWriter(out, "mem://empty", t.metadata.spec_by_id(m.partition_spec_id),
                   t.metadata.schema(), 2, 1).close()
    data = out.getvalue()
    table = check(_Bytes(data), dataclasses.replace(m, manifest_path="mem://empty",
                                                    manifest_length=len(data)))
    assert table.num_rows == 0


def test_partition_values_null_in_every_live_entry(v2_table: Any) -> None:
    """A partition column whose live values are all null is Arrow's null type, as
    ``pa.array([None, ...])`` makes it; the deleted entry's value is not counted."""
    m = max((m for m in _manifests(v2_table) if m.content == 0),
            key=lambda m: m.added_files_count or 0)
    md = v2_table.metadata
    entries = read_manifest(v2_table.io, m, lazy_stats=False)
    out = io.BytesIO()
    w = ManifestWriter(out, "mem://nulls", md.spec_by_id(m.partition_spec_id), md.schema(),
                       2, m.added_snapshot_id)
    for k, e in enumerate(entries):
        df = e.data_file._replace(partition=(None,) * len(e.data_file.partition))
        if k == 0:
            w.delete(e)  # a deleted entry keeps its values
        else:
            w.existing(e._replace(data_file=df))
    w.close()
    data = out.getvalue()
    m = dataclasses.replace(m, manifest_path="mem://nulls", manifest_length=len(data))
    table = check(_Bytes(data), m)
    assert table.column("p0").type == pa.null()


@pytest.mark.parametrize("version, codec", [(1, "gzip"), (2, "gzip"), (2, "zstd"),
                                            (2, "null")])
def test_pyiceberg_written_manifests(tmp_path: Path, version: int, codec: str) -> None:
    """PyIceberg's manifests and manifest lists, in the Avro codecs it writes
    (``write.avro.compression-codec``; Java 1.10 writes manifests in gzip whatever it says)."""
    sql = pytest.importorskip("pyiceberg.catalog.sql")
    from floe.catalog.sql import SqlCatalog

    uri = f"sqlite:///{tmp_path}/c.db"
    ours = SqlCatalog("c", uri, str(tmp_path / "wh"))
    ours.create_namespace("db")
    for name, by in (("p", "s, i, d"), ("u", ""), ("b", "b, ts")):  # identity: PyIceberg
        # computes the other transforms with pyiceberg-core, not installed
        spec = {"spec": parse_partition_by(by, SCHEMA)} if by else {}
        ours.create_table(f"db.{name}", SCHEMA, **spec, properties={
            "format-version": str(version), "write.avro.compression-codec": codec})
    theirs = sql.SqlCatalog("c", uri=uri, warehouse=str(tmp_path / "wh"))
    try:
        for name in ("p", "u", "b"):
            pt = theirs.load_table(f"db.{name}")
            for k in range(3):
                pt.append(_rows(k).cast(pt.schema().as_arrow()))
            pt.delete("id = 4")  # rewrites a file: DELETED and EXISTING entries
            t = ours.load_table(f"db.{name}")
            ms = _manifests(t)
            assert ms
            avro_codec = {"gzip": b"deflate", "zstd": b"zstandard", "null": b"null"}
            for m in ms:
                header = read_header(load_bytes(t.io, m.manifest_path))[0]
                assert header.get("avro.codec", b"null") == avro_codec[codec]
                check(t.io, m)
    finally:
        theirs.close()
        ours.close()


@pytest.mark.parametrize("field_type", [DecimalType(9, 2), UUIDType()])
def test_decimal_and_uuid_partitions_are_declined(tmp_path: Path, field_type: Any) -> None:
    schema = Schema(NestedField(1, "id", LONG, False), NestedField(2, "v", field_type))
    cat = FileSystemCatalog("c", str(tmp_path))
    t = cat.create_table("db.t", schema, spec=parse_partition_by("v", schema))
    import uuid

    value = Decimal("1.25") if isinstance(field_type, DecimalType) else uuid.uuid4()
    column = pa.array([value], pa.decimal128(9, 2)) if isinstance(value, Decimal) \
        else pa.array([value.bytes], pa.binary(16))
    t.append(pa.table({"id": pa.array([1], pa.int64()), "v": column}))
    (m,) = _manifests(t)
    assert native.decode_live_table(load_bytes(t.io, m.manifest_path), m) is None
    got = scan_manifests.read_live_entries(t.io, [m], cache=None, processes=False)[0]
    assert got == _python(t.io, m)
    assert got[0].data_file.partition == (value,)


def test_floe_native_0_turns_it_off(v2_table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ms = _manifests(v2_table)
    calls: list[str] = []
    decode = native.decode_live_table

    def counted(data: bytes, m: ManifestFile) -> Any:
        calls.append(m.manifest_path)
        return decode(data, m)

    monkeypatch.setattr(native, "decode_live_table", counted)
    on = scan_manifests.read_live_entries(v2_table.io, ms, cache=None, processes=False)
    assert len(calls) == len(ms)
    assert all(isinstance(entries, StoredEntries) for entries in on)
    monkeypatch.setenv("FLOE_NATIVE", "0")
    stats.reset()
    off = scan_manifests.read_live_entries(v2_table.io, ms, cache=None, processes=False)
    assert len(calls) == len(ms)  # not called again
    assert stats.reads() == {stats.MANIFEST: len(ms)}
    assert not any(isinstance(entries, StoredEntries) for entries in off)
    for a, b in zip(on, off, strict=True):
        _same_entries(list(a), b)
    monkeypatch.setattr(avro_native, "_native", None)  # not built: the Python path, silently
    monkeypatch.delenv("FLOE_NATIVE")
    assert not native.available()
    assert scan_manifests.read_live_entries(v2_table.io, ms, cache=None, processes=False) == off


def test_the_cache_stores_the_native_table(v2_table: Any, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOE_MANIFEST_CACHE", str(tmp_path))
    ms = _manifests(v2_table)
    first = scan_manifests.read_live_entries(v2_table.io, ms, cache=None, processes=False)
    stats.reset()
    again = scan_manifests.read_live_entries(v2_table.io, ms, cache=None, processes=False)
    assert stats.reads() == {stats.MANIFEST_CACHE: len(ms)}
    for a, b in zip(first, again, strict=True):
        _same_entries(list(a), list(b))


# -- hostile bytes ---------------------------------------------------------------------------


@dataclasses.dataclass
class _Container:
    """An uncompressed manifest split into header, one block of records, sync marker."""

    header: bytes
    count: int
    block: bytes
    sync: bytes
    manifest: ManifestFile

    def build(self, block: bytes | None = None, count: int | None = None,
              size: int | None = None) -> bytes:
        block = self.block if block is None else block
        return b"".join([self.header, encode_long(self.count if count is None else count),
                         encode_long(len(block) if size is None else size), block, self.sync])


@pytest.fixture(scope="module")
def container(v2_table: Any) -> _Container:
    """The biggest delete manifest (equality ids, referenced files) or data manifest."""
    ms = sorted(_manifests(v2_table), key=lambda m: -(m.added_files_count or 0))
    io_, m = _rewritten(v2_table, ms[0], "null")
    data = io_.data
    _, sync, pos = read_header(data)
    count, p = read_long(data, pos)
    size, p = read_long(data, p)
    assert p + size + 16 == len(data)  # one block
    return _Container(data[:pos], count, data[p:p + size], sync, m)


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except MetadataError:
        return "error", None


def agree(data: bytes, m: ManifestFile) -> str:
    """The native path raises MetadataError, declines, or returns the table of the Python
    decoder's entries; never another exception."""
    kind, got = _outcome(lambda: native.decode_live_table(data, m))
    if kind == "error":
        return "error"
    if got is None:
        return "declined"
    py_kind, live = _outcome(lambda: _python(_Bytes(data), m))
    assert py_kind == "ok", "native decoded what Python refuses"
    want = ManifestStore._table(m, [wire(e) for e in live])
    assert want is not None, "native stored what Python does not store"
    assert got.equals(want, check_metadata=True)
    _same_entries(list(StoredEntries.of(got)), live)
    return "same"


def test_the_container_is_valid(container: _Container) -> None:
    assert agree(container.build(), container.manifest) == "same"


def test_a_huge_block_count(container: _Container) -> None:
    for count in (2**62, 2**63 - 1, 2**69, len(container.block) + 1):
        with pytest.raises(MetadataError):
            native.decode_live_table(container.build(count=count), container.manifest)


def test_a_negative_length(container: _Container) -> None:
    first = read_manifest(_Bytes(container.build()), container.manifest)[0]
    path = first.data_file.file_path.encode()
    prefixed = encode_long(len(path)) + path
    assert prefixed in container.block
    block = container.block.replace(prefixed, encode_long(-5) + path, 1)
    with pytest.raises(MetadataError):
        native.decode_live_table(container.build(block), container.manifest)


def test_varints_longer_than_ten_bytes(container: _Container) -> None:
    # the first record's status as an 11-byte varint
    block = b"\x82" + b"\x80" * 9 + b"\x00" + container.block[1:]
    with pytest.raises(MetadataError):
        native.decode_live_table(container.build(block), container.manifest)
    # a 10-byte varint beyond 64 bits: a value Python reads as a larger int (not a status)
    block = b"\x82" + b"\x80" * 8 + b"\x7f" + container.block[1:]
    assert agree(container.build(block), container.manifest) in ("error", "declined")


def test_truncated_at_every_offset(container: _Container) -> None:
    outcomes = set()
    for cut in range(len(container.block)):
        outcomes.add(agree(container.build(container.block[:cut]), container.manifest))
    for cut in range(0, len(container.header), 7):
        data = container.build()
        outcomes.add(agree(data[:cut], container.manifest))
    assert "error" in outcomes


@settings(derandomize=True, max_examples=3000, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_records(container: _Container, data: st.DataObject) -> None:
    agree(container.build(*mutated(data, container.block)), container.manifest)


def mutated(data: st.DataObject, block: bytes) -> tuple[bytes, int | None, int | None]:
    """A block with up to three bytes changed, then perhaps cut, grown, or given another
    record count or size (None: the block's own): (block, count, size)."""
    changed = bytearray(block)
    for pos, value in data.draw(st.lists(st.tuples(
            st.integers(0, len(changed) - 1), st.integers(0, 255)), min_size=1, max_size=3)):
        changed[pos] = value
    edit = data.draw(st.sampled_from(["none", "none", "none", "cut", "insert", "count", "size"]))
    count, size = None, None
    if edit == "cut":
        del changed[data.draw(st.integers(0, len(changed) - 1)):]
    elif edit == "insert":
        at = data.draw(st.integers(0, len(changed)))
        changed[at:at] = data.draw(st.binary(min_size=1, max_size=12))
    elif edit == "count":
        count = data.draw(st.integers(0, 2**63 - 1))
    elif edit == "size":
        size = data.draw(st.integers(0, len(changed) + 64))
    return bytes(changed), count, size



@settings(derandomize=True, max_examples=2000, deadline=None)
@given(lengths=st.lists(st.integers(0, 12), min_size=2, max_size=40),
       filler=st.integers(0x80, 0xFF), last=st.integers(0, 0x7F), cut=st.integers(0, 200))
def test_int_maps_are_skipped_as_the_python_decoder_skips_them(
        lengths: list[int], filler: int, last: int, cut: int) -> None:
    """The C walk passes a statistics map's varints eight bytes at a time: it ends where
    floe.avro._skip_varints ends, and refuses what it refuses (a varint of more than ten
    bytes, one running past the block), with continuation runs across its 8-byte words."""
    from floe.avro import AvroTruncated, _skip_varints

    if len(lengths) % 2:
        lengths = lengths[:-1]
    body = b"".join(bytes([filler]) * k + bytes([last]) for k in lengths)
    head = encode_long(len(lengths) // 2)
    for data in (head + body + b"\x00", head + body[:cut]):
        try:
            end = _skip_varints(data, len(head), len(lengths))
            want: Any = data[:end + 1] if data[end:end + 1] == b"\x00" else "other"
        except AvroTruncated:
            want = "error"
        if want == "other":
            continue
        program = pa.array([avro_native.OP_RECORD, 1, avro_native.C_INTMAP, 0],
                           pa.int32()).buffers()[1]
        ext = native.extension()
        assert ext is not None
        try:
            (_, _, _, _, _, got), = ext.decode(program, bytes([avro_native.K_BINARY]), [(1, data)])
        except ext.Truncated:
            got = "error"
        assert got == want, (lengths, filler, last, cut)

