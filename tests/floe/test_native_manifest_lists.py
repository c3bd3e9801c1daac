"""The C decoder of manifest lists (floe/_native.c, floe/avro_native.py) against the Python
one, the reference: on every list it decodes, it returns exactly the ``ManifestFile`` values
the Python decoder returns (compared by ``repr``: types too, ``True`` is not ``1``); what it
does not reproduce it declines, and ``read_manifest_list`` then decodes in Python; on hostile
bytes it raises MetadataError, declines, or answers what Python answers, never anything else.

Skipped where the extension is not built (``setup.py``: ``make install`` builds it)."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from floe import avro_native
from floe import avro_schemas as S
from floe.avro import encode_long, read_avro, read_header, read_long, write_avro
from floe.errors import MetadataError
from floe.manifest import ManifestContent, _manifest_files, read_manifest_list
from tests.floe.test_native_manifests import mutated

pytestmark = pytest.mark.skipif(not avro_native.available(),
                                reason="floe._native is not built")

LONGS = st.integers(-(2**63), 2**63 - 1)
INTS = st.integers(-(2**31), 2**31 - 1)


def python_list(data: bytes, location: str = "list.avro") -> str:
    """What the Python decoder reads, as a repr (MetadataError propagates)."""
    f = read_avro(data, location)
    return repr(_manifest_files(f, location))


def check_list(data: bytes, location: str = "list.avro") -> bool:
    """The native decoder answers the Python decoder's answer exactly, or declines (False)."""
    got = avro_native.decode_manifest_list(data, location)
    if got is None:
        return False
    assert repr(got) == python_list(data, location)
    return True


#: One v2 manifest-list record (no partition summaries).
RECORD: dict[str, Any] = {
    "manifest_path": "m.avro", "manifest_length": 7, "partition_spec_id": 0, "content": 0,
    "sequence_number": 3, "min_sequence_number": 2, "added_snapshot_id": 9,
    "added_files_count": 1, "existing_files_count": 0, "deleted_files_count": 0,
    "added_rows_count": 5, "existing_rows_count": 0, "deleted_rows_count": 0,
    "partitions": None, "key_metadata": None}


def _schema(version: int) -> dict[str, Any]:
    return S.to_avro_schema(S.manifest_file_type(version), "manifest_file")


def _write(schema: dict[str, Any], records: list[dict[str, Any]], codec: str = "null") -> bytes:
    buf = io.BytesIO()
    write_avro(buf, schema, records, {"format-version": "2"}, codec)
    return buf.getvalue()


@st.composite
def _summary(draw: st.DrawFn) -> dict[str, Any]:
    bound = st.none() | st.binary(max_size=20)
    return {"contains_null": draw(st.booleans()), "contains_nan": draw(st.none() | st.booleans()),
            "lower_bound": draw(bound), "upper_bound": draw(bound)}


@st.composite
def _record(draw: st.DrawFn, version: int) -> dict[str, Any]:
    count = st.none() | INTS if version == 1 else INTS
    rows = st.none() | LONGS if version == 1 else LONGS
    d: dict[str, Any] = {
        "manifest_path": draw(st.text(max_size=30)), "manifest_length": draw(LONGS),
        "partition_spec_id": draw(INTS),
        "added_snapshot_id": draw(st.none() | LONGS if version == 1 else LONGS),
        "added_files_count": draw(count), "existing_files_count": draw(count),
        "deleted_files_count": draw(count), "added_rows_count": draw(rows),
        "existing_rows_count": draw(rows), "deleted_rows_count": draw(rows),
        "partitions": draw(st.none() | st.lists(_summary(), max_size=4)),
        "key_metadata": draw(st.none() | st.binary(max_size=8)),
    }
    if version >= 2:
        d["content"] = draw(st.sampled_from([0, 1]))
        d["sequence_number"] = draw(LONGS)
        d["min_sequence_number"] = draw(LONGS)
    if version >= 3:
        d["first_row_id"] = draw(st.none() | LONGS)
    return d


@settings(derandomize=True, max_examples=300, deadline=None)
@given(data=st.data(), version=st.sampled_from([1, 2, 3]),
       codec=st.sampled_from(["null", "deflate", "snappy"]))
def test_written_lists_decode_as_python_decodes_them(data: st.DataObject, version: int,
                                                    codec: str) -> None:
    records = data.draw(st.lists(_record(version), max_size=12))
    assert check_list(_write(_schema(version), records, codec))


