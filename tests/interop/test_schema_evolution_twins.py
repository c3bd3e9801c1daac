"""Schema evolution twins: the same table created twice by Spark, evolved by floe's
``UpdateSchema`` (``oracle.db.se_<case>_floe``) and by Spark ``ALTER TABLE``
(``..._spark``), one floe update per Spark statement. Both must end with identical schemas
(every schema of the history as JSON: ids, names, types, required, docs, order, identifier
ids), the same ``last-column-id``, byte-identical name mappings, and Spark must read the same
rows from both, old rows and rows inserted after the evolution (by floe's append for one
case). A change Java refuses is refused by floe too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from oracle_client import OracleRequestError

from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import ValidationError
from floe.properties import NAME_MAPPING
from floe.table.table import Table
from floe.table.update_schema import UpdateSchema
from floe.types import (
    DOUBLE,
    INT,
    LONG,
    STRING,
    ListType,
    MapType,
    NestedField,
    StructType,
)

Step = tuple[str, Callable[[Table], object]]


def u(change: Callable[[UpdateSchema], object], **kw: Any) -> Callable[[Table], object]:
    """A floe step: one UpdateSchema with ``change``, committed (like one ALTER TABLE)."""

    def run(t: Table) -> None:
        update = t.update_schema(**kw)
        change(update)
        update.commit()

    return run


@dataclass(frozen=True)
class Case:
    name: str
    columns: str
    create_extra: str  # PARTITIONED BY / TBLPROPERTIES
    rows_before: str
    steps: list[Step]
    rows_after: str
    floe_append: pa.Table | None = None  # the floe twin gets rows_after through floe

    def table(self, twin: str) -> str:
        return f"oracle.db.se_{self.name}_{twin}"


MAPPING = json.dumps([
    {"field-id": 1, "names": ["id", "record_id"]},
    {"field-id": 2, "names": ["data"]},
    {"field-id": 3, "names": ["point", "pt"], "fields": [
        {"field-id": 6, "names": ["x", "lon"]}, {"field-id": 7, "names": ["y"]}]},
    {"field-id": 4, "names": ["n"]},
    {"field-id": 5, "names": ["tags"], "fields": [{"field-id": 8, "names": ["element"]}]},
])

WIDE = ", ".join(f"c{i} bigint NOT NULL" for i in range(1, 41))

CASES = [
    Case(
        "nested_v2",
        "id bigint NOT NULL, data string, req int NOT NULL, point struct<x: double, y: double>,"
        " points array<struct<px: int, py: int>>, m map<string, struct<v: int, u: int>>,"
        " n int, f float, dec decimal(9,2)",
        "TBLPROPERTIES ('format-version'='2')",
        "(1, 'a', 10, named_struct('x', 1.0D, 'y', 2.0D), array(named_struct('px', 1, 'py', 2)),"
        " map('k', named_struct('v', 1, 'u', 2)), 5, CAST(1.5 AS FLOAT),"
        " CAST(1.25 AS DECIMAL(9,2))), (2, NULL, 20, NULL, NULL, NULL, NULL, NULL, NULL)",
        [
            ("ADD COLUMN point.z double AFTER x",
             u(lambda s: s.add_column("point.z", DOUBLE).move_after("point.z", "point.x"))),
            ("ADD COLUMNS (c int, s struct<e: int, l: array<int>>)",
             u(lambda s: s.add_column("c", INT).add_column("s", StructType(
                 NestedField(0, "e", INT), NestedField(0, "l", ListType(0, INT, False)))))),
            ("ADD COLUMN first_col string FIRST",
             u(lambda s: s.add_column("first_col", STRING).move_first("first_col"))),
            ("ADD COLUMN points.element.pz int", u(lambda s: s.add_column("points.element.pz",
                                                                          INT))),
            ("ADD COLUMN m.value.w string COMMENT 'new w'",
             u(lambda s: s.add_column("m.value.w", STRING, doc="new w"))),
            ("RENAME COLUMN data TO payload", u(lambda s: s.rename_column("data", "payload"))),
            ("RENAME COLUMN point.x TO px", u(lambda s: s.rename_column("point.x", "px"))),
            ("ALTER COLUMN n TYPE bigint", u(lambda s: s.update_column("n", LONG))),
            ("ALTER COLUMN f TYPE double", u(lambda s: s.update_column("f", "double"))),
            ("ALTER COLUMN dec TYPE decimal(12,2)",
             u(lambda s: s.update_column("dec", "decimal(12, 2)"))),
            ("ALTER COLUMN points.element.px TYPE bigint",
             u(lambda s: s.update_column("points.element.px", LONG))),
            ("ALTER COLUMN payload COMMENT 'the payload'",
             u(lambda s: s.update_doc("payload", "the payload"))),
            ("ALTER COLUMN req DROP NOT NULL", u(lambda s: s.make_optional("req"))),
            ("ALTER COLUMN c AFTER id", u(lambda s: s.move_after("c", "id"))),
            ("ALTER COLUMN point.y FIRST", u(lambda s: s.move_first("point.y"))),
            ("DROP COLUMN s", u(lambda s: s.drop_column("s"))),
            ("DROP COLUMN m.value.u", u(lambda s: s.drop_column("m.value.u"))),
            ("SET IDENTIFIER FIELDS id", u(lambda s: s.set_identifier_fields("id"))),
        ],
        "('fc', 3, 7, 'p', NULL, named_struct('y', 2.0D, 'px', 1.0D, 'z', 3.0D),"
        " array(named_struct('px', 10L, 'py', 2, 'pz', 3)), map('k', named_struct('v', 1, 'w',"
        " 'x')), 9L, 2.5D, CAST(3.5 AS DECIMAL(12,2)))",
    ),
    Case(
        "mapped_v1",
        "id bigint, data string, point struct<x: double, y: double>, n int, tags array<string>",
        f"PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version'='1', "
        f"'{NAME_MAPPING}'='{MAPPING}')",
        "(1, 'a', named_struct('x', 1.0D, 'y', 2.0D), 5, array('t1', 't2')),"
        " (2, 'b', NULL, NULL, NULL)",
        [
            ("RENAME COLUMN DATA TO payload",
             u(lambda s: s.rename_column("DATA", "payload"), case_sensitive=False)),
            ("ADD COLUMN point.z double", u(lambda s: s.add_column("point.z", DOUBLE))),
            ("RENAME COLUMN point.x TO longitude",
             u(lambda s: s.rename_column("point.x", "longitude"))),
            ("ADD COLUMNS (extra map<string, int>, more struct<a: int>)",
             u(lambda s: s.add_column("extra", MapType(0, STRING, 0, INT, False))
               .add_column("more", StructType(NestedField(0, "a", INT))))),
            ("DROP COLUMN point.y", u(lambda s: s.drop_column("point.y"))),
            ("ALTER COLUMN n TYPE bigint", u(lambda s: s.update_column("n", LONG))),
            ("ALTER COLUMN tags COMMENT 'labels'", u(lambda s: s.update_doc("tags", "labels"))),
        ],
        "(3, 'c', named_struct('longitude', 1.0D, 'z', 2.0D), 7L, array('t'), map('a', 1),"
        " named_struct('a', 5))",
    ),
    Case(
        "append_v2",
        "id bigint, s string, n int",
        "PARTITIONED BY (s) TBLPROPERTIES ('format-version'='2')",
        "(1, 'a', 10), (2, 'b', 20)",
        [
            ("ADD COLUMN extra double FIRST",
             u(lambda s: s.add_column("extra", DOUBLE).move_first("extra"))),
            ("RENAME COLUMN s TO label", u(lambda s: s.rename_column("s", "label"))),
            ("ALTER COLUMN n TYPE bigint", u(lambda s: s.update_column("n", LONG))),
            ("ADD COLUMNS (point struct<x: int, y: int>)",
             u(lambda s: s.add_column("point", StructType(NestedField(0, "x", INT),
                                                          NestedField(0, "y", INT))))),
        ],
        "(0.5D, 3, 'a', 30L, named_struct('x', 1, 'y', 2)), (NULL, 4, 'c', NULL, NULL)",
        floe_append=pa.table({
            "extra": pa.array([0.5, None], pa.float64()),
            "id": pa.array([3, 4], pa.int64()),
            "label": ["a", "c"],
            "n": pa.array([30, None], pa.int64()),
            "point": pa.array([{"x": 1, "y": 2}, None],
                              pa.struct([("x", pa.int32()), ("y", pa.int32())])),
        }),
    ),
    Case(
        "identifiers_v2",
        WIDE,
        "TBLPROPERTIES ('format-version'='2')",
        "(" + ", ".join(str(i) for i in range(1, 41)) + ")",
        [
            # Java keeps identifier ids in a HashSet: 33 and 1 share a bucket, and so on
            ("SET IDENTIFIER FIELDS c33, c22, c1, c38, c23",
             u(lambda s: s.set_identifier_fields("c33", "c22", "c1", "c38", "c23"))),
            ("RENAME COLUMN c33 TO k33", u(lambda s: s.rename_column("c33", "k33"))),
            ("ADD COLUMN extra string", u(lambda s: s.add_column("extra", STRING))),
            ("DROP COLUMN c2", u(lambda s: s.drop_column("c2"))),
        ],
        "(" + ", ".join(str(i) for i in range(101, 140)) + ", 'x')",
    ),
]
CASE_NAMES = [c.name for c in CASES]
ROW_COUNTS = {"nested_v2": 3, "mapped_v1": 3, "append_v2": 4, "identifiers_v2": 2}


def _rows(result: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in result)


@pytest.fixture(scope="module")
def twins(oracle: Any) -> dict[str, dict[str, Any]]:
    """Build every twin pair, evolve both sides, insert and read back through Spark."""
    setup: list[str] = []
    for case in CASES:
        for twin in ("floe", "spark"):
            setup += [
                f"CREATE TABLE {case.table(twin)} ({case.columns}) USING iceberg "
                f"{case.create_extra}",
                f"INSERT INTO {case.table(twin)} VALUES {case.rows_before}",
            ]
    oracle.sql(setup)

    catalog = FileSystemCatalog("se", str(oracle.warehouse))
    after: list[str] = []
    for case in CASES:
        floe_table = catalog.load_table(f"db.se_{case.name}_floe")
        for statement, step in case.steps:
            step(floe_table)
            after.append(f"ALTER TABLE {case.table('spark')} {statement}")
        after.append(f"INSERT INTO {case.table('spark')} VALUES {case.rows_after}")
        if case.floe_append is not None:
            floe_table.append(case.floe_append)
        else:
            after.append(f"INSERT INTO {case.table('floe')} VALUES {case.rows_after}")
    selects = [f"SELECT * FROM {case.table(twin)}" for case in CASES for twin in ("floe", "spark")]
    results = oracle.sql(after + selects, all=True)[len(after):]

    out: dict[str, dict[str, Any]] = {}
    for i, case in enumerate(CASES):
        out[case.name] = {
            twin: {"table": catalog.load_table(f"db.se_{case.name}_{twin}"),
                   "rows": results[2 * i + j]}
            for j, twin in enumerate(("floe", "spark"))
        }
    return out


@pytest.mark.parametrize("name", CASE_NAMES)
def test_same_schemas(twins: dict[str, dict[str, Any]], name: str) -> None:
    floe_md = twins[name]["floe"]["table"].metadata
    spark_md = twins[name]["spark"]["table"].metadata
    assert floe_md.schema().to_json() == spark_md.schema().to_json()
    assert [s.to_json() for s in floe_md.schemas] == [s.to_json() for s in spark_md.schemas]
    assert floe_md.current_schema_id == spark_md.current_schema_id == len(CASES[
        CASE_NAMES.index(name)].steps)
    assert floe_md.last_column_id == spark_md.last_column_id


@pytest.mark.parametrize("name", CASE_NAMES)
def test_same_properties(twins: dict[str, dict[str, Any]], name: str) -> None:
    floe_props = twins[name]["floe"]["table"].properties
    spark_props = twins[name]["spark"]["table"].properties
    assert floe_props.get(NAME_MAPPING) == spark_props.get(NAME_MAPPING)
    assert (NAME_MAPPING in floe_props) == (name == "mapped_v1")


def test_name_mapping_kept_the_old_names(twins: dict[str, dict[str, Any]]) -> None:
    raw = twins["mapped_v1"]["floe"]["table"].properties[NAME_MAPPING]
    assert '"names" : [ "data", "payload" ]' in raw or '"names" : [ "payload", "data" ]' in raw
    assert '"lon"' in raw and '"longitude"' in raw


@pytest.mark.parametrize("name", CASE_NAMES)
def test_spark_reads_the_same_rows(twins: dict[str, dict[str, Any]], name: str) -> None:
    floe_rows = twins[name]["floe"]["rows"]
    spark_rows = twins[name]["spark"]["rows"]
    assert len(floe_rows) == len(spark_rows) == ROW_COUNTS[name]
    assert _rows(floe_rows) == _rows(spark_rows)


def test_identifier_ids_in_java_order(twins: dict[str, dict[str, Any]]) -> None:
    schema = twins["identifiers_v2"]["floe"]["table"].schema()
    assert schema.identifier_field_ids == (33, 1, 22, 38, 23)


def test_both_refuse_dropping_a_partition_source(oracle: Any,
                                                 twins: dict[str, dict[str, Any]]) -> None:
    with pytest.raises(OracleRequestError, match="Cannot find source column for partition"):
        oracle.sql([f"ALTER TABLE {CASES[1].table('spark')} DROP COLUMN id"])
    table = twins["mapped_v1"]["floe"]["table"]
    with pytest.raises(ValidationError, match="Cannot drop column id: it is the source of "
                                              "partition field 'id_bucket'"):
        table.update_schema().drop_column("id").commit()
