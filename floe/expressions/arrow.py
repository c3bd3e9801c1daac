"""A bound filter as a ``pyarrow.compute.Expression`` for filtering record batches.

Each predicate is made two-valued with Iceberg's semantics (Arrow's comparisons return null
for null inputs): comparisons are false on null, the negative predicates true; NaN compares
false (IEEE, as Arrow does) and is ``!=`` everything.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    StartsWith,
    bind,
)
from floe.schema import Schema
from floe.types import PrimitiveType, UUIDType

__all__ = ["arrow_filter"]


def _scalar(t: PrimitiveType, value: Any) -> pa.Scalar:
    from floe.io.parquet import to_arrow_type

    if isinstance(t, UUIDType):
        value = value.bytes
    arrow_type = to_arrow_type(t)
    if pa.types.is_large_string(arrow_type):
        arrow_type = pa.string()
    elif pa.types.is_large_binary(arrow_type):
        arrow_type = pa.binary()
    return pa.scalar(value, type=arrow_type)


def _leaf(p: Predicate) -> pc.Expression:
    field = pc.field(*p.ref.accessor.names)
    valid, null = field.is_valid(), field.is_null()
    if isinstance(p, IsNull):
        return null
    if isinstance(p, NotNull):
        return valid
    if isinstance(p, IsNaN):
        return pc.is_nan(field) & valid
    if isinstance(p, NotNaN):
        return ~pc.is_nan(field) | null
    t = p.ref.type
    if isinstance(p, (In, NotIn)):
        values = pa.array([_scalar(t, v).as_py() for v in p.values], type=_scalar(
            t, next(iter(p.values))).type)
        hit = field.isin(values)
        return hit & valid if isinstance(p, In) else ~hit | null
    assert isinstance(p, LiteralPredicate)
    if isinstance(p, (StartsWith, NotStartsWith)):
        hit = pc.starts_with(field, pattern=p.literal.value)
        return hit & valid if isinstance(p, StartsWith) else ~hit | null
    lit = _scalar(t, p.literal.value)
    if isinstance(p, EqualTo):
        return (field == lit) & valid
    if isinstance(p, NotEqualTo):
        return (field != lit) | null
    if isinstance(p, LessThan):
        return (field < lit) & valid
    if isinstance(p, LessThanOrEqual):
        return (field <= lit) & valid
    if isinstance(p, GreaterThan):
        return (field > lit) & valid
    if isinstance(p, GreaterThanOrEqual):
        return (field >= lit) & valid
    raise ValidationError(f"cannot filter Arrow data with {p!r}")


def _visit(e: BooleanExpression) -> pc.Expression:
    if isinstance(e, AlwaysTrue):
        return pc.scalar(True)
    if isinstance(e, AlwaysFalse):
        return pc.scalar(False)
    if isinstance(e, And):
        return _visit(e.left) & _visit(e.right)
    if isinstance(e, Or):
        return _visit(e.left) | _visit(e.right)
    if isinstance(e, Predicate):
        return _leaf(e)
    raise ValidationError(f"cannot filter Arrow data with {e!r}")


def arrow_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True
                 ) -> pc.Expression:
    """``expr`` (bound or not) as an Arrow expression over the column names of ``schema``
    (nested fields by their struct path), for ``Table.filter`` / ``Dataset`` scans."""
    return _visit(bind(schema, expr, case_sensitive))