def test_many_blocks_and_every_field(tmp_path: Any) -> None:
    """A list of several blocks (fastavro writes a block per ~16 kB) through
    read_manifest_list, which takes the native path; each field's value checked."""
    records = [{
        "manifest_path": f"s3://b/m{i}.avro", "manifest_length": 1000 + i,
        "partition_spec_id": i % 3, "content": i % 2, "sequence_number": i,
        "min_sequence_number": i - 1, "added_snapshot_id": 10**18 + i,
        "added_files_count": i, "existing_files_count": 2 * i, "deleted_files_count": 0,
        "added_rows_count": 10 * i, "existing_rows_count": 0, "deleted_rows_count": 1,
        "partitions": [{"contains_null": i % 5 == 0, "contains_nan": None,
                        "lower_bound": i.to_bytes(4, "little"), "upper_bound": None}] * (i % 3),
        "key_metadata": None, "first_row_id": None if i % 2 else i * 100,
    } for i in range(3000)]
    data = _write(_schema(3), records, "deflate")
    _, sync, _ = read_header(data)
    assert data.count(sync) > 3  # header + several blocks
    path = tmp_path / "list.avro"
    path.write_bytes(data)
    from floe.io import FileIO

    calls = []
    decode = avro_native.decode_manifest_list

    def counted(data: bytes, location: str) -> Any:
        calls.append(location)
        return decode(data, location)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(avro_native, "decode_manifest_list", counted)
        got = read_manifest_list(FileIO(), str(path))
    assert calls == [str(path)]
    assert repr(got) == python_list(data)
    m = got[2002]
    assert (m.manifest_path, m.manifest_length, m.partition_spec_id, m.content) == (
        "s3://b/m2002.avro", 3002, 2002 % 3, ManifestContent.DATA)
    assert (m.sequence_number, m.min_sequence_number, m.added_snapshot_id) == (
        2002, 2001, 10**18 + 2002)
    assert m.partitions is not None and len(m.partitions) == 1
    assert m.partitions[0].lower_bound == (2002).to_bytes(4, "little")
    assert m.partitions[0].contains_null is False
    assert m.partitions[0].contains_nan is None and m.partitions[0].upper_bound is None
    assert got[2002].first_row_id == 200200 and got[2001].first_row_id is None
    assert got[2001].content == ManifestContent.DELETES and got[0].partitions == []
    # a summary repeated (here within a record, i % 3 == 2) is one object: what the plan's
    # manifest evaluator remembers its answers by
    assert got[2].partitions is not None and got[2].partitions[0] is got[2].partitions[1]
    assert got[5].partitions is not None and got[5].partitions[0] is not got[2].partitions[0]


def test_schema_evolution_of_the_list_itself() -> None:
    """Fields in another order, an unknown field of every kind (skipped), no key_metadata,
    a summary without contains_nan, a v1 list (defaults filled in)."""
    schema = _schema(2)
    fields = schema["fields"]
    fields.reverse()
    fields[:] = [f for f in fields if f["name"] != "key_metadata"]
    fields.insert(3, {"name": "extra", "type": ["null", {
        "type": "map", "values": {"type": "array", "items": "double"}}], "default": None})
    fields.append({"name": "tag", "type": {"type": "enum", "name": "T", "symbols": ["a", "b"]}})
    fields.append({"name": "h", "type": {"type": "fixed", "name": "H", "size": 3}})
    summaries = next(f for f in fields if f["name"] == "partitions")
    item = summaries["type"][1]["items"]
    item["fields"] = [f for f in item["fields"] if f["name"] != "contains_nan"]
    item["fields"].append({"name": "note", "type": "string"})
    records = [RECORD | {
        "content": 1,
        "partitions": [{"contains_null": True, "lower_bound": b"a", "upper_bound": b"z",
                        "note": "\u00e9t\u00e9"}],
        "extra": {"k": [1.5, 2.5]}, "tag": "b", "h": b"abc",
    }]
    assert check_list(_write(schema, records))
    got = avro_native.decode_manifest_list(_write(schema, records), "l")
    assert got is not None and got[0].partitions is not None
    assert got[0].partitions[0].contains_nan is None and got[0].key_metadata is None
    v1 = _write(_schema(1), [{k: v for k, v in RECORD.items() if k not in (
        "content", "sequence_number", "min_sequence_number")}])
    assert check_list(v1)
    got = avro_native.decode_manifest_list(v1, "l")
    assert got is not None and (got[0].content, got[0].sequence_number) == (
        ManifestContent.DATA, 0)


def test_what_it_declines_python_decodes(tmp_path: Any) -> None:
    """A field of another type, a logical type, an unknown content: declined, and
    read_manifest_list answers (or refuses, with MetadataError) as the Python decoder does."""
    from floe.io import FileIO

    as_string = _schema(2)
    next(f for f in as_string["fields"] if f["name"] == "manifest_length")["type"] = "string"
    logical = _schema(2)
    next(f for f in logical["fields"] if f["name"] == "added_snapshot_id")["type"] = [
        "null", {"type": "long", "logicalType": "timestamp-millis"}]
    path = tmp_path / "list.avro"
    for schema, rec in [(as_string, RECORD | {"manifest_length": "7"}), (logical, RECORD)]:
        path.write_bytes(_write(schema, [rec]))
        assert avro_native.decode_manifest_list(path.read_bytes(), "l") is None
        got = read_manifest_list(FileIO(), str(path))
        assert repr(got) == python_list(path.read_bytes(), str(path))
    path.write_bytes(_write(_schema(2), [RECORD | {"content": 7}]))
    assert avro_native.decode_manifest_list(path.read_bytes(), "l") is None
    with pytest.raises(MetadataError, match="not a valid manifest list"):
        read_manifest_list(FileIO(), str(path))


