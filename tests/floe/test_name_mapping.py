"""Name mappings (spec "Column Projection"): Java's JSON both ways, ``MappingUtil.create`` and
``MappingUtil.update``, and Java's hash ordering that fixes the order of names."""

from __future__ import annotations

import json

import pytest

from floe.errors import ValidationError
from floe.name_mapping import (
    TABLE_ROOT_ID,
    MappedField,
    NameMapping,
    create_mapping,
    java_hash_set_order,
    java_string_hash,
    name_mapping_from_json,
    name_mapping_to_json,
    parse_name_mapping,
    update_mapping,
)
from floe.schema import Schema
from floe.types import INT, LONG, STRING, ListType, MapType, NestedField, StructType

# What Iceberg 1.10.2 (Spark ALTER TABLE) wrote for a mapping given as
# [{"field-id":1,"names":["id","ident","zz","aa"]},{"field-id":2,"names":["a"]}] after
# "RENAME COLUMN a TO b" and "ADD COLUMNS (c int, d struct<e:int, f:array<int>>)".
JAVA_JSON = (
    '[ {\n  "field-id" : 1,\n  "names" : [ "zz", "aa", "ident", "id" ]\n}, {\n'
    '  "field-id" : 2,\n  "names" : [ "a", "b" ]\n}, {\n  "field-id" : 16,\n'
    '  "names" : [ "c" ]\n}, {\n  "field-id" : 17,\n  "names" : [ "d" ],\n'
    '  "fields" : [ {\n    "field-id" : 18,\n    "names" : [ "e" ]\n  }, {\n'
    '    "field-id" : 19,\n    "names" : [ "f" ],\n    "fields" : [ {\n'
    '      "field-id" : 20,\n      "names" : [ "element" ]\n    } ]\n  } ]\n} ]'
)


def test_update_matches_java_byte_for_byte() -> None:
    given = parse_name_mapping(
        '[{"field-id":1,"names":["id","ident","zz","aa"]},{"field-id":2,"names":["a"]}]')
    renamed = update_mapping(given, {2: NestedField(2, "b", INT)}, {})
    d = StructType(NestedField(18, "e", INT), NestedField(19, "f", ListType(20, INT, False)))
    added = update_mapping(renamed, {16: NestedField(16, "c", INT),
                                     17: NestedField(17, "d", d)}, {TABLE_ROOT_ID: [16, 17]})
    assert name_mapping_to_json(added) == JAVA_JSON


def test_round_trip() -> None:
    mapping = parse_name_mapping(JAVA_JSON)
    assert name_mapping_to_json(mapping) == JAVA_JSON
    assert name_mapping_from_json(json.loads(json.dumps(mapping.to_json()))) == mapping
    assert mapping.fields[0].names == ("zz", "aa", "ident", "id")  # file order kept


def test_pretty_printing_edge_cases() -> None:
    assert name_mapping_to_json(NameMapping(())) == "[ ]"
    m = NameMapping((MappedField(None, ()), MappedField(3, ('q"é',), ())))
    assert name_mapping_to_json(m) == (
        '[ {\n  "names" : [ ]\n}, {\n  "field-id" : 3,\n  "names" : [ "q\\"é" ],\n'
        '  "fields" : [ ]\n} ]')


def test_parse_keeps_missing_ids_and_drops_duplicate_names() -> None:
    m = parse_name_mapping('[{"names": ["a", "b", "a"]}, {"field-id": 2}]')
    assert m.fields == (MappedField(None, ("a", "b")), MappedField(2, ()))


