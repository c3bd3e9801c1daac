"""Schema evolution (Java ``SchemaUpdate``): every change top-level and nested, field id
assignment, the order several changes apply in, every refusal, the name mapping and
metrics properties that follow a change, concurrent evolutions, and reading old data
after evolution, on real file-system tables."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import CommitConflict, ValidationError
from floe.scan.readers import plan_to_table
from floe.manifest import DataFile, FileContent, FileFormat
from floe.name_mapping import create_mapping, name_mapping_to_json, parse_name_mapping
from floe.partitioning import PartitionSpec, parse_partition_by
from floe.properties import METRICS_COLUMN_PREFIX, NAME_MAPPING
from floe.scan import plan_files
from floe.schema import Schema
from floe.sorting import parse_sort_by
from floe.table.table import Table
from floe.table.transaction import Transaction
from floe.table.update_schema import UpdateSchema
from floe.types import (
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    DecimalType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

# Ids as create_table assigns them (Java order): top-level 1..9, then nested ones.
SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "data", STRING),
    NestedField(3, "point", StructType(NestedField(10, "x", DOUBLE),
                                       NestedField(11, "y", DOUBLE))),
    NestedField(4, "points", ListType(12, StructType(
        NestedField(13, "px", INT, required=True), NestedField(14, "py", INT)), False)),
    NestedField(5, "m", MapType(15, STRING, 16, StructType(NestedField(17, "v", INT)))),
    NestedField(6, "tags", ListType(18, STRING, True)),
    NestedField(7, "f", FLOAT),
    NestedField(8, "dec", DecimalType(9, 2)),
    NestedField(9, "key", StructType(NestedField(19, "kid", LONG, required=True)),
                required=True),
)
BASE = ("{1:id! long, 2:data string, 3:point {10:x double, 11:y double}, "
        "4:points list<12 {13:px! int, 14:py int}>, 5:m map<15 string, 16! {17:v int}>, "
        "6:tags list<18! string>, 7:f float, 8:dec decimal(9, 2), 9:key! {19:kid! long}}")
LAST_ID = 19


def render(t: IcebergType | Schema) -> str:
    """A compact, complete picture of a type: ``id:name[!] type 'doc'`` (``!`` required)."""
    if isinstance(t, Schema):
        t = t.as_struct()
    if isinstance(t, StructType):
        return "{" + ", ".join(
            f"{f.field_id}:{f.name}{'!' if f.required else ''} {render(f.field_type)}"
            + (f" '{f.doc}'" if f.doc else "") for f in t.fields) + "}"
    if isinstance(t, ListType):
        req = "!" if t.element_required else ""
        return f"list<{t.element_id}{req} {render(t.element_type)}>"
    if isinstance(t, MapType):
        req = "!" if t.value_required else ""
        return (f"map<{t.key_id} {render(t.key_type)}, {t.value_id}{req} "
                f"{render(t.value_type)}>")
    return str(t)


@pytest.fixture
def catalog(tmp_path: Path) -> FileSystemCatalog:
    return FileSystemCatalog("t", str(tmp_path / "wh"))


@pytest.fixture
def table(catalog: FileSystemCatalog) -> Table:
    return catalog.create_table("db.t", SCHEMA)


def test_base_schema_ids(table: Table) -> None:
    assert render(table.schema()) == BASE
    assert table.metadata.last_column_id == LAST_ID


Ops = Callable[[UpdateSchema], object]

# (case, changes, the new schema; "..." stands for the unchanged part of BASE after it)
CHANGES: list[tuple[str, Ops, str]] = [
    ("add top level", lambda u: u.add_column("new", "long", doc="n"),
     BASE[:-1] + ", 20:new long 'n'}"),
    ("add nested struct field", lambda u: u.add_column("point.z", DOUBLE),
     BASE.replace("11:y double}", "11:y double, 20:z double}")),
    ("add to list element by list name", lambda u: u.add_column("points.pz", "int"),
     BASE.replace("14:py int}", "14:py int, 20:pz int}")),
    ("add to list element by element name", lambda u: u.add_column("points.element.pz", INT),
     BASE.replace("14:py int}", "14:py int, 20:pz int}")),
    ("add to map value by map name", lambda u: u.add_column("m.w", "string"),
     BASE.replace("17:v int}", "17:v int, 20:w string}")),
    ("add to map value by value name", lambda u: u.add_column("m.value.w", STRING),
     BASE.replace("17:v int}", "17:v int, 20:w string}")),
    ("add nested type gets fresh ids after the field's own",
     lambda u: u.add_column("s", StructType(
         NestedField(7, "a", INT),
         NestedField(7, "b", ListType(7, MapType(7, STRING, 7, LONG, False), True)),
         NestedField(7, "c", StructType(NestedField(7, "d", INT, required=True))))),
     BASE[:-1] + ", 20:s {21:a int, 22:b list<24! map<25 string, 26 long>>, "
                 "23:c {27:d! int}}}"),
    ("add a nested type given as text",
     lambda u: u.add_column("s", "struct<a: int, b: list<long>, c: map<string, int>>"),
     BASE[:-1] + ", 20:s {21:a int, 22:b list<24 long>, 23:c map<25 string, 26 int>}}"),
    ("two adds take ids in call order",
     lambda u: u.add_column("b", "int").add_column("a", "int"),
     BASE[:-1] + ", 20:b int, 21:a int}"),
    ("add a name with a dot by tuple path", lambda u: u.add_column(("a.b",), "int"),
     BASE[:-1] + ", 20:a.b int}"),
    ("add under a tuple parent", lambda u: u.add_column(("point", "z"), "int"),
     BASE.replace("11:y double}", "11:y double, 20:z int}")),
    ("drop top level", lambda u: u.drop_column("data"),
     BASE.replace("2:data string, ", "")),
    ("drop nested", lambda u: u.drop_column("point.x"),
     BASE.replace("10:x double, ", "")),
    ("drop in list element", lambda u: u.drop_column("points.py"),
     BASE.replace(", 14:py int", "")),
    ("drop in map value", lambda u: u.drop_column("m.value.v"),
     BASE.replace("16! {17:v int}", "16! {}")),
    ("drop a struct with its fields", lambda u: u.drop_column("point"),
     BASE.replace("3:point {10:x double, 11:y double}, ", "")),
    ("drop then re-add a name: new id at the end",
     lambda u: u.drop_column("data").add_column("data", "long"),
     BASE.replace("2:data string, ", "")[:-1] + ", 20:data long}"),
    ("rename top level", lambda u: u.rename_column("data", "payload"),
     BASE.replace("2:data string", "2:payload string")),
    ("rename nested", lambda u: u.rename_column("point.x", "lon"),
     BASE.replace("10:x double", "10:lon double")),
    ("rename in list element", lambda u: u.rename_column("points.element.px", "q"),
     BASE.replace("13:px! int", "13:q! int")),
    ("rename to a name being dropped",
     lambda u: u.drop_column("data").rename_column("f", "data"),
     BASE.replace("2:data string, ", "").replace("7:f float", "7:data float")),
    ("promote int to long in a list element", lambda u: u.update_column("points.px", "long"),
     BASE.replace("13:px! int", "13:px! long")),
    ("promote float to double", lambda u: u.update_column("f", DOUBLE),
     BASE.replace("7:f float", "7:f double")),
    ("widen a decimal", lambda u: u.update_column("dec", "decimal(12,2)"),
     BASE.replace("decimal(9, 2)", "decimal(12, 2)")),
    ("promote a map value field", lambda u: u.update_column("m.v", "long"),
     BASE.replace("17:v int", "17:v long")),
    ("same type is a no-op", lambda u: u.update_column("id", "long"), BASE),
    ("make optional", lambda u: u.make_optional("id"), BASE.replace("1:id!", "1:id")),
    ("make a list element optional", lambda u: u.make_optional("tags.element"),
     BASE.replace("list<18! string>", "list<18 string>")),
    ("make a map value optional", lambda u: u.make_optional("m.value"),
     BASE.replace("16! {", "16 {")),
    ("make optional twice is a no-op for the second", lambda u: u.make_optional("data"), BASE),
    ("update doc", lambda u: u.update_doc("point.y", "north"),
     BASE.replace("11:y double", "11:y double 'north'")),
    ("rename and promote and document one column",
     lambda u: u.rename_column("f", "g").update_column("f", "double").update_doc("f", "d"),
     BASE.replace("7:f float", "7:g double 'd'")),
    ("move first", lambda u: u.move_first("dec"),
     "{8:dec decimal(9, 2), " + BASE[1:].replace(", 8:dec decimal(9, 2)", "")),
    ("move before", lambda u: u.move_before("tags", "data"),
     BASE.replace("2:data", "6:tags list<18! string>, 2:data")
         .replace(", 6:tags list<18! string>, 7:f", ", 7:f")),
    ("move after", lambda u: u.move_after("id", "data"),
     BASE.replace("1:id! long, 2:data string", "2:data string, 1:id! long")),
    ("move nested", lambda u: u.move_first("point.y"),
     BASE.replace("{10:x double, 11:y double}", "{11:y double, 10:x double}")),
    ("move in a list element struct", lambda u: u.move_before("points.py", "points.px"),
     BASE.replace("{13:px! int, 14:py int}", "{14:py int, 13:px! int}")),
    ("add then move the added column first",
     lambda u: u.add_column("new", "int").move_first("new"),
     "{20:new int, " + BASE[1:]),
    ("add nested then move it after a sibling",
     lambda u: u.add_column("point.z", "int").move_after("point.z", "point.x"),
     BASE.replace("{10:x double, 11:y double}", "{10:x double, 20:z int, 11:y double}")),
    ("move an existing column after an added one",
     lambda u: u.add_column("new", "int").move_after("id", "new"),
     BASE.replace("1:id! long, ", "")[:-1] + ", 20:new int, 1:id! long}"),
    ("moves apply in call order",
     lambda u: u.move_first("f").move_first("dec").move_after("id", "f"),
     "{8:dec decimal(9, 2), 7:f float, 1:id! long, 2:data string, "
     + BASE[BASE.index("3:point"):].replace(", 7:f float, 8:dec decimal(9, 2)", "")),
    ("Java's order: deletes, updates, adds, then moves",
     lambda u: u.move_first("point").add_column("point.z", "int").drop_column("data")
     .rename_column("point.x", "px").update_column("f", "double").add_column("new", "int")
     .move_before("new", "id").make_optional("key"),
     "{3:point {10:px double, 11:y double, 20:z int}, 21:new int, 1:id! long, "
     "4:points list<12 {13:px! int, 14:py int}>, 5:m map<15 string, 16! {17:v int}>, "
     "6:tags list<18! string>, 7:f double, 8:dec decimal(9, 2), 9:key {19:kid! long}}"),
]


@pytest.mark.parametrize("case, ops, expected", CHANGES, ids=[c[0] for c in CHANGES])
def test_changes(table: Table, case: str, ops: Ops, expected: str) -> None:
    update = table.update_schema()
    ops(update)
    preview = update.apply()
    assert render(preview) == expected
    update.commit()
    current = table.schema()
    assert render(current) == expected
    assert current.schema_id == preview.schema_id
    assert table.metadata.last_column_id == max(LAST_ID, current.highest_field_id)


def test_apply_does_not_commit(table: Table) -> None:
    location = table.metadata_location
    table.update_schema().add_column("new", "int").apply()
    assert table.refresh(force=True).metadata_location == location
    assert render(table.schema()) == BASE


def test_required_column_and_require_with_allow_incompatible(table: Table) -> None:
    table.update_schema(allow_incompatible=True).add_column("r", "int", required=True) \
        .require_column("data").require_column("tags.element").commit()
    s = render(table.schema())
    assert "20:r! int" in s and "2:data! string" in s


def test_no_change_reuses_the_current_schema(table: Table) -> None:
    table.update_schema().update_doc("id", None).commit()
    assert table.metadata.current_schema_id == 0
    assert len(table.metadata.schemas) == 1


def test_changing_back_reuses_the_earlier_schema(table: Table) -> None:
    table.update_schema().rename_column("data", "d").commit()
    table.update_schema().rename_column("d", "data").commit()
    assert [s.schema_id for s in table.metadata.schemas] == [0, 1]
    assert table.metadata.current_schema_id == 0


def test_case_insensitive_lookups(table: Table) -> None:
    table.update_schema(case_sensitive=False).rename_column("DATA", "payload") \
        .update_column("POINTS.PX", "long").add_column("POINT.z", "int") \
        .move_first("F").set_identifier_fields("ID").commit()
    s = table.schema()
    assert render(s).startswith("{7:f float, 1:id! long, 2:payload string, "
                                "3:point {10:x double, 11:y double, 20:z int}")
    assert "13:px! long" in render(s)
    assert s.identifier_field_ids == (1,)
    with pytest.raises(ValidationError, match="Cannot rename missing column: DATA"):
        table.update_schema().rename_column("DATA", "x")


def test_adding_an_existing_name_ignores_case_only_when_asked(table: Table) -> None:
    with pytest.raises(ValidationError, match="name already exists: DATA"):
        table.update_schema(case_sensitive=False).add_column("DATA", "int")
    table.update_schema().add_column("DATA", "int").commit()
    assert render(table.schema()).endswith("20:DATA int}")


def test_transaction_stages_until_commit(table: Table) -> None:
    txn = table.new_transaction()
    result = txn.update_schema().add_column("new", "int").commit()
    assert isinstance(result, Transaction) and result is txn
    assert table.refresh(force=True).metadata.current_schema_id == 0
    txn.set_properties({"k": "v"})
    txn.commit()
    assert render(table.schema()).endswith("20:new int}")
    assert table.properties["k"] == "v"


def test_one_schema_change_per_transaction(table: Table) -> None:
    txn = table.new_transaction()
    txn.update_schema().add_column("a", "int").commit()
    with pytest.raises(ValidationError, match="already has a schema change"):
        txn.update_schema().add_column("b", "int").commit()
    txn.commit()
    assert render(table.schema()).endswith("20:a int}")


def test_committed_update_cannot_commit_again(table: Table) -> None:
    update = table.update_schema().add_column("new", "int")
    assert update.commit() is table
    with pytest.raises(ValidationError, match="already committed"):
        update.commit()


# -- identifier fields ------------------------------------------------------------------------


def test_identifier_fields(table: Table) -> None:
    table.update_schema().set_identifier_fields("id", "key.kid").commit()
    assert table.schema().identifier_field_ids == (1, 19)
    # renamed columns (and parents) stay identifier fields
    table.update_schema().rename_column("id", "ident").rename_column("key", "k").commit()
    assert table.schema().identifier_field_ids == (1, 19)
    assert table.schema().find_column_name(19) == "k.kid"
    # the new set is resolved by new names, so an added required column can be one
    table.update_schema(allow_incompatible=True).add_column("seq", "long", required=True) \
        .set_identifier_fields("seq").drop_column("ident").commit()
    assert table.schema().identifier_field_ids == (20,)
    table.update_schema().set_identifier_fields().commit()
    assert table.schema().identifier_field_ids == ()


def test_identifier_ids_come_in_java_hash_set_order(table: Table) -> None:
    # Java keeps them in a HashSet: 19 (bucket 3) comes before 9 (bucket 9)
    table.update_schema().set_identifier_fields("id", "key.kid").commit()
    assert table.schema().identifier_field_ids == (1, 19)
    table.update_schema(allow_incompatible=True).add_column("a", "int", required=True) \
        .add_column("b", "int", required=True).set_identifier_fields("b", "a", "id").commit()
    assert table.schema().identifier_field_ids == (1, 20, 21)
    u = table.update_schema(allow_incompatible=True)
    for i in range(22, 40):  # ids 22..39
        u.add_column(f"c{i}", "int", required=True)
    u.set_identifier_fields("c33", "c22", "id", "c38", "c23").commit()
    # buckets (id & 15): 33→1, 1→1 (inserted in name order: c33 before id), 22→6, 38→6, 23→7
    assert table.schema().identifier_field_ids == (33, 1, 22, 38, 23)


# -- refusals ---------------------------------------------------------------------------------

REFUSALS: list[tuple[str, Ops, str]] = [
    ("add an existing name", lambda u: u.add_column("data", "int"),
     "Cannot add column, name already exists: data"),
    ("add an existing nested name", lambda u: u.add_column("point.x", "int"),
     "Cannot add column, name already exists: point.x"),
    ("add the same name twice", lambda u: u.add_column("n", "int").add_column("n", "long"),
     "Cannot add column, name already exists: n"),
    ("add to a missing parent", lambda u: u.add_column("nope.x", "int"),
     "Cannot find parent struct: nope"),
    ("add to a primitive", lambda u: u.add_column("data.x", "int"),
     "Cannot add to non-struct column: data: string"),
    ("add to a list of primitives", lambda u: u.add_column("tags.x", "int"),
     "Cannot add to non-struct column: tags: string"),
    ("add to a map key", lambda u: u.add_column("m.key.x", "int"),
     "Cannot add to non-struct column: m.key: string"),
    ("add to a dropped struct", lambda u: u.drop_column("point").add_column("point.z", "int"),
     "Cannot add to a column that will be deleted: point"),
    ("add a required column", lambda u: u.add_column("r", "int", required=True),
     r"cannot add required column without a default value: r \(format v2 tables have no "
     r"column defaults"),
    ("add a v3 type to a v2 table", lambda u: u.add_column("ts", "timestamp_ns"),
     "Invalid type for ts: timestamp_ns is not supported until v3"),
    ("unknown type string", lambda u: u.add_column("x", "bigint"),
     "unknown Iceberg type: 'bigint'"),
    ("drop a missing column", lambda u: u.drop_column("nope"),
     "Cannot delete missing column: nope"),
    ("drop a column with additions",
     lambda u: u.add_column("point.z", "int").drop_column("point"),
     "Cannot delete a column that has additions: point"),
    ("drop a renamed column", lambda u: u.rename_column("data", "d").drop_column("data"),
     "Cannot delete a column that has updates: data"),
    ("drop an added column", lambda u: u.add_column("n", "int").drop_column("n"),
     "Cannot delete missing column: n"),
    ("drop a list element", lambda u: u.drop_column("points.element"),
     "Cannot delete element type from list: points"),
    ("drop a map key", lambda u: u.drop_column("m.key"), "Cannot delete map keys: m"),
    ("drop a map value", lambda u: u.drop_column("m.value"),
     "Cannot delete value type from map: m"),
    ("rename a missing column", lambda u: u.rename_column("nope", "x"),
     "Cannot rename missing column: nope"),
    ("rename a dropped column", lambda u: u.drop_column("data").rename_column("data", "d"),
     "Cannot rename a column that will be deleted: data"),
    ("rename onto an existing name", lambda u: u.rename_column("data", "id"),
     "Invalid schema: the table would have two fields named 'id'"),
    ("rename onto an existing nested name", lambda u: u.rename_column("point.x", "y"),
     "Invalid schema: struct point would have two fields named 'y'"),
    ("rename to an empty name", lambda u: u.rename_column("data", ""),
     "Cannot rename column data to an empty name"),
    ("rename a map key", lambda u: u.rename_column("m.key", "k"), "Cannot update map keys: m"),
    ("narrow long to int", lambda u: u.update_column("id", "int"),
     r"Cannot change column type: id: long -> int \(Iceberg only widens"),
    ("string to int", lambda u: u.update_column("data", "int"),
     "Cannot change column type: data: string -> int"),
    ("decimal scale change", lambda u: u.update_column("dec", "decimal(12,3)"),
     r"Cannot change column type: dec: decimal\(9, 2\) -> decimal\(12, 3\)"),
    ("decimal narrowing", lambda u: u.update_column("dec", "decimal(8,2)"),
     r"Cannot change column type: dec: decimal\(9, 2\) -> decimal\(8, 2\)"),
    ("int to double", lambda u: u.update_column("points.px", "double"),
     "Cannot change column type: points.px: int -> double"),
    ("a struct to a primitive", lambda u: u.update_column("point", "long"),
     "Cannot change column type: point: struct<.*> -> long"),
    ("a primitive to a struct",
     lambda u: u.update_column("data", StructType(NestedField(1, "a", INT))),  # type: ignore
     "Cannot change column type: data: string -> struct"),
    ("a primitive to a struct given as text",
     lambda u: u.update_column("data", "struct<a: int>"),
     "Cannot change column type: data: string -> struct"),
    ("update a missing column", lambda u: u.update_column("nope", "long"),
     "Cannot update missing column: nope"),
    ("update a dropped column", lambda u: u.drop_column("f").update_column("f", "double"),
     "Cannot update a column that will be deleted: f"),
    ("document a dropped column", lambda u: u.drop_column("f").update_doc("f", "x"),
     "Cannot update a column that will be deleted: f"),
    ("make a dropped column optional", lambda u: u.drop_column("id").make_optional("id"),
     "Cannot update a column that will be deleted: id"),
    ("require without allowing incompatible changes", lambda u: u.require_column("data"),
     "Cannot change column nullability: data: optional -> required"),
    ("require a missing column", lambda u: u.require_column("nope"),
     "Cannot update missing column: nope"),
    ("move a missing column", lambda u: u.move_first("nope"),
     "Cannot move missing column: nope"),
    ("move before a missing column", lambda u: u.move_before("data", "nope"),
     "Cannot move data before missing column: nope"),
    ("move after itself", lambda u: u.move_after("data", "data"),
     "Cannot move data after itself"),
    ("move to another struct", lambda u: u.move_after("point.x", "id"),
     "Cannot move field point.x to a different struct"),
    ("move a top-level column into a struct", lambda u: u.move_before("id", "point.x"),
     "Cannot move field id to a different struct"),
    ("move a list element", lambda u: u.move_first("points.element"),
     "Cannot move fields in non-struct type: list<struct"),
    ("move a dropped column", lambda u: u.drop_column("data").move_first("data"),
     "Cannot move column data: it will be deleted"),
    ("move after a dropped column", lambda u: u.drop_column("data").move_after("id", "data"),
     "Cannot move id after data: data will be deleted"),
    ("identifier: optional", lambda u: u.set_identifier_fields("data"),
     "Cannot add field data as an identifier field: not a required field"),
    ("identifier: missing", lambda u: u.set_identifier_fields("nope"),
     "Cannot add field nope as an identifier field: not found in current schema"),
    ("identifier: not primitive", lambda u: u.set_identifier_fields("key"),
     "Cannot add field key as an identifier field: not a primitive type field"),
    ("identifier: float",
     lambda u: u.add_column("fl", "double", required=True).set_identifier_fields("fl"),
     "Cannot add field fl as an identifier field: must not be float or double field"),
    ("identifier: in a list", lambda u: u.set_identifier_fields("points.px"),
     r"Cannot add field px as an identifier field: must not be nested in points \(list"),
    ("identifier: in an optional struct",
     lambda u: u.make_optional("key").set_identifier_fields("key.kid"),
     "Cannot add field kid as an identifier field: must not be nested in an optional field "
     "key"),
    ("identifier: made optional",
     lambda u: u.set_identifier_fields("id").make_optional("id"),
     "Cannot add field id as an identifier field: not a required field"),
]


@pytest.mark.parametrize("case, ops, message", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_refusals(table: Table, case: str, ops: Ops, message: str) -> None:
    location = table.metadata_location
    update = table.update_schema(allow_incompatible="identifier" in case)
    with pytest.raises(ValidationError, match=message):
        ops(update)
        update.commit()
    assert table.refresh(force=True).metadata_location == location


def test_dropping_an_identifier_field_is_refused(table: Table) -> None:
    table.update_schema().set_identifier_fields("id", "key.kid").commit()
    with pytest.raises(ValidationError, match="Cannot delete identifier field id. To force "
                                              "deletion, also call set_identifier_fields"):
        table.update_schema().drop_column("id").apply()
    with pytest.raises(ValidationError, match="Cannot delete field key as it will delete "
                                              "nested identifier field key.kid"):
        table.update_schema().drop_column("key").apply()
    table.update_schema().set_identifier_fields("key.kid").drop_column("id").commit()
    assert table.schema().identifier_field_ids == (19,)


def test_dropping_a_partition_source_is_refused(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.p", SCHEMA, spec=parse_partition_by("bucket(4, data)", SCHEMA))
    with pytest.raises(ValidationError, match="Cannot drop column data: it is the source of "
                                              "partition field 'data_bucket' of the current "
                                              r"partition spec \(spec 0\)"):
        t.update_schema().drop_column("data").commit()
    # renaming and promoting a partition source is fine
    t.update_schema().rename_column("data", "d").commit()
    assert t.spec().fields[0].source_id == 2
    # once the current spec no longer uses it, older specs may keep the dropped source
    t.new_transaction().set_spec(PartitionSpec()).commit()
    t.update_schema().drop_column("d").commit()
    assert "2:" not in render(t.schema())
    assert t.metadata.spec_by_id(0) is not None


def test_v1_void_partition_field_needs_no_source(catalog: FileSystemCatalog) -> None:
    spec = parse_partition_by("void(data)", SCHEMA)
    t = catalog.create_table("db.v1", SCHEMA, spec=spec, format_version=1)
    t.update_schema().drop_column("data").commit()
    assert "data" not in t.schema().column_names()


def test_dropping_a_sort_column_is_refused(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.s", SCHEMA, sort_order=parse_sort_by("data desc", SCHEMA))
    with pytest.raises(ValidationError, match="Cannot drop column data: the table's sort "
                                              r"order \(order 1\) sorts by it"):
        t.update_schema().drop_column("data").apply()


# -- concurrent evolution -------------------------------------------------------------------


def test_concurrent_schema_change_makes_the_second_fail(catalog: FileSystemCatalog,
                                                       table: Table) -> None:
    stale = catalog.load_table("db.t")
    table.update_schema().add_column("a", "int").commit()
    location = table.metadata_location
    with pytest.raises(CommitConflict, match="current schema id changed from 0 to 1"):
        stale.update_schema().add_column("b", "int").commit()
    assert table.refresh(force=True).metadata_location == location
    assert render(table.schema()).endswith("20:a int}")


def test_concurrent_transactions(table: Table) -> None:
    first, second = table.new_transaction(), table.new_transaction()
    first.update_schema().add_column("a", "int").commit()
    second.update_schema().rename_column("data", "d").commit()
    first.commit()
    with pytest.raises(CommitConflict):
        second.commit()
    assert render(table.refresh(force=True).schema()).endswith("20:a int}")
    assert "2:data string" in render(table.schema())


def test_requirements_staged(table: Table) -> None:
    txn = table.new_transaction()
    txn.update_schema().add_column("a", "int").commit()
    (op,) = txn.operations
    assert {type(r).__name__: r.value for r in op.requirements} == {  # type: ignore[attr-defined]
        "AssertCurrentSchemaId": 0, "AssertLastAssignedFieldId": LAST_ID}


# -- properties that follow the schema ------------------------------------------------------


def test_name_mapping_is_updated(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.nm", SCHEMA)
    t.set_properties({NAME_MAPPING: json.dumps(create_mapping(t.schema()).to_json())})
    before = parse_name_mapping(t.properties[NAME_MAPPING])
    assert before.find("data") is not None and before.find("data").field_id == 2  # type: ignore
    t.update_schema().rename_column("data", "payload").add_column("point.z", "int") \
        .add_column("new", ListType(0, INT)).drop_column("f").commit()
    raw = t.properties[NAME_MAPPING]
    after = parse_name_mapping(raw)
    assert after.find("payload") == after.find("data")
    assert set(after.find("payload").names) == {"data", "payload"}  # type: ignore[union-attr]
    assert after.find("point", "z").field_id == 20  # type: ignore[union-attr]
    new = after.find("new")
    assert new is not None and new.field_id == 21
    assert new.fields is not None and new.fields[0].names == ("element",)
    assert after.find("f") is not None  # old files may still have it: Java keeps it
    assert raw == name_mapping_to_json(after)  # Java's pretty JSON
    assert raw.startswith('[ {\n  "field-id" : 1,\n  "names" : [ "id" ]\n}, {')


def test_unparseable_name_mapping_is_left_alone(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.bad", SCHEMA, properties={NAME_MAPPING: "{not json"})
    t.update_schema().rename_column("data", "d").commit()
    assert t.properties[NAME_MAPPING] == "{not json"
    assert "2:d string" in render(t.schema())


def test_metrics_properties_follow_renames_and_drops(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.mx", SCHEMA, properties={
        METRICS_COLUMN_PREFIX + "data": "full", METRICS_COLUMN_PREFIX + "f": "none",
        METRICS_COLUMN_PREFIX + "point.x": "counts", "other": "1"})
    t.update_schema().rename_column("data", "payload").drop_column("f") \
        .rename_column("point", "p").commit()
    props = {k: v for k, v in t.properties.items() if k.startswith(METRICS_COLUMN_PREFIX)}
    # Java only moves the settings of the renamed column itself, not of its children
    assert props == {METRICS_COLUMN_PREFIX + "payload": "full",
                     METRICS_COLUMN_PREFIX + "point.x": "counts"}
    assert t.properties["other"] == "1"


# -- previews ---------------------------------------------------------------------------------


def test_describe_changes(table: Table) -> None:
    update = table.update_schema(allow_incompatible=True).drop_column("f") \
        .rename_column("data", "payload").update_column("dec", "decimal(10,2)") \
        .make_optional("id").require_column("point.x").update_doc("tags", "labels") \
        .add_column("point.z", "int").add_column("r", "long", required=True) \
        .move_first("r").set_identifier_fields("key.kid")
    lines = [(c.kind, c.column, str(c)) for c in update.describe_changes()]
    assert lines == [
        ("drop-column", "f", "drop column f"),
        ("rename-column", "data", "rename column data to payload"),
        ("update-column-type", "dec", "widen column dec from decimal(9, 2) to decimal(10, 2)"),
        ("make-optional", "id", "make column id optional"),
        ("make-required", "point.x", "make column point.x required (incompatible)"),
        ("update-doc", "tags", "set the doc of column tags to 'labels'"),
        ("add-column", "point.z", "add optional column point.z int"),
        ("add-column", "r", "add required column r long (incompatible)"),
        ("move-column", "r", "move column r first"),
        ("set-identifier-fields", "key.kid", "set identifier fields to key.kid"),
    ]


def test_describe_changes_raises_like_apply(table: Table) -> None:
    with pytest.raises(ValidationError, match="two fields named 'id'"):
        table.update_schema().rename_column("data", "id").describe_changes()


# -- reading old data after evolution -------------------------------------------------------

SIMPLE = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "n", INT),
                NestedField(3, "s", STRING), NestedField(4, "p", StructType(
                    NestedField(5, "x", FLOAT), NestedField(6, "y", INT))))


def _rows(*ids: int) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()), "n": pa.array([i * 10 for i in ids], pa.int32()),
        "s": [f"s{i}" for i in ids],
        "p": pa.array([{"x": i / 2, "y": i} for i in ids],
                      pa.struct([("x", pa.float32()), ("y", pa.int32())]))})


def _read(t: Table) -> list[dict[str, Any]]:
    plan = plan_files(t.io, t.metadata)
    return sorted(plan_to_table(t.io, plan).to_pylist(), key=lambda r: r["id"])


def test_old_data_reads_after_evolution(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.r", SIMPLE)
    t.append(_rows(1, 2))
    t.update_schema().rename_column("s", "label").drop_column("p.y") \
        .update_column("n", "long").update_column("p.x", "double") \
        .add_column("extra", "string").add_column("p.z", "int").move_first("extra").commit()
    got = _read(t)
    assert got == [
        {"extra": None, "id": 1, "n": 10, "label": "s1", "p": {"x": 0.5, "z": None}},
        {"extra": None, "id": 2, "n": 20, "label": "s2", "p": {"x": 1.0, "z": None}},
    ]
    result = plan_to_table(t.io, plan_files(t.io, t.metadata))
    assert result.schema.field("n").type == pa.int64()
    assert result.schema.field("p").type.field("x").type == pa.float64()


def test_dropped_then_re_added_column_reads_null_for_old_rows(
        catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.readd", SIMPLE)
    t.append(_rows(1))
    t.update_schema().drop_column("s").add_column("s", "string").commit()
    t.append(pa.table({"id": pa.array([2], pa.int64()), "n": pa.array([20], pa.int32()),
                       "p": pa.array([None], pa.struct([("x", pa.float32()),
                                                        ("y", pa.int32())])),
                       "s": ["new"]}))
    assert [(r["id"], r["s"]) for r in _read(t)] == [(1, None), (2, "new")]


def test_name_mapped_file_reads_after_rename(catalog: FileSystemCatalog,
                                            tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LONG), NestedField(2, "s", STRING))
    t = catalog.create_table("db.mapped", schema, properties={
        NAME_MAPPING: name_mapping_to_json(create_mapping(schema))})
    path = str(tmp_path / "no_ids.parquet")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}), path)
    f = DataFile(FileContent.DATA, path, FileFormat.PARQUET, (), 2, Path(path).stat().st_size)
    t.new_transaction().append_files([f]).commit()
    t.update_schema().rename_column("s", "label").commit()
    assert _read(t) == [{"id": 1, "label": "a"}, {"id": 2, "label": "b"}]