def test_floe_native_0_reads_in_python(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from floe.io import FileIO

    path = tmp_path / "list.avro"
    path.write_bytes(_write(_schema(2), [RECORD | {"partitions": [], "key_metadata": b"k"}]))
    monkeypatch.setattr(avro_native, "decode_manifest_list", None)  # would fail if called
    monkeypatch.setenv("FLOE_NATIVE", "0")
    got = read_manifest_list(FileIO(), str(path))
    assert got[0].key_metadata == b"k" and got[0].partitions == []


# -- hostile bytes ---------------------------------------------------------------------------


def _container() -> tuple[bytes, int, bytes, bytes]:
    """An uncompressed v2 list of one block: header, count, block, sync."""
    records = [{
        "manifest_path": f"m{i}.avro", "manifest_length": 7 + i, "partition_spec_id": 0,
        "content": i % 2, "sequence_number": 3, "min_sequence_number": 2,
        "added_snapshot_id": 9, "added_files_count": 1, "existing_files_count": 0,
        "deleted_files_count": 0, "added_rows_count": 5, "existing_rows_count": 0,
        "deleted_rows_count": 0, "key_metadata": None if i else b"key",
        "partitions": [{"contains_null": False, "contains_nan": i == 1,
                        "lower_bound": b"\x01\x00\x00\x00", "upper_bound": None}] * i,
    } for i in range(4)]
    data = _write(_schema(2), records)
    _, sync, pos = read_header(data)
    count, p = read_long(data, pos)
    size, p = read_long(data, p)
    assert p + size + 16 == len(data)
    return data[:pos], count, data[p:p + size], sync


HEADER, COUNT, BLOCK, SYNC = _container()


def _build(block: bytes = BLOCK, count: int = COUNT, size: int | None = None) -> bytes:
    return b"".join([HEADER, encode_long(count), encode_long(len(block) if size is None
                                                             else size), block, SYNC])


def agree(data: bytes) -> str:
    """The native decoder raises MetadataError, declines, or answers exactly what Python
    answers; never another exception, never an answer where Python refuses."""
    try:
        got = avro_native.decode_manifest_list(data, "list.avro")
    except MetadataError:
        return "error"
    if got is None:
        return "declined"
    try:
        want = python_list(data)
    except MetadataError:
        raise AssertionError("native decoded what Python refuses") from None
    assert repr(got) == want
    return "same"


def test_the_container_is_valid() -> None:
    assert agree(_build()) == "same"


def test_huge_counts_and_negative_lengths() -> None:
    for count in (2**62, 2**63 - 1, 2**69, len(BLOCK) + 1):
        with pytest.raises(MetadataError):
            avro_native.decode_manifest_list(_build(count=count), "l")
    path = encode_long(len(b"m1.avro")) + b"m1.avro"
    assert path in BLOCK
    with pytest.raises(MetadataError):
        avro_native.decode_manifest_list(_build(BLOCK.replace(path, encode_long(-3), 1)), "l")
    # the second record's partitions: its union branch, one item (false, [null, true],
    # [null, 4 bytes], null); made an array of 2^62 items
    summary = b"\x02%s\x00\x02\x01\x02\x08\x01\x00\x00\x00\x00"
    assert BLOCK.count(summary % encode_long(1)) == 1
    with pytest.raises(MetadataError):
        avro_native.decode_manifest_list(_build(BLOCK.replace(
            summary % encode_long(1), summary % encode_long(2**62), 1)), "l")


def test_truncated_at_every_offset() -> None:
    outcomes = {agree(_build(BLOCK[:cut])) for cut in range(len(BLOCK))}
    outcomes |= {agree(_build()[:cut]) for cut in range(0, len(HEADER), 5)}
    assert "error" in outcomes


@settings(derandomize=True, max_examples=3000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@example(data=None)
def test_mutated_records(data: st.DataObject | None) -> None:
    if data is None:  # the unmutated list
        assert agree(_build()) == "same"
        return
    block, count, size = mutated(data, BLOCK)
    agree(_build(block, COUNT if count is None else count, size))


def test_a_program_is_compiled_once_per_schema() -> None:
    schema = copy.deepcopy(_schema(2))
    import json

    text = json.dumps(schema)
    first = avro_native._program(text, "manifest_list")
    assert first is not None and avro_native._program(text, "manifest_list") is first
    assert avro_native._program(text, "entry") is None  # not a manifest's entry
