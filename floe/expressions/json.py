"""Expressions as JSON: the REST catalog's ``Predicate`` model (rest-catalog-open-api.yaml,
``Predicate`` / ``ComparisonPredicate`` / ``SetPredicate`` / ``UnaryPredicate``), the form
``planTableScan`` filters, file scan tasks' residuals and scan reports carry.

Read: ``true`` / ``false`` (and the deprecated ``{"type": "true"}``), ``and`` / ``or`` with
``left`` and ``right``, ``not`` with ``child``, and predicates in both the form Java 1.10
writes (``term`` a column name, ``value`` / ``values``) and the newer one (``child`` or
``left`` a ``{"type": "reference", "name": ...}``, ``right`` a literal). A literal is a bare
JSON value or ``{"type": "literal", "value": ...}``; values are converted to the column's type
when the expression is bound, as Java's ``SingleValueParser`` would read them. Transforms and
function applications are refused (floe filters name columns).

Written: the form Java's ``ExpressionParser`` writes (``term`` / ``value`` / ``values``, ``true``
and ``false`` bare), literal values in the spec's JSON single-value encoding of their type.
"""

from __future__ import annotations

from typing import Any

from floe.conversions import to_json_value
from floe.errors import FilterInvalid
from floe.expressions.base import (
    MAX_DEPTH,
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
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    too_deep,
)
from floe.expressions.literals import Literal
from floe.schema import Schema

__all__ = ["expression_from_json", "expression_to_json"]

_UNARY: dict[str, type[UnaryPredicate]] = {
    "is-null": IsNull, "not-null": NotNull, "is-nan": IsNaN, "not-nan": NotNaN}
_COMPARISON: dict[str, type[LiteralPredicate]] = {
    "lt": LessThan, "lt-eq": LessThanOrEqual, "gt": GreaterThan, "gt-eq": GreaterThanOrEqual,
    "eq": EqualTo, "not-eq": NotEqualTo, "starts-with": StartsWith,
    "not-starts-with": NotStartsWith}
_SET: dict[str, Any] = {"in": In, "not-in": NotIn}
#: floe's ``op`` of each predicate class → the spec's type name.
_TYPE_OF: dict[str, str] = {cls.op: name for name, cls in
                            (*_UNARY.items(), *_COMPARISON.items(), *_SET.items())}


def expression_from_json(obj: Any, schema: Schema | None = None) -> BooleanExpression:
    """The unbound expression of a JSON ``Predicate``. ``schema`` resolves references by
    field id (``{"type": "reference", "id": N}``). Raises :class:`~floe.errors.FilterInvalid`
    naming what is wrong (and :class:`~floe.errors.FilterTooDeep` past
    :data:`~floe.expressions.base.MAX_DEPTH` levels)."""
    return _Reader(schema).expr(obj, 0)


