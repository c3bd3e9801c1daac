"""floe.schema: lookups by id and dotted name, JSON round trips, validation."""

import pytest

from floe.errors import ValidationError
from floe.schema import Schema
from floe.types import DOUBLE, INT, LONG, STRING, ListType, MapType, NestedField, StructType

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "Name", STRING),
    NestedField(3, "location", StructType(NestedField(4, "lat", DOUBLE), NestedField(5, "lon", DOUBLE))),
    NestedField(6, "points", ListType(7, StructType(NestedField(8, "x", INT), NestedField(9, "y", INT)))),
    NestedField(10, "props", MapType(11, STRING, 12, STRING)),
    schema_id=4,
    identifier_field_ids=[1],
)


@pytest.mark.parametrize(
    "name, field_id",
    [("id", 1), ("Name", 2), ("location.lat", 4), ("points.element.x", 8), ("points.x", 8),
     ("points.element", 7), ("props.key", 11), ("props.value", 12), ("props", 10)],
)
def test_find_by_name(name, field_id):
    assert SCHEMA.find_field_id(name) == field_id
    assert SCHEMA.find_field(name).field_id == field_id


def test_case_insensitive_lookup():
    assert SCHEMA.find_field("name", case_sensitive=False).field_id == 2
    assert SCHEMA.find_field("LOCATION.LAT", case_sensitive=False).field_id == 4
    with pytest.raises(ValidationError):
        SCHEMA.find_field("name")


def test_find_by_id_and_names():
    assert SCHEMA.find_field(9).name == "y"
    assert SCHEMA.find_column_name(9) == "points.element.y"
    assert SCHEMA.parent_id(9) == 7 and SCHEMA.parent_id(1) is None
    assert SCHEMA.highest_field_id == 12
    with pytest.raises(ValidationError, match="no field with id 99"):
        SCHEMA.find_field(99)


def test_leaf_fields_and_select():
    assert [f.field_id for f in SCHEMA.leaf_fields()] == [1, 2, 4, 5, 8, 9, 11, 12]
    projected = SCHEMA.select("location.lon", "id")
    assert [f.name for f in projected.fields] == ["id", "location"]
    assert projected.find_field("location").field_type == StructType(NestedField(5, "lon", DOUBLE))


def test_json_round_trip():
    j = SCHEMA.to_json()
    assert j["schema-id"] == 4 and j["identifier-field-ids"] == [1] and j["type"] == "struct"
    assert Schema.from_json(j) == SCHEMA


@pytest.mark.parametrize(
    "fields, message",
    [
        ([{"id": 1, "name": "a", "required": True, "type": "int"},
          {"id": 1, "name": "b", "required": True, "type": "int"}], "used twice"),
        ([{"id": 2147483600, "name": "a", "required": True, "type": "int"}], "reserved"),
        ([{"id": 1, "name": "a", "type": "int"}], "missing 'required'"),
    ],
)
def test_invalid_schemas(fields, message):
    with pytest.raises(ValidationError, match=message):
        Schema.from_json({"type": "struct", "schema-id": 0, "fields": fields})


def test_identifier_fields_must_exist_and_be_primitive():
    base = [{"id": 1, "name": "a", "required": True, "type": {"type": "list", "element-id": 2,
                                                              "element": "int", "element-required": True}}]
    with pytest.raises(ValidationError, match="primitive"):
        Schema.from_json({"type": "struct", "fields": base, "identifier-field-ids": [1]})
    with pytest.raises(ValidationError, match="not in the schema"):
        Schema.from_json({"type": "struct", "fields": base, "identifier-field-ids": [9]})
