"""floe.types: type strings, JSON (Appendix C) and the promotion rules."""

import pytest

from floe.errors import ValidationError
from floe.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS,
    TIMESTAMPTZ, TIMESTAMPTZ_NS, UNKNOWN, UUID, VARIANT, DecimalType, FixedType,
    GeographyType, GeometryType, ListType, MapType, NestedField, StructType, can_promote,
    parse_primitive, type_from_json, type_to_json,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("boolean", BOOLEAN), ("int", INT), ("long", LONG), ("float", FLOAT),
        ("double", DOUBLE), ("date", DATE), ("time", TIME), ("timestamp", TIMESTAMP),
        ("timestamptz", TIMESTAMPTZ), ("timestamp_ns", TIMESTAMP_NS),
        ("timestamptz_ns", TIMESTAMPTZ_NS), ("string", STRING), ("uuid", UUID),
        ("binary", BINARY), ("unknown", UNKNOWN), ("variant", VARIANT),
        ("decimal(9,2)", DecimalType(9, 2)), ("decimal(38, 0)", DecimalType(38, 0)),
        ("fixed[16]", FixedType(16)), ("geometry", GeometryType()),
        ("geometry(srid:3857)", GeometryType("srid:3857")), ("geography", GeographyType()),
        ("geography(srid:4269, karney)", GeographyType("srid:4269", "karney")),
    ],
)
def test_parse_primitive(text, expected):
    assert parse_primitive(text) == expected
    assert parse_primitive(type_to_json(expected)) == expected


@pytest.mark.parametrize("text", ["integer", "decimal(0,1)", "decimal(39,2)", "fixed", "", "list"])
def test_parse_primitive_rejects(text):
    with pytest.raises(ValidationError):
        parse_primitive(text)


def test_decimal_json_is_spelled_like_java():
    assert type_to_json(DecimalType(10, 3)) == "decimal(10, 3)"


def test_nested_json_round_trip():
    t = StructType(
        NestedField(1, "id", LONG, required=True, doc="the key"),
        NestedField(2, "tags", ListType(3, STRING, element_required=False)),
        NestedField(4, "props", MapType(5, INT, 6, StructType(NestedField(7, "x", DOUBLE)), False)),
    )
    j = type_to_json(t)
    assert j["fields"][0] == {"id": 1, "name": "id", "required": True, "type": "long", "doc": "the key"}
    assert j["fields"][1]["type"] == {
        "type": "list", "element-id": 3, "element": "string", "element-required": False,
    }
    assert type_from_json(j) == t
    assert hash(type_from_json(j)) == hash(t)


def test_types_are_immutable_values():
    assert LONG == parse_primitive("long") and LONG != INT
    with pytest.raises(AttributeError):
        DecimalType(9, 2).scale = 3  # type: ignore[misc]
    assert {DecimalType(9, 2), DecimalType(9, 2)} == {DecimalType(9, 2)}


@pytest.mark.parametrize("bad", [{"type": "list"}, {"type": "tuple"}, 3, {"type": "struct"}])
def test_bad_type_json(bad):
    with pytest.raises(ValidationError):
        type_from_json(bad)


@pytest.mark.parametrize(
    "old, new, version, allowed",
    [
        (INT, LONG, 2, True), (FLOAT, DOUBLE, 2, True), (LONG, INT, 2, False),
        (DOUBLE, FLOAT, 2, False), (INT, DOUBLE, 2, False), (INT, STRING, 2, False),
        (DecimalType(9, 2), DecimalType(18, 2), 2, True),
        (DecimalType(9, 2), DecimalType(18, 3), 2, False),
        (DecimalType(18, 2), DecimalType(9, 2), 2, False),
        (DATE, TIMESTAMP, 2, False), (DATE, TIMESTAMP, 3, True), (DATE, TIMESTAMP_NS, 3, True),
        (DATE, TIMESTAMPTZ, 3, False), (UNKNOWN, LONG, 3, True), (STRING, STRING, 1, True),
    ],
)
def test_promotion_rules(old, new, version, allowed):
    assert can_promote(old, new, version) is allowed
