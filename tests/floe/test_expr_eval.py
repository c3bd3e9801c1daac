"""The row evaluator and the Arrow filter: null and NaN semantics, nested fields, explanations."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from floe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    arrow_filter,
    evaluator,
    evaluator_explain,
    parse_filter,
)
from floe.schema import Schema
from floe.types import (
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    NestedField,
    StructType,
)

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=False),
    NestedField(2, "s", STRING, required=False),
    NestedField(3, "x", DOUBLE, required=False),
    NestedField(4, "loc", StructType(NestedField(5, "lat", DOUBLE, required=False)),
                required=False),
)

NAN = float("nan")

# (filter, value of the column, matches)
ROWS: list[tuple[str, Any, bool]] = [
    ("id = 5", 5, True),
    ("id = 5", None, False),
    ("id != 5", 5, False),
    ("id != 5", None, True),
    ("id < 5", None, False),
    ("id >= 5", None, False),
    ("id IN (1, 2)", 2, True),
    ("id IN (1, 2)", None, False),
    ("id NOT IN (1, 2)", None, True),
    ("id NOT IN (1, 2)", 2, False),
    ("id IS NULL", None, True),
    ("id IS NOT NULL", None, False),
    ("s STARTS WITH 'ab'", "abc", True),
    ("s STARTS WITH 'ab'", "a", False),
    ("s STARTS WITH 'ab'", None, False),
    ("s NOT STARTS WITH 'ab'", None, True),
    ("s NOT STARTS WITH 'ab'", "xab", True),
    ("s < 'b'", "\u00e9", False),
    ("x IS NAN", NAN, True),
    ("x IS NAN", None, False),
    ("x IS NAN", 1.0, False),
    ("x IS NOT NAN", None, True),
    ("x IS NOT NAN", NAN, False),
    ("x < 1", NAN, False),
    ("x > 1", NAN, False),
    ("x = 1", NAN, False),
    ("x != 1", NAN, True),
    ("x NOT IN (1, 2)", NAN, True),
    ("NOT x < 1", NAN, False),  # NOT pushes down: x >= 1, false for NaN (Java's RewriteNot)
    ("loc.lat > 1", 2.0, True),
]


def _row(text: str, value: Any) -> tuple[Any, ...]:
    column = text.replace("NOT ", "").split()[0]
    if column == "loc.lat":
        return (None, None, None, (value,))
    pos = ["id", "s", "x"].index(column)
    return tuple(value if i == pos else None for i in range(4))


@pytest.mark.parametrize(("text", "value", "expected"), ROWS,
                         ids=[f"{t} @ {v!r}" for t, v, _ in ROWS])
def test_row_evaluator_and_arrow_filter(text: str, value: Any, expected: bool) -> None:
    row = _row(text, value)
    assert evaluator(SCHEMA, parse_filter(text))(row) is expected
    table = pa.table({
        "id": pa.array([row[0]], pa.int64()), "s": pa.array([row[1]], pa.string()),
        "x": pa.array([row[2]], pa.float64()),
        "loc": pa.array([None if row[3] is None else {"lat": row[3][0]}],
                        pa.struct([("lat", pa.float64())])),
    })
    assert table.filter(arrow_filter(SCHEMA, parse_filter(text))).num_rows == int(expected)


def test_rows_as_mappings_and_nested_nulls() -> None:
    ev = evaluator(SCHEMA, parse_filter("id > 1 AND loc.lat IS NULL"))
    assert ev({"id": 2, "loc": None})
    assert ev({"id": 2})
    assert not ev({"id": 2, "loc": {"lat": 1.0}})
    assert not ev((1, None, None, None))


def test_case_insensitive_evaluator() -> None:
    assert evaluator(SCHEMA, parse_filter("ID = 1"), case_sensitive=False)((1, None, None, None))


def test_constants() -> None:
    assert evaluator(SCHEMA, AlwaysTrue())(())
    assert not evaluator(SCHEMA, AlwaysFalse())(())


def test_explanations_name_the_deciding_value() -> None:
    explain = evaluator_explain(SCHEMA, parse_filter("id > 5 AND s = 'a'"))
    assert explain((9, "a", None, None)) == (True, "id > 5 is true; s = 'a' is true")
    assert explain((3, "a", None, None)) == (False, "id > 5 is false: id = 3")
    assert explain((9, None, None, None)) == (False, "s = 'a' is false: s = null")
    explain = evaluator_explain(SCHEMA, parse_filter("id > 5 OR s = 'a'"))
    assert explain((1, "b", None, None)) == (
        False, "id > 5 is false: id = 1; and s = 'a' is false: s = 'b'")


def test_arrow_filter_types() -> None:
    import datetime as dt
    import uuid
    from decimal import Decimal

    schema = Schema(
        NestedField(1, "ts", TIMESTAMPTZ, required=False),
        NestedField(2, "u", UUID, required=False),
        NestedField(3, "p", DecimalType(9, 2), required=False),
    )
    u = uuid.UUID(int=5)
    table = pa.table({
        "ts": pa.array([dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC),
                        dt.datetime(2023, 1, 1, tzinfo=dt.UTC)], pa.timestamp("us", tz="UTC")),
        "u": pa.array([u.bytes, uuid.UUID(int=6).bytes], pa.binary(16)),
        "p": pa.array([Decimal("1.50"), Decimal("2.00")], pa.decimal128(9, 2)),
    })
    cases = {
        "ts > TIMESTAMP '2024-01-01 00:00:00+00:00'": 1,
        f"u = '{u}'": 1,
        f"u IN ('{u}', '{uuid.UUID(int=7)}')": 1,
        "p > 1.5": 1,
        "p <= 2": 2,
    }
    for text, count in cases.items():
        assert table.filter(arrow_filter(schema, parse_filter(text))).num_rows == count, text
