"""Compiling a bound expression into closures, and the row evaluator.

Every evaluator of this package is a visitor that runs once over the bound expression and
returns closures; evaluating an input then allocates nothing shared, so one compiled
evaluator serves any number of threads (STYLE "Expressions: unbound → bound → visited").

A *leaf* of an evaluator over statistics returns ``None`` when the statistics do not decide
the predicate, or a reason string when they do (for inclusive evaluators: the rows cannot
match; for strict ones: all rows must match). :func:`compile_decisions` turns leaves into a
``bool`` evaluator; :func:`compile_explained` into one answering ``(bool, reason)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from floe.errors import ValidationError
from floe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    SetPredicate,
    StartsWith,
    bind,
)
from floe.expressions.literals import Literal
from floe.schema import Schema
from floe.types import PrimitiveType

__all__ = [
    "Decision", "compile_decisions", "compile_explained", "evaluator", "evaluator_explain",
    "row_predicate", "show_value",
]

#: a compiled leaf: None when undecided, else the reason of the decision
Decision = Callable[[Any], str | None]


def show_value(t: PrimitiveType, value: Any) -> str:
    """A value as it is written in a filter (``42``, ``'abc'``, ``DATE '2024-01-01'``)."""
    if value is None:
        return "null"
    try:
        return str(Literal(value, t))
    except (ValidationError, ValueError, TypeError):
        return repr(value)


def compile_decisions(
    expr: BooleanExpression, leaf: Callable[[Predicate], Decision], decides: bool
) -> Callable[[Any], bool]:
    """A bool evaluator: a leaf's reason means ``decides``, None means ``not decides``."""

    def build(e: BooleanExpression) -> Callable[[Any], bool]:
        if isinstance(e, AlwaysTrue):
            return lambda x: True
        if isinstance(e, AlwaysFalse):
            return lambda x: False
        if isinstance(e, And):
            lf, rf = build(e.left), build(e.right)
            return lambda x: lf(x) and rf(x)
        if isinstance(e, Or):
            lf, rf = build(e.left), build(e.right)
            return lambda x: lf(x) or rf(x)
        if isinstance(e, Predicate):
            fn = leaf(e)
            if decides:
                return lambda x: fn(x) is not None
            return lambda x: fn(x) is None
        raise ValidationError(f"cannot evaluate {e!r}")

    return build(expr)


def compile_explained(
    expr: BooleanExpression,
    leaf: Callable[[Predicate], Decision],
    decides: bool,
    undecided: Callable[[Predicate], str],
) -> Callable[[Any], tuple[bool, str]]:
    """Like :func:`compile_decisions`, answering ``(result, reason)``."""

    def build(e: BooleanExpression) -> Callable[[Any], tuple[bool, str]]:
        if isinstance(e, AlwaysTrue):
            return lambda x: (True, "the filter is always true")
        if isinstance(e, AlwaysFalse):
            return lambda x: (False, "the filter is always false")
        if isinstance(e, And):
            return _and(build(e.left), build(e.right))
        if isinstance(e, Or):
            return _or(build(e.left), build(e.right))
        if isinstance(e, Predicate):
            fn = leaf(e)
            text = undecided(e)

            def one(x: Any) -> tuple[bool, str]:
                why = fn(x)
                return (decides, why) if why is not None else (not decides, text)

            return one
        raise ValidationError(f"cannot evaluate {e!r}")

    return build(expr)


def _and(lf: Callable[[Any], tuple[bool, str]], rf: Callable[[Any], tuple[bool, str]]
         ) -> Callable[[Any], tuple[bool, str]]:
    def both(x: Any) -> tuple[bool, str]:
        a, why_a = lf(x)
        if not a:
            return False, why_a
        b, why_b = rf(x)
        return (True, f"{why_a}; {why_b}") if b else (False, why_b)

    return both


