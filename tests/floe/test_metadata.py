"""Table metadata: v1/v2/v3 parsing, Java's write layout, round trips, errors, new tables."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
from typing import Any

import pytest

from floe.errors import MetadataError, UnsupportedFormatVersion, ValidationError
from floe.metadata import (
    TableMetadata,
    assign_fresh_ids,
    metadata_text,
    metadata_to_json,
    new_table_metadata,
    parse_metadata,
    serialize_metadata,
)
from floe.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from floe.schema import Schema
from floe.snapshots import (
    MetadataLogEntry,
    Operation,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
)
from floe.sorting import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from floe.transforms import parse_transform
from floe.types import (
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    ListType,
    MapType,
    NestedField,
    StructType,
)

LOC = "/tables/t/metadata/v3.metadata.json"

SCHEMA_0 = {
    "type": "struct", "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
    ],
}
SCHEMA_1 = {
    "type": "struct", "schema-id": 1, "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "ts", "required": False, "type": "timestamptz"},
        {"id": 3, "name": "data", "required": False, "type": "string", "doc": "payload"},
    ],
}

V1_LEGACY: dict[str, Any] = {
    "format-version": 1,
    "table-uuid": "D20125C8-7284-442C-9AEA-15FEE620737C",
    "location": "s3://bucket/test/location",
    "last-updated-ms": 1602638573874,
    "last-column-id": 2,
    "schema": {"type": "struct", "fields": SCHEMA_0["fields"]},
    "partition-spec": [{"name": "ts_day", "transform": "day", "source-id": 2}],
    "properties": {"owner": "root"},
    "current-snapshot-id": -1,
    "snapshots": [],
}

V1_WITH_SNAPSHOTS: dict[str, Any] = {
    "format-version": 1,
    "table-uuid": "d20125c8-7284-442c-9aea-15fee620737c",
    "location": "/tables/t",
    "last-updated-ms": 1602638573874,
    "last-column-id": 2,
    "schema": SCHEMA_0,
    "current-schema-id": 0,
    "schemas": [SCHEMA_0],
    "partition-spec": [],
    "default-spec-id": 0,
    "partition-specs": [{"spec-id": 0, "fields": []}],
    "properties": {},
    "current-snapshot-id": 2,
    "snapshots": [
        {"snapshot-id": 1, "timestamp-ms": 1602638570000,
         "summary": {"operation": "append", "added-data-files": "1"},
         "manifests": ["/tables/t/metadata/m1.avro"]},
        {"snapshot-id": 2, "parent-snapshot-id": 1, "timestamp-ms": 1602638573000,
         "summary": {"operation": "overwrite"},
         "manifest-list": "/tables/t/metadata/snap-2.avro", "schema-id": 0},
    ],
    "snapshot-log": [
        {"timestamp-ms": 1602638570000, "snapshot-id": 1},
        {"timestamp-ms": 1602638573000, "snapshot-id": 2},
    ],
    "metadata-log": [],
}

V2: dict[str, Any] = {
    "format-version": 2,
    "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
    "location": "s3://bucket/test/location",
    "last-sequence-number": 34,
    "last-updated-ms": 1602638573590,
    "last-column-id": 3,
    "current-schema-id": 1,
    "schemas": [SCHEMA_0, SCHEMA_1],
    "default-spec-id": 1,
    "partition-specs": [
        {"spec-id": 0, "fields": [
            {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}]},
        {"spec-id": 1, "fields": [
            {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000},
            {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001}]},
    ],
    "last-partition-id": 1001,
    "default-sort-order-id": 3,
    "sort-orders": [
        {"order-id": 0, "fields": []},
        {"order-id": 3, "fields": [
            {"transform": "identity", "source-id": 2, "direction": "asc",
             "null-order": "nulls-first"},
            {"transform": "bucket[4]", "source-id": 3, "direction": "desc",
             "null-order": "nulls-last"}]},
    ],
    "properties": {"read.split.target-size": "134217728", "commit.retry.num-retries": "5"},
    "current-snapshot-id": 3055729675574597004,
    "refs": {
        "main": {"snapshot-id": 3055729675574597004, "type": "branch"},
        "audit": {"snapshot-id": 3051729675574597004, "type": "branch",
                  "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 86400000,
                  "max-ref-age-ms": 604800000},
        "v1.0": {"snapshot-id": 3051729675574597004, "type": "tag",
                 "max-ref-age-ms": 31536000000},
    },
    "snapshots": [
        {"sequence-number": 0, "snapshot-id": 3051729675574597004,
         "timestamp-ms": 1515100955770, "summary": {"operation": "append"},
         "manifest-list": "s3://a/b/1.avro"},
        {"sequence-number": 1, "snapshot-id": 3055729675574597004,
         "parent-snapshot-id": 3051729675574597004, "timestamp-ms": 1555100955770,
         "summary": {"operation": "append", "added-files-size": "1024",
                     "total-records": "100"},
         "manifest-list": "s3://a/b/2.avro", "schema-id": 1},
    ],
    "statistics": [
        {"snapshot-id": 3055729675574597004,
         "statistics-path": "s3://a/b/stats.puffin",
         "file-size-in-bytes": 413, "file-footer-size-in-bytes": 42,
         "blob-metadata": [
             {"type": "apache-datasketches-theta-v1", "snapshot-id": 3055729675574597004,
              "sequence-number": 1, "fields": [1], "properties": {"ndv": "100"}}]},
    ],
    "partition-statistics": [
        {"snapshot-id": 3055729675574597004,
         "statistics-path": "s3://a/b/partition-stats.parquet", "file-size-in-bytes": 43},
    ],
    "snapshot-log": [
        {"timestamp-ms": 1515100955770, "snapshot-id": 3051729675574597004},
        {"timestamp-ms": 1555100955770, "snapshot-id": 3055729675574597004},
    ],
    "metadata-log": [
        {"timestamp-ms": 1515100955770, "metadata-file": "s3://bucket/.../v1.json"},
        {"timestamp-ms": 1555100955770, "metadata-file": "s3://bucket/.../v2.json"},
    ],
}

V3: dict[str, Any] = {
    "format-version": 3,
    "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c2",
    "location": "/tables/v3",
    "last-sequence-number": 1,
    "last-updated-ms": 1602638573590,
    "last-column-id": 4,
    "current-schema-id": 0,
    "schemas": [{
        "type": "struct", "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "ts", "required": False, "type": "timestamp_ns"},
            {"id": 3, "name": "v", "required": False, "type": "variant"},
            {"id": 4, "name": "u", "required": False, "type": "unknown"},
        ],
    }],
    "default-spec-id": 0,
    "partition-specs": [{"spec-id": 0, "fields": []}],
    "last-partition-id": 999,
    "default-sort-order-id": 0,
    "sort-orders": [{"order-id": 0, "fields": []}],
    "properties": {},
    "current-snapshot-id": 7,
    "next-row-id": 100,
    "encryption-keys": [{"key-id": "k1", "encrypted-key-metadata": "AAAA"}],
    "refs": {"main": {"snapshot-id": 7, "type": "branch"}},
    "snapshots": [
        {"sequence-number": 1, "snapshot-id": 7, "timestamp-ms": 1602638573590,
         "summary": {"operation": "append"}, "manifest-list": "/tables/v3/snap-7.avro",
         "schema-id": 0, "first-row-id": 0, "added-rows": 100},
    ],
    "statistics": [],
    "partition-statistics": [],
    "snapshot-log": [{"timestamp-ms": 1602638573590, "snapshot-id": 7}],
    "metadata-log": [],
    "x-vendor-extension": {"keep": ["me"]},
}


def parse(doc: Any, location: str = LOC) -> TableMetadata:
    return parse_metadata(json.dumps(doc).encode(), location)


def round_trip(md: TableMetadata) -> TableMetadata:
    return parse_metadata(serialize_metadata(md), LOC)


# -- reading ------------------------------------------------------------------------------


def test_v2_fields_and_accessors() -> None:
    md = parse(V2)
    assert md.format_version == 2
    assert md.table_uuid == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    assert md.last_sequence_number == 34
    assert md.schema().schema_id == 1
    assert md.schema().identifier_field_ids == (1,)
    assert md.schema_by_id(0) is not None and md.schema_by_id(9) is None
    assert md.spec().spec_id == 1 and len(md.spec().fields) == 2
    assert md.spec_by_id(0) is not None and md.spec_by_id(7) is None
    assert md.last_partition_id == 1001
    assert md.sort_order().order_id == 3
    assert md.sort_order().fields[1].direction is SortDirection.DESC
    assert md.sort_order_by_id(0) == UNSORTED_SORT_ORDER
    assert md.properties["commit.retry.num-retries"] == "5"
    current = md.current_snapshot()
    assert current is not None and current.snapshot_id == 3055729675574597004
    assert current.sequence_number == 1 and current.schema_id == 1
    assert current.operation is Operation.APPEND
    assert current.summary["total-records"] == "100"
    assert md.refs["v1.0"] == SnapshotRef(
        3051729675574597004, SnapshotRefType.TAG, max_ref_age_ms=31536000000
    )
    assert md.refs["audit"].min_snapshots_to_keep == 2
    assert md.snapshot_by_ref("v1.0").snapshot_id == 3051729675574597004  # type: ignore[union-attr]
    assert md.snapshot_by_ref("main") == current
    assert md.snapshot_by_ref("nope") is None
    assert md.statistics[0].blob_metadata[0].properties == {"ndv": "100"}
    assert md.partition_statistics[0].file_size_in_bytes == 43
    assert md.metadata_log[1] == MetadataLogEntry(1555100955770, "s3://bucket/.../v2.json")


def test_snapshot_as_of_uses_the_snapshot_log() -> None:
    md = parse(V2)
    assert md.snapshot_as_of(1515100955769) is None
    assert md.snapshot_as_of(1515100955770).snapshot_id == 3051729675574597004  # type: ignore[union-attr]
    assert md.snapshot_as_of(1555100955769).snapshot_id == 3051729675574597004  # type: ignore[union-attr]
    assert md.snapshot_as_of(1555100955770).snapshot_id == 3055729675574597004  # type: ignore[union-attr]


def test_snapshot_by_id_is_an_index_of_this_metadatas_snapshots() -> None:
    md = parse(V2)
    first, second = md.snapshots
    assert md.snapshot_by_id(second.snapshot_id) is second and md.snapshot_by_id(42) is None
    # a changed metadata is a new object with its own index
    only = dataclasses.replace(md, snapshots=(second,))
    assert only.snapshot_by_id(first.snapshot_id) is None
    assert md.snapshot_by_id(first.snapshot_id) is first
    # a duplicated id (invalid metadata) finds the first, as a scan of the list does
    twin = dataclasses.replace(first, summary={**first.summary, "twin": "yes"})
    dup = dataclasses.replace(md, snapshots=(first, twin))
    assert dup.snapshot_by_id(first.snapshot_id) is first
    assert dup == dataclasses.replace(md, snapshots=(first, twin))  # the index is not a field


def test_ancestors_of_walks_parents_newest_first() -> None:
    md = parse(V2)
    ids = [s.snapshot_id for s in md.ancestors_of(3055729675574597004)]
    assert ids == [3055729675574597004, 3051729675574597004]
    assert list(md.ancestors_of(42)) == []


def test_v1_legacy_document_without_schemas_or_specs() -> None:
    md = parse(V1_LEGACY)
    assert md.format_version == 1
    assert md.table_uuid == "d20125c8-7284-442c-9aea-15fee620737c"
    assert md.last_sequence_number == 0
    assert [s.schema_id for s in md.schemas] == [0] and md.current_schema_id == 0
    assert md.default_spec_id == 0
    assert md.spec().fields == (PartitionField(2, 1000, parse_transform("day"), "ts_day"),)
    assert md.last_partition_id == 1000
    assert md.sort_orders == (UNSORTED_SORT_ORDER,) and md.default_sort_order_id == 0
    assert md.current_snapshot_id is None and md.current_snapshot() is None
    assert md.refs == {}


def test_v1_inline_manifests_and_implied_main_branch() -> None:
    md = parse(V1_WITH_SNAPSHOTS)
    first = md.snapshot_by_id(1)
    assert first is not None
    assert first.manifests == ("/tables/t/metadata/m1.avro",) and first.manifest_list is None
    assert first.sequence_number == 0 and first.parent_snapshot_id is None
    assert md.refs == {"main": SnapshotRef(2, SnapshotRefType.BRANCH)}
    assert md.snapshot_log == (SnapshotLogEntry(1602638570000, 1),
                               SnapshotLogEntry(1602638573000, 2))


def test_v3_is_read_tolerantly() -> None:
    md = parse(V3)
    assert md.format_version == 3
    assert md.next_row_id == 100
    assert md.encryption_keys == ({"key-id": "k1", "encrypted-key-metadata": "AAAA"},)
    snap = md.current_snapshot()
    assert snap is not None and (snap.first_row_id, snap.added_rows) == (0, 100)
    assert md.extra == {"x-vendor-extension": {"keep": ["me"]}}
    assert str(md.schema().find_type("v")) == "variant"


def test_v3_null_current_snapshot_means_none() -> None:
    doc = copy.deepcopy(V3)
    doc["current-snapshot-id"] = None
    doc["refs"] = {}
    assert parse(doc).current_snapshot_id is None


def test_summary_without_operation_reads_as_overwrite_like_java() -> None:
    doc = copy.deepcopy(V2)
    doc["snapshots"][0]["summary"] = {"added-data-files": "1"}
    snap = parse(doc).snapshot_by_id(3051729675574597004)
    assert snap is not None and snap.operation is Operation.OVERWRITE


# -- round trips and Java's layout ---------------------------------------------------------


@pytest.mark.parametrize("doc", [V1_LEGACY, V1_WITH_SNAPSHOTS, V2, V3], ids=["v1-legacy", "v1", "v2", "v3"])
def test_read_write_read_gives_an_equal_object(doc: dict[str, Any]) -> None:
    md = parse(doc)
    again = round_trip(md)
    assert again == md
    assert metadata_to_json(again) == metadata_to_json(md)


def test_v2_written_key_order_is_javas() -> None:
    keys = list(metadata_to_json(parse(V2)))
    assert keys == [
        "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms",
        "last-column-id", "current-schema-id", "schemas", "default-spec-id", "partition-specs",
        "last-partition-id", "default-sort-order-id", "sort-orders", "properties",
        "current-snapshot-id", "refs", "snapshots", "statistics", "partition-statistics",
        "snapshot-log", "metadata-log",
    ]


def test_v1_writes_legacy_schema_and_partition_spec_and_minus_one() -> None:
    out = metadata_to_json(parse(V1_LEGACY))
    assert list(out)[:10] == [
        "format-version", "table-uuid", "location", "last-updated-ms", "last-column-id",
        "schema", "current-schema-id", "schemas", "partition-spec", "default-spec-id",
    ]
    assert "last-sequence-number" not in out
    assert out["partition-spec"] == [
        {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}
    ]
    assert out["schema"] == out["schemas"][0]
    assert out["current-snapshot-id"] == -1
    assert out["sort-orders"] == [{"order-id": 0, "fields": []}]


def test_v3_writes_next_row_id_null_snapshot_and_extra_keys() -> None:
    doc = copy.deepcopy(V3)
    doc["current-snapshot-id"] = None
    doc["refs"] = {}
    out = metadata_to_json(parse(doc))
    keys = list(out)
    assert keys.index("next-row-id") == keys.index("current-snapshot-id") + 1
    assert out["current-snapshot-id"] is None
    assert out["next-row-id"] == 100
    assert out["x-vendor-extension"] == {"keep": ["me"]}


def test_v2_without_snapshot_writes_minus_one() -> None:
    md = dataclasses.replace(parse(V2), current_snapshot_id=None, refs={}, snapshots=(),
                             snapshot_log=(), statistics=(), partition_statistics=())
    assert metadata_to_json(md)["current-snapshot-id"] == -1
    assert round_trip(md) == md


def test_snapshot_json_layout() -> None:
    out = metadata_to_json(parse(V2))["snapshots"]
    assert "sequence-number" not in out[0]  # Java omits the initial sequence number 0
    assert list(out[1]) == ["sequence-number", "snapshot-id", "parent-snapshot-id",
                            "timestamp-ms", "summary", "manifest-list", "schema-id"]
    assert next(iter(out[1]["summary"])) == "operation"
    v1 = metadata_to_json(parse(V1_WITH_SNAPSHOTS))["snapshots"][0]
    assert v1["manifests"] == ["/tables/t/metadata/m1.avro"] and "manifest-list" not in v1


def test_gzip_is_detected_by_magic_bytes() -> None:
    data = gzip.compress(json.dumps(V2).encode())
    md = parse_metadata(data, "/t/metadata/v2.gz.metadata.json")
    assert md == parse(V2)
    assert parse_metadata(data, "/t/metadata/whatever.json") == md  # name does not matter


def test_serialize_compressed_round_trips() -> None:
    md = parse(V2)
    blob = serialize_metadata(md, compress=True)
    assert blob[:2] == b"\x1f\x8b"
    assert blob == serialize_metadata(md, compress=True)  # deterministic
    assert parse_metadata(blob, LOC) == md


def test_serialized_metadata_has_one_field_and_one_list_element_per_line() -> None:
    md = parse(V2)
    text = serialize_metadata(md).decode()
    assert json.loads(text) == metadata_to_json(md)
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert lines[1] == '  "format-version": 2,'
    snapshots = lines.index('  "snapshots": [')
    assert json.loads(lines[snapshots + 1].strip().rstrip(",")) == metadata_to_json(md)[
        "snapshots"][0]
    assert round_trip(md) == md
    bare = dataclasses.replace(md, statistics=())
    assert '  "statistics": [],' in serialize_metadata(bare).decode().splitlines()


def test_the_metadata_encoded_last_is_not_encoded_again() -> None:
    """A commit writes the metadata file and the REST catalog answers the same metadata: the
    text is encoded once (the same object), and other metadata is encoded afresh."""
    md = parse(V2)
    written = serialize_metadata(md)
    text = metadata_text(md)
    assert text.encode() == written and metadata_text(md) is text
    other = dataclasses.replace(md, properties={"k": "v"})
    assert metadata_text(other) is not text and json.loads(metadata_text(other))[
        "properties"] == {"k": "v"}
    assert metadata_text(md) == text  # encoded again: equal, a new object


# PyIceberg cannot read v1 inline "manifests", so the cross-check uses the other documents.
@pytest.mark.parametrize("doc", [V1_LEGACY, V2], ids=["v1", "v2"])
def test_pyiceberg_parses_what_floe_writes(doc: dict[str, Any]) -> None:
    table_metadata = pytest.importorskip("pyiceberg.table.metadata")
    ours = parse(doc)
    theirs = table_metadata.TableMetadataUtil.parse_raw(serialize_metadata(ours))
    assert theirs.format_version == ours.format_version
    assert theirs.current_snapshot_id == ours.current_snapshot_id
    assert str(theirs.table_uuid) == ours.table_uuid
    assert len(theirs.snapshots) == len(ours.snapshots)
    assert theirs.last_partition_id == ours.last_partition_id
    assert {name: ref.snapshot_id for name, ref in theirs.refs.items()} == {
        name: ref.snapshot_id for name, ref in ours.refs.items()
    }


# -- errors -------------------------------------------------------------------------------


def _without(doc: dict[str, Any], key: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    del out[key]
    return out


def _with(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out[key] = value
    return out


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (json.dumps(V2).encode()[:200], "malformed JSON at line 1"),
        (b"", "empty"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (b"\"v2\"", "must be a JSON object, got str"),
        (b"\xff\xfe", "not UTF-8"),
        (b"\x1f\x8b\x08\x00garbage", "gzip"),
        (json.dumps(_without(V2, "format-version")).encode(), "'format-version'"),
        (json.dumps(_with(V2, "format-version", "2")).encode(), "must be an integer"),
        (json.dumps(_without(V2, "location")).encode(), "'location'"),
        (json.dumps(_without(V2, "table-uuid")).encode(), "'table-uuid'"),
        (json.dumps(_without(V2, "last-sequence-number")).encode(), "'last-sequence-number'"),
        (json.dumps(_without(V2, "last-column-id")).encode(), "'last-column-id'"),
        (json.dumps(_without(V2, "schemas")).encode(), "'schemas'"),
        (json.dumps(_without(V2, "partition-specs")).encode(), "'partition-specs'"),
        (json.dumps(_without(V2, "sort-orders")).encode(), "'sort-orders'"),
        (json.dumps(_without(V2, "last-partition-id")).encode(), "'last-partition-id'"),
        (json.dumps(_without(V3, "next-row-id")).encode(), "'next-row-id'"),
        (json.dumps(_with(V2, "current-schema-id", 7)).encode(), "current-schema-id 7"),
        (json.dumps(_with(V2, "default-spec-id", 7)).encode(), "default-spec-id 7"),
        (json.dumps(_with(V2, "current-snapshot-id", 7)).encode(), "current-snapshot-id 7"),
        (json.dumps(_with(V2, "snapshots", {})).encode(), "'snapshots' must be an array"),
        (json.dumps(_with(V2, "refs", {"b": {"snapshot-id": 5, "type": "branch"}})).encode(),
         "unknown snapshot 5"),
        (json.dumps(_with(V2, "refs", {"b": {"snapshot-id": 5, "type": "twig"}})).encode(),
         "invalid ref type"),
        (json.dumps(_with(V2, "schemas", [{"type": "struct"}])).encode(), "fields"),
    ],
)
def test_broken_metadata_raises_metadata_error_naming_the_file(data: bytes, message: str) -> None:
    with pytest.raises(MetadataError) as err:
        parse_metadata(data, LOC)
    assert str(err.value).startswith(LOC + ": ")
    assert message in str(err.value)


def test_format_version_4_is_unsupported() -> None:
    with pytest.raises(UnsupportedFormatVersion) as err:
        parse(_with(V3, "format-version", 4))
    assert str(err.value) == f"{LOC}: format version 4 is not supported (floe reads 1-3)"
    assert isinstance(err.value, MetadataError)


# -- new tables ---------------------------------------------------------------------------


NESTED = Schema(
    NestedField(10, "id", LONG, required=True),
    NestedField(20, "point", StructType(NestedField(21, "x", INT), NestedField(22, "y", INT))),
    NestedField(30, "tags", ListType(31, STRING)),
    NestedField(40, "props", MapType(41, STRING, 42, StructType(NestedField(43, "v", LONG)))),
    NestedField(50, "ts", TIMESTAMPTZ),
    identifier_field_ids=[10],
    schema_id=5,
)


def test_assign_fresh_ids_numbers_each_struct_before_its_children() -> None:
    fresh = assign_fresh_ids(NESTED)
    assert fresh.schema_id == 0
    assert [f.field_id for f in fresh.fields] == [1, 2, 3, 4, 5]
    point = fresh.find_field("point").field_type
    assert isinstance(point, StructType) and [f.field_id for f in point.fields] == [6, 7]
    tags = fresh.find_field("tags").field_type
    assert isinstance(tags, ListType) and tags.element_id == 8
    props = fresh.find_field("props").field_type
    assert isinstance(props, MapType) and (props.key_id, props.value_id) == (9, 10)
    assert fresh.find_field_id("props.value.v") == 11
    assert fresh.identifier_field_ids == (1,)


def test_new_table_metadata_assigns_fresh_ids_like_java() -> None:
    spec = PartitionSpec(
        PartitionField(50, 1007, parse_transform("day"), "ts_day"),
        PartitionField(10, 1003, parse_transform("bucket[8]"), "id_bucket"),
        spec_id=4,
    )
    order = SortOrder(SortField(10, parse_transform("identity"), SortDirection.DESC,
                                NullOrder.NULLS_LAST), order_id=9)
    md = new_table_metadata(NESTED, spec, order, "/warehouse/t/", {"owner": "me",
                                                                   "format-version": "1"})
    assert md.format_version == 1
    assert md.location == "/warehouse/t"
    assert md.last_column_id == 11
    assert md.schema().find_field_id("ts") == 5
    assert md.spec().fields == (
        PartitionField(5, 1000, parse_transform("day"), "ts_day"),
        PartitionField(1, 1001, parse_transform("bucket[8]"), "id_bucket"),
    )
    assert md.spec().spec_id == 0 and md.last_partition_id == 1001
    assert md.sort_order().order_id == 1 and md.sort_order().fields[0].source_id == 1
    assert md.properties == {"write.parquet.compression-codec": "zstd", "owner": "me"}
    assert md.current_snapshot_id is None and md.snapshots == () and md.refs == {}
    assert md.last_sequence_number == 0 and md.next_row_id is None
    assert len(md.table_uuid or "") == 36
    assert round_trip(md) == md


def test_new_table_metadata_defaults() -> None:
    md = new_table_metadata(NESTED, UNPARTITIONED, UNSORTED_SORT_ORDER, "/w/t")
    assert md.format_version == 2
    assert md.last_partition_id == 999 and md.spec().is_unpartitioned
    assert md.default_sort_order_id == 0
    v3 = new_table_metadata(NESTED, UNPARTITIONED, UNSORTED_SORT_ORDER, "/w/t",
                            format_version=3)
    assert v3.next_row_id == 0
    assert metadata_to_json(v3)["current-snapshot-id"] is None
    assert round_trip(v3) == v3
    with pytest.raises(ValidationError):
        new_table_metadata(NESTED, UNPARTITIONED, UNSORTED_SORT_ORDER, "/w/t", format_version=4)


def test_snapshot_defaults_and_json() -> None:
    snap = Snapshot(5, summary={"operation": "delete"}, manifest_list="/m.avro", timestamp_ms=1)
    assert snap.operation is Operation.DELETE
    assert Snapshot.from_json(snap.to_json()) == snap
