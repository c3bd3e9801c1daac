"""Partition specs: JSON, partition types, Java-exact partition paths, PARTITIONED BY parsing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from floe.errors import ValidationError
from floe.partitioning import (
    PARTITION_FIELD_ID_START,
    UNPARTITIONED,
    PartitionField,
    PartitionSpec,
    java_url_encode,
    parse_partition_by,
)
from floe.schema import Schema
from floe.transforms import parse_transform
from floe.types import (
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    BooleanType,
    DecimalType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "ts", TIMESTAMP),
    NestedField(3, "s", STRING),
    NestedField(4, "x", INT),
    NestedField(5, "d", DATE),
    NestedField(6, "tstz", TIMESTAMPTZ),
    NestedField(7, "amount", DecimalType(9, 2)),
    NestedField(8, "flag", BooleanType()),
    NestedField(9, "score", DOUBLE),
    NestedField(10, "my col", STRING),
    NestedField(11, "loc", StructType(NestedField(12, "city", STRING))),
    schema_id=0,
)


def field(source_id: int, field_id: int, transform: str, name: str) -> PartitionField:
    return PartitionField(source_id, field_id, parse_transform(transform), name)


# -- java.net.URLEncoder ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("abcXYZ019", "abcXYZ019"),
        (".-*_", ".-*_"),
        ("a b", "a+b"),
        ("a/b", "a%2Fb"),
        ("~", "%7E"),  # urllib's quote_plus would keep this one
        ("a=b&c", "a%3Db%26c"),
        ("+", "%2B"),
        ("%", "%25"),
        ("é", "%C3%A9"),
        ("日本", "%E6%97%A5%E6%9C%AC"),
        ("null", "null"),
        ("", ""),
    ],
)
def test_java_url_encode(text: str, encoded: str) -> None:
    assert java_url_encode(text) == encoded


# -- partition_to_path --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pfield", "value", "expected"),
    [
        (field(1, 1000, "identity", "id"), 42, "id=42"),
        (field(1, 1000, "identity", "id"), -7, "id=-7"),
        (field(3, 1000, "identity", "s"), "a b/c~d", "s=a+b%2Fc%7Ed"),
        (field(3, 1000, "identity", "s"), "é", "s=%C3%A9"),
        (field(5, 1000, "identity", "d"), 19723, "d=2024-01-01"),
        (field(8, 1000, "identity", "flag"), True, "flag=true"),
        (field(7, 1000, "identity", "amount"), Decimal("12.50"), "amount=12.50"),
        (field(9, 1000, "identity", "score"), 1.0, "score=1.0"),
        (
            field(2, 1000, "identity", "ts"),
            1704103200_000000,
            "ts=2024-01-01T10%3A00%3A00",
        ),
        (
            field(6, 1000, "identity", "tstz"),
            1704103200_000000,
            "tstz=2024-01-01T10%3A00%3A00%2B00%3A00",
        ),
        (field(1, 1000, "bucket[16]", "id_bucket"), 3, "id_bucket=3"),
        (field(3, 1000, "truncate[4]", "s_trunc"), "abcd", "s_trunc=abcd"),
        (field(1, 1000, "truncate[10]", "id_trunc"), -10, "id_trunc=-10"),
        (field(2, 1000, "year", "ts_year"), 54, "ts_year=2024"),
        (field(2, 1000, "month", "ts_month"), 648, "ts_month=2024-01"),
        (field(2, 1000, "day", "ts_day"), 19723, "ts_day=2024-01-01"),
        (field(5, 1000, "day", "d_day"), 19723, "d_day=2024-01-01"),
        (field(2, 1000, "hour", "ts_hour"), 19723 * 24 + 13, "ts_hour=2024-01-01-13"),
        (field(6, 1000, "day", "tstz_day"), -1, "tstz_day=1969-12-31"),
        (field(4, 1000, "void", "x_null"), None, "x_null=null"),
        (field(2, 1000, "day", "ts_day"), None, "ts_day=null"),
        (field(3, 1000, "identity", "s"), None, "s=null"),
        (field(10, 1000, "identity", "my col"), "v", "my+col=v"),
        (field(12, 1000, "identity", "loc.city"), "Paris", "loc.city=Paris"),
    ],
    ids=lambda v: str(v) if not isinstance(v, PartitionField) else f"{v.transform}-{v.name}",
)
def test_partition_to_path_matches_java(pfield: PartitionField, value: object, expected: str) -> None:
    spec = PartitionSpec(pfield)
    assert spec.partition_to_path((value,), SCHEMA) == expected


def test_partition_to_path_joins_fields_in_spec_order() -> None:
    spec = PartitionSpec(
        field(2, 1000, "day", "ts_day"),
        field(1, 1001, "bucket[16]", "id_bucket"),
    )
    assert spec.partition_to_path((19723, 3), SCHEMA) == "ts_day=2024-01-01/id_bucket=3"


def test_partition_to_path_of_unpartitioned_is_empty() -> None:
    assert UNPARTITIONED.partition_to_path((), SCHEMA) == ""


def test_partition_to_path_rejects_wrong_arity() -> None:
    spec = PartitionSpec(field(2, 1000, "day", "ts_day"))
    with pytest.raises(ValidationError, match="1 fields"):
        spec.partition_to_path((1, 2), SCHEMA)


# -- partition type -----------------------------------------------------------------------


def test_partition_type_uses_partition_ids_names_and_result_types() -> None:
    spec = PartitionSpec(
        field(2, 1000, "day", "ts_day"),
        field(1, 1001, "bucket[16]", "id_bucket"),
        field(3, 1002, "truncate[4]", "s_trunc"),
        field(4, 1003, "identity", "x"),
        field(2, 1004, "year", "ts_year"),
        field(2, 1005, "hour", "ts_hour"),
    )
    ptype = spec.partition_type(SCHEMA)
    assert [(f.field_id, f.name, f.field_type, f.required) for f in ptype.fields] == [
        (1000, "ts_day", DATE, False),
        (1001, "id_bucket", INT, False),
        (1002, "s_trunc", STRING, False),
        (1003, "x", INT, False),
        (1004, "ts_year", INT, False),
        (1005, "ts_hour", INT, False),
    ]


def test_partition_type_with_dropped_source_column() -> None:
    spec = PartitionSpec(field(99, 1000, "day", "gone_day"))
    with pytest.raises(ValidationError, match="99"):
        spec.partition_type(SCHEMA)
    void = PartitionSpec(field(99, 1000, "void", "gone_null"))
    assert void.partition_type(SCHEMA).fields[0].field_type == UNKNOWN


# -- JSON ---------------------------------------------------------------------------------


def test_spec_json_round_trip_and_java_key_order() -> None:
    spec = PartitionSpec(
        field(2, 1000, "day", "ts_day"),
        field(1, 1001, "bucket[16]", "id_bucket"),
        spec_id=3,
    )
    doc = spec.to_json()
    assert doc == {
        "spec-id": 3,
        "fields": [
            {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000},
            {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001},
        ],
    }
    assert list(doc["fields"][0]) == ["name", "transform", "source-id", "field-id"]
    assert PartitionSpec.from_json(doc) == spec


def test_v1_field_array_without_field_ids_counts_from_1000() -> None:
    spec = PartitionSpec.from_json(
        [
            {"name": "ts_day", "transform": "day", "source-id": 2},
            {"name": "id_bucket", "transform": "bucket[8]", "source-id": 1},
        ]
    )
    assert spec.spec_id == 0
    assert [f.field_id for f in spec.fields] == [1000, 1001]
    assert spec.last_assigned_field_id == 1001


def test_v3_source_ids_are_tolerated() -> None:
    spec = PartitionSpec.from_json(
        {"spec-id": 0, "fields": [
            {"name": "id_bucket", "transform": "bucket[4]", "source-ids": [1], "field-id": 1000}
        ]}
    )
    assert spec.fields[0].source_id == 1


@pytest.mark.parametrize(
    "doc",
    [
        "nope",
        {"fields": []},
        {"spec-id": 0},
        {"spec-id": 0, "fields": [{"transform": "day", "source-id": 2, "field-id": 1000}]},
        {"spec-id": 0, "fields": [{"name": "a", "source-id": 2, "field-id": 1000}]},
        {"spec-id": 0, "fields": [{"name": "a", "transform": "day", "field-id": 1000}]},
        {"spec-id": "0", "fields": []},
    ],
)
def test_malformed_spec_json_raises_validation_error(doc: object) -> None:
    with pytest.raises(ValidationError):
        PartitionSpec.from_json(doc)


def test_unpartitioned_spec() -> None:
    assert UNPARTITIONED.is_unpartitioned
    assert UNPARTITIONED.spec_id == 0
    assert UNPARTITIONED.last_assigned_field_id == PARTITION_FIELD_ID_START - 1 == 999
    assert UNPARTITIONED.to_json() == {"spec-id": 0, "fields": []}
    assert PartitionSpec(field(4, 1000, "void", "x_null")).is_unpartitioned
    assert not PartitionSpec(field(4, 1000, "identity", "x")).is_unpartitioned


def test_duplicate_names_and_ids_are_rejected() -> None:
    with pytest.raises(ValidationError, match="name"):
        PartitionSpec(field(1, 1000, "identity", "a"), field(2, 1001, "identity", "a"))
    with pytest.raises(ValidationError, match="id 1000"):
        PartitionSpec(field(1, 1000, "identity", "a"), field(2, 1000, "identity", "b"))


def test_compatible_with_ignores_spec_and_field_ids() -> None:
    a = PartitionSpec(field(2, 1000, "day", "ts_day"), spec_id=0)
    b = PartitionSpec(field(2, 1005, "day", "ts_day"), spec_id=4)
    assert a != b
    assert a.compatible_with(b)
    assert not a.compatible_with(PartitionSpec(field(2, 1000, "hour", "ts_day")))
    assert not a.compatible_with(PartitionSpec(field(2, 1000, "day", "d")))
    assert not a.compatible_with(UNPARTITIONED)


def test_specs_are_immutable_and_hashable() -> None:
    spec = PartitionSpec(field(2, 1000, "day", "ts_day"))
    with pytest.raises(AttributeError):
        spec.spec_id = 3  # type: ignore[misc]
    assert hash(spec) == hash(PartitionSpec(field(2, 1000, "day", "ts_day")))


# -- PARTITIONED BY -----------------------------------------------------------------------


def test_parse_partition_by_uses_java_builder_names() -> None:
    spec = parse_partition_by(
        "day(ts), bucket(16, id), truncate(4, s), identity(x), d, year(tstz), void(amount)",
        SCHEMA,
    )
    assert [(f.name, str(f.transform), f.source_id, f.field_id) for f in spec.fields] == [
        ("ts_day", "day", 2, 1000),
        ("id_bucket", "bucket[16]", 1, 1001),
        ("s_trunc", "truncate[4]", 3, 1002),
        ("x", "identity", 4, 1003),
        ("d", "identity", 5, 1004),
        ("tstz_year", "year", 6, 1005),
        ("amount_null", "void", 7, 1006),
    ]
    assert spec.last_assigned_field_id == 1006
    assert spec.spec_id == 0


@pytest.mark.parametrize(
    ("text", "name", "transform"),
    [
        ("month(ts)", "ts_month", "month"),
        ("hour(ts)", "ts_hour", "hour"),
        ("days(ts)", "ts_day", "day"),
        ("hours(ts)", "ts_hour", "hour"),
        ("months(ts)", "ts_month", "month"),
        ("years(ts)", "ts_year", "year"),
        ("bucket(id, 8)", "id_bucket", "bucket[8]"),
        ("bucket[8](id)", "id_bucket", "bucket[8]"),
        ("truncate(s, 3)", "s_trunc", "truncate[3]"),
        ("BUCKET(4, id)", "id_bucket", "bucket[4]"),
        ("`my col`", "my col", "identity"),
        ("loc.city", "loc.city", "identity"),
        ("day(ts) AS dt", "dt", "day"),
        ("bucket(16, id) as b", "b", "bucket[16]"),
    ],
)
def test_parse_partition_by_spellings(text: str, name: str, transform: str) -> None:
    (f,) = parse_partition_by(text, SCHEMA).fields
    assert (f.name, str(f.transform)) == (name, transform)


def test_parse_partition_by_continues_after_last_partition_id() -> None:
    spec = parse_partition_by("day(ts), x", SCHEMA, spec_id=2, last_partition_id=1004)
    assert spec.spec_id == 2
    assert [f.field_id for f in spec.fields] == [1005, 1006]


def test_parse_partition_by_empty_is_unpartitioned() -> None:
    spec = parse_partition_by("  ", SCHEMA)
    assert spec.is_unpartitioned and not spec.fields


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "nope"),
        ("day(s)", "cannot be applied"),
        ("frobnicate(ts)", "unknown partition transform"),
        ("bucket(id)", "expected"),
        ("day(ts), hour(ts)", "redundant"),
        ("x, x", "redundant"),
        ("bucket(4, id), bucket(8, id)", "used twice"),
        ("loc", "non-primitive"),
        ("day(ts", "unbalanced"),
        ("day(ts),", "empty"),
    ],
)
def test_parse_partition_by_errors(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_partition_by(text, SCHEMA)