def _or(lf: Callable[[Any], tuple[bool, str]], rf: Callable[[Any], tuple[bool, str]]
        ) -> Callable[[Any], tuple[bool, str]]:
    def either(x: Any) -> tuple[bool, str]:
        a, why_a = lf(x)
        if a:
            return True, why_a
        b, why_b = rf(x)
        return (True, why_b) if b else (False, f"{why_a}; and {why_b}")

    return either


# -- the row evaluator ---------------------------------------------------------------------


def row_predicate(p: Predicate) -> Callable[[Any], bool]:
    """One bound predicate as a test of a row."""
    get = p.ref.accessor.getter()
    if isinstance(p, IsNull):
        return lambda r: get(r) is None
    if isinstance(p, NotNull):
        return lambda r: get(r) is not None
    if isinstance(p, IsNaN):
        return lambda r: (v := get(r)) is not None and v != v
    if isinstance(p, NotNaN):
        return lambda r: (v := get(r)) is None or v == v
    if isinstance(p, SetPredicate):
        values = p.values
        if isinstance(p, In):
            return lambda r: (v := get(r)) is not None and v in values
        return lambda r: (v := get(r)) is None or v not in values
    assert isinstance(p, LiteralPredicate)
    lit = p.literal.value
    if isinstance(p, EqualTo):
        return lambda r: (v := get(r)) is not None and v == lit
    if isinstance(p, NotEqualTo):
        return lambda r: (v := get(r)) is None or v != lit
    if isinstance(p, LessThan):
        return lambda r: (v := get(r)) is not None and v < lit
    if isinstance(p, LessThanOrEqual):
        return lambda r: (v := get(r)) is not None and v <= lit
    if isinstance(p, GreaterThan):
        return lambda r: (v := get(r)) is not None and v > lit
    if isinstance(p, GreaterThanOrEqual):
        return lambda r: (v := get(r)) is not None and v >= lit
    if isinstance(p, StartsWith):
        return lambda r: (v := get(r)) is not None and v.startswith(lit)
    if isinstance(p, NotStartsWith):
        return lambda r: (v := get(r)) is None or not v.startswith(lit)
    raise ValidationError(f"cannot evaluate {p!r}")


def _compile_rows(expr: BooleanExpression) -> Callable[[Any], bool]:
    if isinstance(expr, AlwaysTrue):
        return lambda r: True
    if isinstance(expr, AlwaysFalse):
        return lambda r: False
    if isinstance(expr, And):
        lf, rf = _compile_rows(expr.left), _compile_rows(expr.right)
        return lambda r: lf(r) and rf(r)
    if isinstance(expr, Or):
        lf, rf = _compile_rows(expr.left), _compile_rows(expr.right)
        return lambda r: lf(r) or rf(r)
    if isinstance(expr, Predicate):
        return row_predicate(expr)
    raise ValidationError(f"cannot evaluate {expr!r}")


def evaluator(
    schema: Schema, expr: BooleanExpression, case_sensitive: bool = True
) -> Callable[[Any], bool]:
    """Whether a row matches: rows are tuples in schema order (nested structs as tuples)
    or mappings by field name. Null and NaN satisfy only IS NULL / IS NAN and the negative
    predicates (``!=``, ``NOT IN``, ``NOT STARTS WITH``, ``IS NOT NAN``)."""
    return _compile_rows(bind(schema, expr, case_sensitive))


def evaluator_explain(
    schema: Schema, expr: BooleanExpression, case_sensitive: bool = True
) -> Callable[[Any], tuple[bool, str]]:
    """Like :func:`evaluator`, answering ``(matches, reason)`` naming the deciding value."""

    def leaf(p: Predicate) -> Decision:
        test = row_predicate(p)
        get = p.ref.accessor.getter()
        t = p.ref.type
        name = p.ref.name
        return lambda r: None if test(r) else f"{p} is false: {name} = {show_value(t, get(r))}"

    return compile_explained(bind(schema, expr, case_sensitive), leaf, False,
                             lambda p: f"{p} is true")