@pytest.mark.parametrize("text, message", [
    ("{", "is not JSON"),
    ('{"field-id": 1}', "not a list"),
    ("[1]", "not an object"),
    ('[{"field-id": "1", "names": ["a"]}]', "field-id must be an integer"),
    ('[{"field-id": 1, "names": "a"}]', "names must be a list of strings"),
    ('[{"field-id": 1, "names": ["a"], "fields": {}}]', "not a list"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_name_mapping(text)


SCHEMA = Schema(
    NestedField(1, "id", LONG),
    NestedField(2, "loc", StructType(NestedField(5, "lat", INT), NestedField(6, "lon", INT))),
    NestedField(3, "tags", ListType(7, STRING)),
    NestedField(4, "m", MapType(8, STRING, 9, StructType(NestedField(10, "v", INT)))),
)


def test_create_mapping() -> None:
    assert create_mapping(SCHEMA).to_json() == [
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["loc"], "fields": [
            {"field-id": 5, "names": ["lat"]}, {"field-id": 6, "names": ["lon"]}]},
        {"field-id": 3, "names": ["tags"], "fields": [{"field-id": 7, "names": ["element"]}]},
        {"field-id": 4, "names": ["m"], "fields": [
            {"field-id": 8, "names": ["key"]},
            {"field-id": 9, "names": ["value"], "fields": [{"field-id": 10, "names": ["v"]}]}]},
    ]


def test_find() -> None:
    m = create_mapping(SCHEMA)
    assert m.find("loc", "lat") == MappedField(5, ("lat",))
    assert m.find("m", "value", "v") == MappedField(10, ("v",))
    assert m.find("loc", "nope") is None
    assert m.find("id", "x") is None
    assert m.find_by_id(10) == MappedField(10, ("v",))
    assert m.find_by_id(99) is None


def test_update_renames_nested_and_adds_under_list_and_map() -> None:
    m = create_mapping(SCHEMA)
    updates = {
        5: NestedField(5, "latitude", INT),
        11: NestedField(11, "alt", INT),
        12: NestedField(12, "w", LONG),
    }
    out = update_mapping(m, updates, {2: [11], 9: [12]})
    loc = out.find("loc")
    assert loc is not None and loc.fields is not None
    assert set(loc.fields[0].names) == {"lat", "latitude"}
    assert out.find("loc", "latitude") == out.find("loc", "lat")
    assert out.find("loc", "alt") == MappedField(11, ("alt",))
    assert out.find("m", "value", "w") == MappedField(12, ("w",))


def test_add_under_an_unmapped_parent_adds_nothing() -> None:
    m = NameMapping((MappedField(1, ("id",)),))
    out = update_mapping(m, {9: NestedField(9, "z", INT)}, {2: [9]})
    assert out == m


def test_re_added_name_moves_to_the_new_field() -> None:
    # drop column a (id 2) and add a new column a (id 3): files with "a" are the old column
    # only through the old id, so Java takes the name from it
    m = NameMapping((MappedField(1, ("id",)), MappedField(2, ("a", "old_a"))))
    out = update_mapping(m, {3: NestedField(3, "a", STRING)}, {TABLE_ROOT_ID: [3]})
    assert out.fields == (MappedField(1, ("id",)), MappedField(2, ("old_a",)),
                          MappedField(3, ("a",)))


def test_rename_onto_a_name_another_field_had() -> None:
    m = NameMapping((MappedField(1, ("x", "b")), MappedField(2, ("a",))))
    out = update_mapping(m, {2: NestedField(2, "b", INT)}, {})
    assert out.fields == (MappedField(1, ("x",)), MappedField(2, ("a", "b")))


def test_two_added_fields_with_one_name_are_refused() -> None:
    m = NameMapping((MappedField(1, ("id",)),))
    with pytest.raises(ValidationError, match="two added fields are named 'z'"):
        update_mapping(m, {2: NestedField(2, "z", INT), 3: NestedField(3, "z", INT)},
                       {TABLE_ROOT_ID: [2, 3]})


@pytest.mark.parametrize("text, expected", [
    ("", 0),
    ("hello", 99162322),
    ("id", 3355),
    ("é", 233),
    ("\U0001F600", 0xD83D * 31 + 0xDE00),  # two UTF-16 code units
    ("polygenelubricants", 0x80000000),  # Integer.MIN_VALUE, as unsigned
])
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_hash_set_order_buckets_and_resizes() -> None:
    # single characters hash to their code point: 'p' (112) is bucket 0 of 16, 'a' bucket 1
    assert java_hash_set_order(["a", "p"], java_string_hash) == ["p", "a"]
    # 13 items pass 3/4 of 16: the table doubles to 32 and 'p' moves to bucket 16
    items = ["a", "p"] + [chr(c) for c in range(ord("b"), ord("m"))]
    order = java_hash_set_order(items, java_string_hash)
    assert order.index("a") < order.index("p")
    # within one bucket: insertion order
    assert java_hash_set_order([17, 1, 33], lambda i: i) == [17, 1, 33]
    assert java_hash_set_order([1, 17, 2], lambda i: i) == [1, 17, 2]
    # new HashSet<>(collection) of 13 names starts at 32 buckets
    assert java_hash_set_order([16, 0], lambda i: i, initial_size=13) == [0, 16]
    assert java_hash_set_order([16, 0], lambda i: i) == [16, 0]
