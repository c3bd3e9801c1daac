"""Planning decisions made over a manifest's columns (floe/scan/decide.py) equal the scalar
evaluators' file by file: random files (bounds of every type the bulk path reads, odd
widths, NaN and non-UTF-8 bounds, missing and corrupt statistics, empty files) against
random filters, with and without explanations; and a planned table decides the same with
the bulk path and without it."""

from __future__ import annotations

import decimal
import io as io_module
import json
import math
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from floe.avro import LazyIntMap, encode_bytes_map, encode_int_map, encode_long
from floe.conversions import to_bytes
from floe.errors import MetadataError
from floe.manifest import DataFile, FileContent, FileFormat, ManifestEntry, \
    ManifestEntryStatus, ManifestFile
from floe.metadata import new_table_metadata
from floe.partitioning import parse_partition_by
from floe.scan import decide as bulk
from floe.scan import native
from floe.scan.explain import encode_compact, write_plan_json
from floe.scan.filters import ScanFilter
from floe.scan.manifest_store import ManifestStore, StoredEntries, wire
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER
from floe.types import (
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    DecimalType,
    NestedField,
)

SCHEMA = Schema(
    NestedField(1, "i", INT, required=False),
    NestedField(2, "l", LONG, required=False),
    NestedField(3, "d", DATE, required=False),
    NestedField(4, "ts", TIMESTAMP, required=False),
    NestedField(5, "f", FLOAT, required=False),
    NestedField(6, "x", DOUBLE, required=False),
    NestedField(7, "s", STRING, required=False),
    NestedField(8, "m", DecimalType(9, 2), required=False),
    NestedField(9, "k", INT, required=False),
)
SPEC = "k, bucket(4, l)"
MD = new_table_metadata(SCHEMA, parse_partition_by(SPEC, SCHEMA), UNSORTED_SORT_ORDER,
                        "file:///t", format_version=2)

pytestmark = pytest.mark.skipif(not native.available(), reason="needs floe._native")

ints = st.integers(-20, 20)
strings = st.text(alphabet="abcé", max_size=3)


@st.composite
def bound(draw: Any, fid: int) -> bytes | None:
    t = SCHEMA.find_field(fid).field_type
    kind = draw(st.sampled_from(["value", "value", "value", "none", "odd"]))
    if kind == "none":
        return None
    if kind == "odd":
        return draw(st.sampled_from([b"", b"\x01\x02\x03", b"\xff\xfe", b"\x00" * 8,
                                     b"\x00\x00\x00\x00"]))
    if fid in (5, 6):
        v = draw(st.one_of(st.floats(-20, 20, width=32), st.just(math.nan), st.just(-0.0)))
        if fid == 6 and draw(st.booleans()):
            return struct.pack("<f", v)  # a float promoted to double
        return to_bytes(t, v)
    if fid == 7:
        return to_bytes(t, draw(strings))
    if fid == 8:
        return to_bytes(t, decimal.Decimal(draw(ints)) / 4)
    if fid == 2 and draw(st.booleans()):
        return struct.pack("<i", draw(ints))  # an int promoted to long
    return to_bytes(t, draw(ints))


@st.composite
def data_file(draw: Any, n: int) -> DataFile:
    fids = list(range(1, 10))
    counts = st.one_of(st.none(), st.integers(0, 5))

    def count_map() -> dict[int, int] | None:
        if draw(st.integers(0, 9)) == 0:
            return None
        return {f: c for f in fids if (c := draw(counts)) is not None}

    def bound_map() -> dict[int, bytes] | None:
        if draw(st.integers(0, 9)) == 0:
            return None
        return {f: b for f in fids if (b := draw(bound(f))) is not None}

    return DataFile(
        FileContent.DATA, f"file:///t/data/{n}.parquet", FileFormat.PARQUET,
        (draw(st.one_of(st.none(), st.integers(0, 3))), draw(st.integers(0, 3))),
        draw(st.sampled_from([5, 5, 5, 0, -1])), 100, value_counts=count_map(),
        null_value_counts=count_map(), nan_value_counts=count_map(),
        lower_bounds=bound_map(), upper_bounds=bound_map(), spec_id=0)


def literal(fid: int) -> str:
    return {5: "1.5", 6: "-0.0", 7: "'ab'", 8: "1.25", 3: "DATE '1970-01-05'",
            4: "TIMESTAMP '1970-01-01 00:00:00.000005'"}.get(fid, "3")


