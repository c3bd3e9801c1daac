"""The filter parser: every construct, precedence, literals, errors with positions."""

from __future__ import annotations

from decimal import Decimal

import pytest

from floe.errors import ValidationError
from floe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
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
    LongLiteral,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    TimestampLiteral,
    parse_filter,
)
from floe.types import TIMESTAMP, TIMESTAMPTZ

PARSED: list[tuple[str, BooleanExpression]] = [
    ("id = 5", EqualTo("id", 5)),
    ("id == 5", EqualTo("id", 5)),
    ("id != 5", NotEqualTo("id", 5)),
    ("id <> 5", NotEqualTo("id", 5)),
    ("id < 5", LessThan("id", 5)),
    ("id <= 5", LessThanOrEqual("id", 5)),
    ("id > 5", GreaterThan("id", 5)),
    ("id >= -5", GreaterThanOrEqual("id", -5)),
    ("5 < id", GreaterThan("id", 5)),
    ("5 >= id", LessThanOrEqual("id", 5)),
    ("id IN (1, 2, 3)", In("id", [1, 2, 3])),
    ("id in (1)", EqualTo("id", 1)),
    ("id NOT IN (1, 2)", NotIn("id", [1, 2])),
    ("id not in (7)", NotEqualTo("id", 7)),
    ("id IS NULL", IsNull("id")),
    ("id IS NOT NULL", NotNull("id")),
    ("x IS NAN", IsNaN("x")),
    ("x is not nan", NotNaN("x")),
    ("s STARTS WITH 'ab'", StartsWith("s", "ab")),
    ("s NOT STARTS WITH 'ab'", NotStartsWith("s", "ab")),
    ("s = 'it''s'", EqualTo("s", "it's")),
    ("s = ''", EqualTo("s", "")),
    ("x = 1.50", EqualTo("x", DecimalLiteral(Decimal("1.50")))),
    ("x = 1e3", EqualTo("x", DoubleLiteral(1000.0))),
    ("x = -2.5E-1", EqualTo("x", DoubleLiteral(-0.25))),
    ("b = TRUE", EqualTo("b", True)),
    ("b = false", EqualTo("b", False)),
    ("d = DATE '2024-01-01'", EqualTo("d", DateLiteral(19723))),
    ("d < DATE '1969-12-31'", LessThan("d", DateLiteral(-1))),
    ("ts > TIMESTAMP '2024-01-01 10:00:00'",
     GreaterThan("ts", TimestampLiteral(1704103200000000, TIMESTAMP))),
    ("ts > TIMESTAMP '2024-01-01T10:00:00.5+02:00'",
     GreaterThan("ts", TimestampLiteral(1704096000500000, TIMESTAMPTZ))),
    ("ts > TIMESTAMP '2024-01-01'", GreaterThan("ts", TimestampLiteral(1704067200000000))),
    ('"col name" = 1', EqualTo("col name", 1)),
    ('"a""b" = 1', EqualTo('a"b', 1)),
    ("`select` = 1", EqualTo("select", 1)),
    ("loc.lat > 1", GreaterThan("loc.lat", 1)),
    ('loc."the lat" > 1', GreaterThan("loc.the lat", 1)),
    ("TRUE", AlwaysTrue()),
    ("false", AlwaysFalse()),
    ("NOT TRUE", AlwaysFalse()),
    ("NOT id = 1", NotEqualTo("id", 1)),
    ("NOT NOT id = 1", EqualTo("id", 1)),
    ("NOT (id < 1 OR s IS NULL)", And(GreaterThanOrEqual("id", 1), NotNull("s"))),
    ("a = 1 AND b = 2", And(EqualTo("a", 1), EqualTo("b", 2))),
    ("a = 1 OR b = 2", Or(EqualTo("a", 1), EqualTo("b", 2))),
    # AND binds tighter than OR, NOT tighter than AND
    ("a = 1 OR b = 2 AND c = 3", Or(EqualTo("a", 1), And(EqualTo("b", 2), EqualTo("c", 3)))),
    ("a = 1 AND b = 2 OR c = 3", Or(And(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3))),
    ("NOT a = 1 AND b = 2", And(NotEqualTo("a", 1), EqualTo("b", 2))),
    ("NOT (a = 1 AND b = 2)", Or(NotEqualTo("a", 1), NotEqualTo("b", 2))),
    ("(a = 1 OR b = 2) AND c = 3", And(Or(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3))),
    ("a = 1 AND TRUE", EqualTo("a", 1)),
    ("a = 1 OR TRUE", AlwaysTrue()),
    ("  a=1  and(b=2)", And(EqualTo("a", 1), EqualTo("b", 2))),
]


@pytest.mark.parametrize(("text", "expected"), PARSED, ids=[t for t, _ in PARSED])
def test_parse(text: str, expected: BooleanExpression) -> None:
    assert parse_filter(text) == expected


@pytest.mark.parametrize("text", [t for t, _ in PARSED])
def test_str_parses_back(text: str) -> None:
    """``str`` is a fixpoint of parse (doubles print plainly and come back as decimals)."""
    expr = parse_filter(text)
    assert str(parse_filter(str(expr))) == str(expr)


def test_integers_are_longs() -> None:
    expr = parse_filter("id = 5")
    assert isinstance(expr, EqualTo)
    assert expr.literal == LongLiteral(5)


ERRORS: list[tuple[str, int, str]] = [
    ("", 1, "expected a predicate"),
    ("id >", 5, "expected a value"),
    ("id = 1 id", 8, "expected AND, OR or the end"),
    ("(id = 1", 8, "expected ')'"),
    ("id IN ()", 8, "expected a value"),
    ("id IN (1, 2", 12, "expected ')'"),
    ("id IS 5", 7, "expected NULL or NAN"),
    ("id NOT 5", 8, "expected IN or STARTS WITH"),
    ("s STARTS 'a'", 10, "expected WITH"),
    ("s STARTS WITH 5", 15, "expected a string"),
    ("id # 1", 4, "unexpected character '#'"),
    ("s = 'open", 5, "unexpected character"),
    ("id 5", 4, "expected an operator"),
    ("d = DATE '2024-13-01'", 10, "invalid month"),
    ("d = DATE 5", 10, "expected a quoted date"),
    ("a = 1 AND", 10, "expected a column name"),
    ("5 = 6", 5, "expected a column name"),
    ("= 5", 1, "expected a column name"),
]


@pytest.mark.parametrize(("text", "position", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_point_at_the_position(text: str, position: int, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_filter(text)
    lines = str(info.value).split("\n")
    assert f"position {position}:" in lines[0]
    assert message in lines[0]
    assert lines[1] == f"  {text}"
    assert lines[2] == "  " + " " * (position - 1) + "^"