class _Reader:
    def __init__(self, schema: Schema | None) -> None:
        self.schema = schema

    def expr(self, obj: Any, level: int) -> BooleanExpression:
        if level > MAX_DEPTH:
            raise too_deep()
        if isinstance(obj, bool):
            return AlwaysTrue() if obj else AlwaysFalse()
        if not isinstance(obj, dict):
            raise FilterInvalid(f"an expression must be true, false or an object, not "
                                f"{_short(obj)}")
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise FilterInvalid(f"expression {_short(obj)} has no string 'type'")
        kind = kind.lower()
        if kind in ("true", "false"):
            return AlwaysTrue() if kind == "true" else AlwaysFalse()
        if kind == "literal" and isinstance(obj.get("value"), bool):
            return AlwaysTrue() if obj["value"] else AlwaysFalse()
        if kind in ("and", "or"):
            left = self.expr(self._field(obj, "left"), level + 1)
            right = self.expr(self._field(obj, "right"), level + 1)
            return And(left, right) if kind == "and" else Or(left, right)
        if kind == "not":
            return Not(self.expr(self._field(obj, "child"), level + 1))
        if kind in _UNARY:
            self._absent(obj, kind, "value", "values", "right")
            return _UNARY[kind](self._term(obj, ("child", "term")))
        if kind in _COMPARISON:
            self._absent(obj, kind, "values")
            name = self._term(obj, ("left", "term"))
            raw = obj["right"] if "right" in obj else obj.get("value", _MISSING)
            if raw is _MISSING:
                raise FilterInvalid(f"{kind} predicate on {name!r} has no value ('value' or "
                                    "'right')")
            return _COMPARISON[kind](name, self._literal(raw, kind))
        if kind in _SET:
            self._absent(obj, kind, "value")
            name = self._term(obj, ("child", "term"))
            values = obj.get("values", _MISSING)
            if isinstance(values, dict) and str(values.get("type", "")).lower() == "literals":
                values = values.get("values", _MISSING)
            if not isinstance(values, list):
                raise FilterInvalid(f"{kind} predicate on {name!r} needs 'values', an array")
            result: BooleanExpression = _SET[kind](
                name, [self._literal(v, kind) for v in values])
            return result
        raise FilterInvalid(f"unknown expression type {kind!r}")

    @staticmethod
    def _field(obj: dict[str, Any], key: str) -> Any:
        if key not in obj:
            raise FilterInvalid(f"{obj.get('type')} expression has no {key!r}")
        return obj[key]

    @staticmethod
    def _absent(obj: dict[str, Any], kind: str, *keys: str) -> None:
        for key in keys:
            if key in obj:
                raise FilterInvalid(f"{kind} predicate has an invalid {key!r} field")

    def _term(self, obj: dict[str, Any], keys: tuple[str, ...]) -> str:
        kind = obj.get("type")
        for key in keys:
            if key in obj:
                return self._reference(obj[key], kind)
        raise FilterInvalid(f"{kind} predicate has no column ({' or '.join(map(repr, keys))})")

    def _reference(self, term: Any, kind: Any) -> str:
        if isinstance(term, str) and term:
            return term
        if isinstance(term, dict):
            what = str(term.get("type", "")).lower()
            if what == "reference":
                name = term.get("name", term.get("term"))
                if isinstance(name, str) and name:
                    return name
                if "id" in term:
                    return self._by_id(term["id"])
            elif what in ("transform", "apply"):
                raise FilterInvalid(f"{kind} predicate on a {what}: floe filters compare "
                                    "columns, not transforms or functions of them")
        raise FilterInvalid(f"{kind} predicate: {_short(term)} is not a column reference")

    def _by_id(self, field_id: Any) -> str:
        if isinstance(field_id, bool) or not isinstance(field_id, int):
            raise FilterInvalid(f"reference id {_short(field_id)} is not an integer")
        name = self.schema.find_column_name(field_id) if self.schema is not None else None
        if name is None:
            raise FilterInvalid(f"reference to field id {field_id}, which the schema does "
                                "not have")
        return name

    @staticmethod
    def _literal(raw: Any, kind: str) -> Any:
        if isinstance(raw, dict):
            if str(raw.get("type", "")).lower() != "literal" or "value" not in raw:
                raise FilterInvalid(f"{kind}: {_short(raw)} is not a literal")
            raw = raw["value"]
        if raw is None or isinstance(raw, dict | list):
            raise FilterInvalid(f"{kind}: {_short(raw)} is not a literal value (null is "
                                "tested with is-null)")
        return raw


_MISSING = object()


def _short(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


def expression_to_json(expr: BooleanExpression | None) -> Any:
    """The JSON ``Predicate`` of a bound or unbound expression (None: ``true``)."""
    if expr is None or isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And | Or):
        return {"type": "and" if isinstance(expr, And) else "or",
                "left": expression_to_json(expr.left), "right": expression_to_json(expr.right)}
    if isinstance(expr, UnaryPredicate):
        return {"type": _TYPE_OF[expr.op], "term": expr.term.name}
    if isinstance(expr, LiteralPredicate):
        return {"type": _TYPE_OF[expr.op], "term": expr.term.name,
                "value": _value_json(expr.literal)}
    if isinstance(expr, SetPredicate):
        return {"type": _TYPE_OF[expr.op], "term": expr.term.name,
                "values": [_value_json(lit) for lit in expr.ordered]}
    raise FilterInvalid(f"cannot write {expr!r} as JSON")


def _value_json(lit: Literal) -> Any:
    return to_json_value(lit.type, lit.value)