@st.composite
def predicate(draw: Any) -> str:
    fid = draw(st.integers(1, 9))
    name = SCHEMA.find_field(fid).name
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!=", "IS NULL", "IS NOT NULL",
                               "IS NAN", "IS NOT NAN", "IN", "NOT IN", "STARTS WITH"]))
    if op in ("IS NAN", "IS NOT NAN") and fid not in (5, 6):
        op = "IS NULL"
    if op == "STARTS WITH":
        return f"s STARTS WITH 'a{draw(strings)}'"
    if op.startswith("IS"):
        return f"{name} {op}"
    if op in ("IN", "NOT IN"):
        return f"{name} {op} ({literal(fid)}, {literal(fid)})"
    if fid in (1, 2, 9):
        return f"{name} {op} {draw(ints)}"
    return f"{name} {op} {literal(fid)}"


filters = st.recursive(predicate(), lambda inner: st.builds(
    lambda a, b, how: f"({a}) {how} ({b})", inner, inner, st.sampled_from(["AND", "OR"])),
    max_leaves=4)


def stored(files: list[DataFile]) -> StoredEntries:
    manifest = ManifestFile("file:///t/metadata/m.avro", 1, 0, sequence_number=1,
                            added_snapshot_id=1)
    entries = [ManifestEntry(ManifestEntryStatus.ADDED, 1, 1, 1, f) for f in files]
    table = ManifestStore._table(manifest, [wire(e) for e in entries])
    assert table is not None
    return StoredEntries.of(table)


def scalar(spec_filter: Any, files: list[DataFile]) -> list[tuple[int, str]]:
    out = []
    for df in files:
        ok, reason = spec_filter.partition(df)
        if not ok:
            out.append((1, reason))
            continue
        ok, reason = spec_filter.metrics(df)
        out.append((0 if ok else 2, reason))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.integers(1, 12).flatmap(
    lambda n: st.tuples(*(data_file(i) for i in range(n)))), row_filter=filters,
    explain=st.booleans())
def test_bulk_equals_scalar(files: tuple[DataFile, ...], row_filter: str,
                            explain: bool) -> None:
    spec_filter = ScanFilter(MD, SCHEMA, row_filter, True, explain).for_spec(0)
    live = stored(list(files))
    got = bulk.decide(spec_filter, live)
    assert got is not None
    want = scalar(spec_filter, list(files))
    assert got.stages() == [s for s, _ in want]
    assert got.after_partition == sum(1 for s, _ in want if s != 1)
    assert [e.data_file.file_path for e in got.built] == \
        [f.file_path for f, (s, _) in zip(files, want, strict=True) if s == 0]
    if explain:
        # the explanations written over the columns are the scalar evaluator's, every row
        assert got.stats is not None
        over_columns = bulk.explained_rows(spec_filter, got.stats, list(range(len(files))))
        assert over_columns == {i: spec_filter.metrics(files[i])[1] for i in over_columns}
        kept = [bulk.FileDecision(f.file_path, "data", True, None, r)
                for f, (s, r) in zip(files, want, strict=True) if s == 0]
        decisions = bulk.DecidedFiles(live, got, spec_filter, kept)
        assert decisions.kept_count == len(kept)
        # the JSON written from the columns (floe plan --json) is the decisions' own
        # (not when every file was kept: the entries were built, the decisions are written
        # from them; nor with a control character, which Arrow does not escape as json does)
        text = decisions.json_text()
        assert not decisions.built
        if text is None:
            assert live.built or any(min(d.path + d.reason) < " " for d in decisions)
        else:
            assert text == encode_compact([d.to_json() for d in decisions])[1:-1]
        assert [(d.path, d.kept, d.stage, d.reason) for d in decisions] == [
            (f.file_path, s == 0, None if s == 0 else ("partition", "metrics")[s - 1], r)
            for f, (s, r) in zip(files, want, strict=True)]


