"""Literals and their conversions, binding, and the simplifying constructors."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest

from floe.errors import ValidationError
from floe.expressions import (
    ABOVE_MAX,
    BELOW_MIN,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundReference,
    DateLiteral,
    DecimalLiteral,
    DoubleLiteral,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Literal,
    LongLiteral,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    StringLiteral,
    TimestampLiteral,
    bind,
    literal,
    parse_filter,
    rewrite_not,
)
from floe.schema import Schema
from floe.types import (
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    BooleanType,
    DecimalType,
    FixedType,
    NestedField,
    PrimitiveType,
    StructType,
)

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

CONVERSIONS: list[tuple[Literal, PrimitiveType, Any]] = [
    (LongLiteral(5), INT, 5),
    (LongLiteral(5), LONG, 5),
    (LongLiteral(5), FLOAT, 5.0),
    (LongLiteral(5), DOUBLE, 5.0),
    (LongLiteral(5), DecimalType(9, 2), Decimal("5.00")),
    (LongLiteral(5), DATE, 5),
    (LongLiteral(5), TIME, 5),
    (LongLiteral(5), TIMESTAMP, 5),
    (LongLiteral(5), TIMESTAMPTZ, 5),
    (LongLiteral(2**31 - 1), INT, 2**31 - 1),
    (LongLiteral(-(2**31)), INT, -(2**31)),
    (DoubleLiteral(0.1), FLOAT, 0.10000000149011612),
    (DoubleLiteral(0.1), DOUBLE, 0.1),
    (DoubleLiteral(1.005), DecimalType(9, 2), Decimal("1.01")),
    (DecimalLiteral(Decimal("1.5")), DecimalType(9, 2), Decimal("1.50")),
    (DecimalLiteral(Decimal("1.5")), DOUBLE, 1.5),
    (StringLiteral("2024-01-01"), DATE, 19723),
    (StringLiteral("1969-12-31"), DATE, -1),
    (StringLiteral("10:00:00"), TIME, 36_000_000_000),
    (StringLiteral("2024-01-01T10:00:00"), TIMESTAMP, 1704103200000000),
    (StringLiteral("2024-01-01 10:00:00"), TIMESTAMP, 1704103200000000),
    (StringLiteral("2024-01-01T12:00:00+02:00"), TIMESTAMPTZ, 1704103200000000),
    (StringLiteral("2024-01-01 10:00:00"), TIMESTAMPTZ, 1704103200000000),
    (StringLiteral("2024-01-01T10:00:00.000000001"), TIMESTAMP_NS, 1704103200000000001),
    (StringLiteral("12.34"), DecimalType(9, 2), Decimal("12.34")),
    (StringLiteral(str(U)), UUID, U),
    (StringLiteral("ab"), BINARY, b"ab"),
    (StringLiteral("ab"), FixedType(2), b"ab"),
    (DateLiteral(1), TIMESTAMP, 86_400_000_000),
    (TimestampLiteral(7), TIMESTAMPTZ, 7),
    (TimestampLiteral(7), TIMESTAMP_NS, 7000),
    (literal(True), BooleanType(), True),
    (literal(b"\x01"), BINARY, b"\x01"),
]


@pytest.mark.parametrize(("lit", "target", "value"), CONVERSIONS,
                         ids=[f"{lit!r}->{t}" for lit, t, _ in CONVERSIONS])
def test_conversion(lit: Literal, target: PrimitiveType, value: Any) -> None:
    converted = lit.to(target)
    assert converted.value == value
    assert type(converted.value) is type(value)
    assert converted.type == target


OUT_OF_RANGE: list[tuple[Literal, PrimitiveType, Literal]] = [
    (LongLiteral(2**31), INT, ABOVE_MAX),
    (LongLiteral(-(2**31) - 1), INT, BELOW_MIN),
    (LongLiteral(2**63), LONG, ABOVE_MAX),
    (DoubleLiteral(1e39), FLOAT, ABOVE_MAX),
    (DoubleLiteral(-1e39), FLOAT, BELOW_MIN),
]


@pytest.mark.parametrize(("lit", "target", "expected"), OUT_OF_RANGE)
def test_out_of_range(lit: Literal, target: PrimitiveType, expected: Literal) -> None:
    assert lit.to(target) == expected


NO_CONVERSION: list[tuple[Literal, PrimitiveType]] = [
    (StringLiteral("abc"), LONG),
    (StringLiteral("2024-02-30"), DATE),
    (StringLiteral("2024-01-01T10:00:00+02:00"), TIMESTAMP),
    (StringLiteral("not a uuid"), UUID),
    (StringLiteral("1.234"), DecimalType(9, 2)),
    (DecimalLiteral(Decimal("1.234")), DecimalType(9, 2)),
    (LongLiteral(1), STRING),
    (DoubleLiteral(1.5), LONG),
    (literal(True), LONG),
    (StringLiteral("abc"), FixedType(2)),
]


@pytest.mark.parametrize(("lit", "target"), NO_CONVERSION)
def test_no_conversion(lit: Literal, target: PrimitiveType) -> None:
    with pytest.raises(ValidationError):
        lit.to(target)


PYTHON_LITERALS: list[tuple[Any, PrimitiveType, Any]] = [
    (5, LONG, 5),
    (1.5, DOUBLE, 1.5),
    ("x", STRING, "x"),
    (Decimal("1.25"), DecimalType(3, 2), Decimal("1.25")),
    (U, UUID, U),
    (dt.date(1970, 1, 2), DATE, 1),
    (dt.datetime(1970, 1, 1, 0, 0, 1), TIMESTAMP, 1_000_000),
    (dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), TIMESTAMPTZ, 0),
    (dt.time(0, 0, 1), TIME, 1_000_000),
]


@pytest.mark.parametrize(("value", "t", "stored"), PYTHON_LITERALS)
def test_literal_of_python_values(value: Any, t: PrimitiveType, stored: Any) -> None:
    lit = literal(value)
    assert lit.type == t
    assert lit.value == stored


def test_nan_literal_is_refused() -> None:
    with pytest.raises(ValidationError, match="IS NAN"):
        EqualTo("x", float("nan"))


# -- simplification ------------------------------------------------------------------------

A, B = EqualTo("a", 1), EqualTo("b", 2)

SIMPLIFIED: list[tuple[BooleanExpression, BooleanExpression]] = [
    (And(A, AlwaysTrue()), A),
    (And(AlwaysTrue(), A), A),
    (And(A, AlwaysFalse()), AlwaysFalse()),
    (Or(A, AlwaysFalse()), A),
    (Or(AlwaysFalse(), A), A),
    (Or(A, AlwaysTrue()), AlwaysTrue()),
    (And(A, B, A), And(And(A, B), A)),
    (In("a", [1]), EqualTo("a", 1)),
    (In("a", []), AlwaysFalse()),
    (NotIn("a", [1]), NotEqualTo("a", 1)),
    (NotIn("a", []), AlwaysTrue()),
    (In("a", [1, 1]), EqualTo("a", 1)),
    (Not(A), NotEqualTo("a", 1)),
    (Not(Not(A)), A),
    (Not(AlwaysTrue()), AlwaysFalse()),
    (Not(LessThan("a", 1)), GreaterThanOrEqual("a", 1)),
    (Not(LessThanOrEqual("a", 1)), GreaterThan("a", 1)),
    (Not(IsNull("a")), NotNull("a")),
    (Not(IsNaN("a")), NotNaN("a")),
    (Not(StartsWith("a", "x")), NotStartsWith("a", "x")),
    (Not(In("a", [1, 2])), NotIn("a", [1, 2])),
    (Not(And(A, B)), Or(Not(A), Not(B))),
    (Not(Or(A, B)), And(Not(A), Not(B))),
    (~A, NotEqualTo("a", 1)),
    (A & B, And(A, B)),
    (A | B, Or(A, B)),
    (rewrite_not(Not(Or(A, B))), And(NotEqualTo("a", 1), NotEqualTo("b", 2))),
]


@pytest.mark.parametrize(("expr", "expected"), SIMPLIFIED, ids=[str(e) for _, e in SIMPLIFIED])
def test_simplification(expr: BooleanExpression, expected: BooleanExpression) -> None:
    assert expr == expected


# -- binding -------------------------------------------------------------------------------

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "Name", STRING, required=False),
    NestedField(3, "i", INT, required=False),
    NestedField(4, "x", DOUBLE, required=False),
    NestedField(5, "loc", StructType(
        NestedField(6, "lat", DOUBLE, required=False),
        NestedField(7, "inner", StructType(NestedField(8, "d", DATE, required=False)),
                    required=False),
    ), required=False),
    NestedField(9, "ts", TIMESTAMPTZ, required=False),
    NestedField(10, "price", DecimalType(9, 2), required=False),
)

BOUND: list[tuple[str, bool, str]] = [
    ("id = 5", True, "id = 5"),
    ("Name = 'a'", True, "Name = 'a'"),
    ("name = 'a'", False, "Name = 'a'"),
    ("NAME starts with 'a'", False, "Name STARTS WITH 'a'"),
    ("loc.lat > 1", True, "loc.lat > 1.0"),
    ("loc.inner.d > '2024-01-01'", True, "loc.inner.d > DATE '2024-01-01'"),
    ("LOC.Inner.D IS NULL", False, "loc.inner.d IS NULL"),
    ("i < 3000000000", True, "TRUE"),
    ("i <= 3000000000", True, "TRUE"),
    ("i != 3000000000", True, "TRUE"),
    ("i > 3000000000", True, "FALSE"),
    ("i = 3000000000", True, "FALSE"),
    ("i > -3000000000", True, "TRUE"),
    ("i < -3000000000", True, "FALSE"),
    ("i IN (1, 3000000000)", True, "i = 1"),
    ("i IN (4000000000, 3000000000)", True, "FALSE"),
    ("i NOT IN (4000000000, 3000000000)", True, "TRUE"),
    ("id IS NULL", True, "FALSE"),
    ("id IS NOT NULL", True, "TRUE"),
    ("x IS NAN", True, "x IS NAN"),
    ("price > 1.5", True, "price > 1.50"),
    ("ts > '2024-01-01 00:00:00'", True, "ts > TIMESTAMP '2024-01-01T00:00:00+00:00'"),
    ("ts > DATE '2024-01-01'", True, "ts > TIMESTAMP '2024-01-01T00:00:00+00:00'"),
]


@pytest.mark.parametrize(("text", "case_sensitive", "expected"), BOUND,
                         ids=[b[0] for b in BOUND])
def test_bind(text: str, case_sensitive: bool, expected: str) -> None:
    assert str(bind(SCHEMA, parse_filter(text), case_sensitive)) == expected


def test_bound_reference_has_field_and_accessor() -> None:
    bound = bind(SCHEMA, parse_filter("loc.inner.d IS NULL"))
    assert isinstance(bound, IsNull)
    ref = bound.term
    assert isinstance(ref, BoundReference)
    assert ref.field_id == 8
    assert ref.type == DATE
    assert ref.accessor.positions == (4, 1, 0)
    assert ref.accessor.get((1, "n", 2, 0.0, (1.0, (5,)), None, None)) == 5
    assert ref.accessor.get({"loc": {"inner": None}}) is None
    assert bind(SCHEMA, bound) == bound


BIND_ERRORS: list[tuple[str, bool, str]] = [
    ("idd = 1", True, "unknown column 'idd'; did you mean 'id'?"),
    ("name = 'a'", True, "unknown column 'name'; did you mean 'Name'?"),
    ("loc.latt > 1", True, "did you mean 'loc.lat'?"),
    ("zzzzzz = 1", True, "columns: Name, i, id"),
    ("id = 'abc'", True, "cannot compare id (long) with 'abc'"),
    ("x = 'abc'", True, "cannot compare x (double)"),
    ("id IS NAN", True, "IS NAN needs float or double"),
    ("id STARTS WITH 'a'", True, "STARTS WITH needs a string"),
    ("loc IS NULL", True, "not a primitive type"),
    ("price = 1.234", True, "more fraction digits"),
    ("ts > DATE '2024-01-01' AND id IN (1, 'x')", True, "cannot compare id (long) with 'x'"),
]


@pytest.mark.parametrize(("text", "case_sensitive", "message"), BIND_ERRORS,
                         ids=[b[0] for b in BIND_ERRORS])
def test_bind_errors(text: str, case_sensitive: bool, message: str) -> None:
    with pytest.raises(ValidationError, match=None) as info:
        bind(SCHEMA, parse_filter(text), case_sensitive)
    assert message in str(info.value)