def test_bulk_decides_most_files_in_bulk() -> None:
    """Not everything falls back: on well-formed statistics of the types done in bulk, the
    scalar evaluator sees none of the files a range filter prunes."""
    files = [DataFile(FileContent.DATA, f"file:///t/data/{n}.parquet", FileFormat.PARQUET,
                      (n % 3, n % 4), 10, 100, value_counts={2: 10}, null_value_counts={2: 0},
                      nan_value_counts={}, lower_bounds={2: to_bytes(LONG, n * 10)},
                      upper_bounds={2: to_bytes(LONG, n * 10 + 9)}, spec_id=0)
             for n in range(1000)]
    spec_filter = ScanFilter(MD, SCHEMA, "l >= 5000 AND l < 5100", True, False).for_spec(0)
    calls = []
    metrics = spec_filter.metrics
    spec_filter.metrics = lambda df: calls.append(df) or metrics(df)  # type: ignore[method-assign]
    got = bulk.decide(spec_filter, stored(files))
    assert got is not None
    assert [e.data_file.file_path for e in got.built] == \
        [f"file:///t/data/{n}.parquet" for n in range(500, 510)]
    assert calls == []  # every file decided over the columns
    assert got.stages().count(2) == 990

    # explained, too: every pruned file's explanation written over the columns, when the
    # decisions are read; the ten kept files explained one by one when they are kept (no
    # more than SCALAR_KEPT), or over the columns too (more)
    for scalar_kept in (bulk.SCALAR_KEPT, 0):
        calls.clear()
        spec_filter = ScanFilter(MD, SCHEMA, "l >= 5000 AND l < 5100", True, True).for_spec(0)
        metrics = spec_filter.metrics
        spec_filter.metrics = lambda df: calls.append(df) or metrics(df)  # type: ignore[method-assign]
        live = stored(files)
        got = bulk.decide(spec_filter, live)
        assert got is not None
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(bulk, "SCALAR_KEPT", scalar_kept)
            reasons = bulk.kept_reasons(spec_filter, got)
        assert [df.file_path for df in calls] == \
            ([e.data_file.file_path for e in got.built] if scalar_kept else [])
        assert got.texts_written is not bool(scalar_kept)  # the columns' work not done yet
        kept = [bulk.FileDecision(e.data_file.file_path, "data", True, None, r)
                for e, r in zip(got.built, reasons, strict=True)]
        calls.clear()
        decisions = list(bulk.DecidedFiles(live, got, spec_filter, kept))
        assert calls == []
        assert decisions[0].reason == "pruned: l >= 5000 but upper_bound(l) = 9"
        assert decisions[500].reason == \
            "kept: l >= 5000 might match; kept: l < 5100 might match"
        assert decisions[510].reason == "pruned: l < 5100 but lower_bound(l) = 5100"


def test_corrupt_statistics_fall_back_to_the_scalar_evaluator() -> None:
    """A stats map the extension refuses leaves its rows undecided: the scalar evaluator
    decides them, and raises floe's error for a map it cannot read either, as it would
    without the bulk path."""
    good = DataFile(FileContent.DATA, "file:///t/data/a.parquet", FileFormat.PARQUET, (1, 1),
                    10, 100, value_counts={2: 10}, null_value_counts={2: 0},
                    lower_bounds={2: to_bytes(LONG, 0)}, upper_bounds={2: to_bytes(LONG, 9)},
                    spec_id=0)
    bad = good._replace(file_path="file:///t/data/b.parquet",
                        value_counts=LazyIntMap(b"\x04\x04"))  # two entries, one there
    spec_filter = ScanFilter(MD, SCHEMA, "l > 100", True, False).for_spec(0)
    with pytest.raises(MetadataError):
        scalar(spec_filter, [good, bad])
    with pytest.raises(MetadataError):
        bulk.decide(spec_filter, stored([good, bad]))
    got = bulk.decide(spec_filter, stored([good, good]))
    assert got is not None and got.stages() == [2, 2]


@pytest.fixture
def planned_table(tmp_path: Any) -> str:
    """A floe table partitioned by cat and bucket(2, id), 12 appends of a few rows each."""
    import pyarrow as pa

    from floe.io import FileIO
    from floe.table.append import append, create_table

    schema = Schema(NestedField(1, "id", LONG), NestedField(2, "cat", STRING),
                    NestedField(3, "v", DOUBLE))
    location = str(tmp_path / "t")
    io = FileIO()
    create_table(io, location, schema, spec=parse_partition_by("cat, bucket(2, id)", schema))
    for n in range(12):
        ids = [n * 10 + k for k in range(3)]
        append(io, location, pa.table({
            "id": pa.array(ids, pa.int64()),
            "cat": pa.array([("a", "b", None)[n % 3]] * 3),
            "v": pa.array([float(n), math.nan if n == 4 else -float(n), None], pa.float64())}))
    return location


@pytest.mark.parametrize("row_filter", [
    "id < 35", "id >= 100 AND cat = 'b'", "cat IS NULL OR id = 71", "v > 3.5", "v IS NAN",
    "id IN (5, 55, 115)", "cat != 'a'", "id > 1000", "cat STARTS WITH 'a' AND v < 0",
])
@pytest.mark.parametrize("scalar_kept", [None, 0])
def test_a_planned_table_decides_the_same_in_bulk(planned_table: str, row_filter: str,
                                                  scalar_kept: int | None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_files' tasks, funnel and explanation are the same whether the files are decided
    over the columns or one by one (the bulk path switched off); kept files explained one by
    one (as many as SCALAR_KEPT) or over the columns (0). Its manifests are small ones,
    which a plan decides one by one (BULK_MIN_FILES): that is set to 0 here."""
    from floe.scan import planning

    monkeypatch.setattr(planning, "BULK_MIN_FILES", 0)
    if scalar_kept is not None:
        monkeypatch.setattr(bulk, "SCALAR_KEPT", scalar_kept)
    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.scan import ManifestCache, plan_files
    from floe.scan.planning import stream_plan

    io = FileIO()
    md = load_table_metadata(io, planned_table)[1]
    used = []
    decide = bulk.decide

    def counted(*args: Any) -> Any:
        got = decide(*args)
        used.append(got is not None)
        return got

    monkeypatch.setattr(bulk, "decide", counted)
    bulk_plan = plan_files(io, md, row_filter=row_filter, explain=True, cache=ManifestCache())
    assert used and all(used)
    monkeypatch.setattr(bulk, "decide", lambda *args: None)
    one_by_one = plan_files(io, md, row_filter=row_filter, explain=True,
                            cache=ManifestCache())
    assert bulk_plan.to_json() == one_by_one.to_json()
    # floe plan --json writes the decisions from the columns: the same document
    monkeypatch.setattr(bulk, "decide", counted)
    texts: list[str | None] = []
    json_text = bulk.DecidedFiles.json_text
    monkeypatch.setattr(bulk.DecidedFiles, "json_text",
                        lambda self: texts.append(json_text(self)) or texts[-1])
    streamed = io_module.StringIO()
    write_plan_json(stream_plan(io, md, row_filter=row_filter, explain=True,
                                cache=ManifestCache()), streamed)
    assert used[-1] and any(t is not None for t in texts)
    assert json.loads(streamed.getvalue()) == json.loads(encode_compact(one_by_one.to_json()))
    assert [t.data_file.file_path for t in bulk_plan.tasks] == \
        [t.data_file.file_path for t in one_by_one.tasks]
    assert [str(t.residual) for t in bulk_plan.tasks] == \
        [str(t.residual) for t in one_by_one.tasks]


def _python_map_value(raw: bytes, key: int, as_bytes: bool) -> tuple[str, Any]:
    from floe.avro import _decode_bytes_map, _decode_int_map

    try:
        m = (_decode_bytes_map if as_bytes else _decode_int_map)(raw)
    except Exception as e:  # noqa: BLE001 - every way the reference refuses
        return "error", type(e).__name__
    return "ok", m.get(key)


@settings(derandomize=True, max_examples=3000, deadline=None)
@given(maps=st.lists(st.one_of(
    st.none(),
    st.dictionaries(st.integers(-3, 40), st.binary(max_size=9), max_size=5).map(
        encode_bytes_map),
    st.dictionaries(st.integers(-3, 40), st.integers(-2**63, 2**63 - 1), max_size=5).map(
        encode_int_map),
    st.binary(max_size=24),
    st.builds(lambda head, tail: encode_long(head) + tail,
              st.sampled_from([2**62, -2**62, -1, 2**31, -(2**63)]), st.binary(max_size=12)),
), max_size=8), data=st.data())
def test_map_lookup_of_hostile_bytes(maps: list[bytes | None], data: st.DataObject) -> None:
    """The C lookup of a statistic in the stats maps' Avro bytes (floe._native.map_get): any
    bytes give the Python decoder's value or one of the extension's errors (which leave the
    rows to the scalar evaluator), never a read out of bounds or another value; on bytes the
    Python decoder reads, the C lookup agrees or refuses."""
    import pyarrow as pa

    ext = native.extension()
    assert ext is not None
    key = data.draw(st.integers(-3, 40))
    as_bytes = data.draw(st.booleans())
    start = data.draw(st.integers(0, len(maps)))
    arr = pa.array(maps, pa.binary()).slice(start)
    validity, offsets, body = arr.buffers()
    try:
        got = ext.map_get(offsets, body if body is not None else b"", validity, arr.offset,
                          len(arr), key, as_bytes)
    except (ext.Truncated, ext.Corrupt, ext.Unsupported):
        return
    if as_bytes:
        nulls, valid, offs, values = got
        col = pa.Array.from_buffers(pa.binary(), len(arr), [
            pa.py_buffer(valid), pa.py_buffer(offs), pa.py_buffer(values)], nulls)
    else:
        nulls, valid, values = got
        col = pa.Array.from_buffers(pa.int64(), len(arr), [
            pa.py_buffer(valid), pa.py_buffer(values)], nulls)
    col.validate(full=True)
    for raw, value in zip(maps[start:], col.to_pylist(), strict=True):
        if raw is None:
            assert value is None
            continue
        outcome, want = _python_map_value(raw, key, as_bytes)
        assert outcome == "ok", f"C read {raw!r} that Python refuses ({want})"
        assert value == want


@settings(derandomize=True, max_examples=3000, deadline=None)
@given(raw=st.one_of(
    st.dictionaries(st.integers(-2**63, 2**63 - 1), st.binary(max_size=9), max_size=6).map(
        encode_bytes_map),
    st.dictionaries(st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1),
                    max_size=6).map(encode_int_map),
    st.binary(max_size=24),
    st.builds(lambda head, tail: encode_long(head) + tail,
              st.sampled_from([2**62, -2**62, -1, 2**31, -(2**63), 2**64, -3, 3]),
              st.binary(max_size=12)),
), as_bytes=st.booleans())
@example(raw=encode_long(-2) + encode_long(2**70) + encode_int_map({1: 2}), as_bytes=False)
@example(raw=encode_long(1) + encode_long(2**64) + encode_long(1) + encode_long(0),
         as_bytes=False)
@example(raw=encode_int_map({1: 1, 2: 2})[:-1] + encode_long(1) + encode_long(1)
         + encode_long(9) + encode_long(0), as_bytes=False)
def test_whole_maps_of_hostile_bytes(raw: bytes, as_bytes: bool) -> None:
    """A statistics map decoded whole by C (floe._native.decode_map, what a lazy map reads
    first): any bytes give exactly the Python decoder's dict (a later duplicate key winning)
    or one of the extension's errors, never another value; a lazy map reads what Python
    reads, and raises MetadataError where Python refuses."""
    from floe.avro import LazyBytesMap, LazyIntMap, _decode_bytes_map, _decode_int_map
    from floe.errors import MetadataError

    ext = native.extension()
    assert ext is not None
    python = _decode_bytes_map if as_bytes else _decode_int_map
    try:
        want: Any = python(raw)
    except Exception as e:  # noqa: BLE001 - every way the reference refuses
        want = type(e)
    try:
        got: Any = ext.decode_map(raw, as_bytes)
    except (ext.Truncated, ext.Corrupt, ext.Unsupported):
        got = None
    if got is not None:
        assert isinstance(want, dict), f"C read {raw!r} that Python refuses ({want})"
        assert got == want and list(got) == list(want)
        assert all(type(v) is (bytes if as_bytes else int) for v in got.values())
    lazy = (LazyBytesMap if as_bytes else LazyIntMap)(raw)
    if isinstance(want, dict):
        assert dict(lazy.items()) == want
    else:
        with pytest.raises(MetadataError):
            len(lazy)


def test_small_manifests_are_decided_one_by_one_and_stay_columnar(planned_table: str,
                                                                   monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    """Manifests of at most BULK_MIN_FILES files are decided by the scalar evaluators, on
    entries built for the purpose: the cached manifests stay Arrow columns (no entry with
    its statistics maps decoded is kept), and the plan is the one decided in bulk."""
    from floe.catalog.filesystem import load_table_metadata
    from floe.io import FileIO
    from floe.manifest import read_manifest_list
    from floe.scan import ManifestCache, plan_files
    from floe.scan import planning
    from floe.scan.manifest_store import StoredEntries

    io = FileIO()
    md = load_table_metadata(io, planned_table)[1]
    used = []
    decide = bulk.decide
    monkeypatch.setattr(bulk, "decide", lambda *a: used.append(1) or decide(*a))
    cache = ManifestCache()
    one_by_one = plan_files(io, md, row_filter="id < 35", explain=True, cache=cache)
    assert used == []
    manifests = read_manifest_list(io, md.current_snapshot().manifest_list)
    cached = [cache.get(m.manifest_path) for m in manifests]
    assert cached and all(isinstance(c, StoredEntries) and not c.built for c in cached)
    monkeypatch.setattr(planning, "BULK_MIN_FILES", 0)
    in_bulk = plan_files(io, md, row_filter="id < 35", explain=True, cache=ManifestCache())
    assert used and in_bulk.to_json() == one_by_one.to_json()
