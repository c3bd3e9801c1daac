"""Projections of row filters onto partition values, and residuals (spec "Scan Planning").

An *inclusive* projection ``P'`` of a row predicate ``P`` through a transform is true for
every partition that may hold a row matching ``P``; a *strict* projection is true only for
partitions in which every row matches ``P``. The rules are Java's ``ProjectionUtil`` and the
``project`` / ``projectStrict`` methods of each transform, including the correction for
temporal values before 1970 (``fixInclusiveTimeProjection`` / ``fixStrictTimeProjection``):
Java writers before 1.0 rounded negative timestamps towards zero, so for a negative projected
value the neighbour ``v + 1`` is matched too (not for ``day`` of a date, as in Java's
``Dates.DAY``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from floe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    bind,
    map_leaves,
)
from floe.expressions.literals import Literal
from floe.expressions.visitors import compile_explained, evaluator, row_predicate, show_value
from floe.partitioning import PartitionField, PartitionSpec
from floe.schema import Schema
from floe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)
from floe.types import DateType, DecimalType, IntegerType, LongType, PrimitiveType, StringType

__all__ = [
    "inclusive_projection", "partition_evaluator", "partition_evaluator_explain",
    "partition_schema", "project", "residual_evaluator", "strict_projection",
]

Projected = BooleanExpression | None
_TEMPORAL = (YearTransform, MonthTransform, DayTransform, HourTransform)


def partition_schema(spec: PartitionSpec, schema: Schema) -> Schema:
    """The partition tuple of ``spec`` as a schema, to bind projected expressions with."""
    return Schema(*spec.partition_type(schema).fields)


def project(transform: Transform, name: str, pred: Predicate, strict: bool) -> Projected:
    """One bound predicate projected through one transform onto partition field ``name``;
    None when there is no projection (inclusive: always true, strict: always false)."""
    if isinstance(transform, IdentityTransform):
        return _rename(pred, name)
    source = pred.ref.type
    if not transform.can_transform(source):
        return None  # void, unknown transforms
    if isinstance(pred, UnaryPredicate):
        return type(pred)(Reference(name))
    f = transform.transform(source)
    rt = transform.result_type(source)
    if isinstance(transform, BucketTransform):
        return _bucket(pred, name, f, rt, strict)
    if isinstance(transform, TruncateTransform):
        if isinstance(source, (IntegerType, LongType, DecimalType)):
            return _numeric(pred, name, f, rt, _step(source), strict)
        return _truncate_array(pred, name, f, rt, transform.width, strict,
                               isinstance(source, StringType))
    if isinstance(transform, _TEMPORAL):
        projected = _numeric(pred, name, f, rt, 1, strict)
        if isinstance(transform, DayTransform) and isinstance(source, DateType):
            return projected  # day(date) is the identity: Java's Dates.DAY needs no fix
        return _fix_strict(projected) if strict else _fix_inclusive(projected)
    return None


def _rename(pred: Predicate, name: str) -> BooleanExpression:
    ref = Reference(name)
    if isinstance(pred, UnaryPredicate):
        return type(pred)(ref)
    if isinstance(pred, SetPredicate):
        return In(ref, pred.ordered) if isinstance(pred, In) else NotIn(ref, pred.ordered)
    assert isinstance(pred, LiteralPredicate)
    return type(pred)(ref, pred.literal)


def _step(t: PrimitiveType) -> Any:
    return Decimal(1).scaleb(-t.scale) if isinstance(t, DecimalType) else 1


def _lits(values: Iterable[Any], rt: PrimitiveType) -> list[Literal]:
    return [Literal(v, rt) for v in values]


def _mapped(f: Callable[[Any], Any], pred: SetPredicate) -> Iterable[Any]:
    """The transformed values of an IN list, in its order, each once."""
    return dict.fromkeys(f(lit.value) for lit in pred.ordered)


def _bucket(pred: Predicate, name: str, f: Callable[[Any], Any], rt: PrimitiveType,
            strict: bool) -> Projected:
    ref = Reference(name)
    if not strict:
        if isinstance(pred, EqualTo):
            return EqualTo(ref, Literal(f(pred.literal.value), rt))
        if isinstance(pred, In):
            return In(ref, _lits(_mapped(f, pred), rt))
        return None
    if isinstance(pred, NotEqualTo):
        return NotEqualTo(ref, Literal(f(pred.literal.value), rt))
    if isinstance(pred, NotIn):
        return NotIn(ref, _lits(_mapped(f, pred), rt))
    return None


def _numeric(pred: Predicate, name: str, f: Callable[[Any], Any], rt: PrimitiveType,
             one: Any, strict: bool) -> Projected:
    """Java's truncateInteger / truncateLong / truncateDecimal (and the strict variants)."""
    ref = Reference(name)

    def lit(v: Any) -> Literal:
        return Literal(f(v), rt)

    if isinstance(pred, SetPredicate):
        if isinstance(pred, In) and not strict or isinstance(pred, NotIn) and strict:
            return type(pred)(ref, _lits(_mapped(f, pred), rt))
        return None
    if not isinstance(pred, LiteralPredicate):
        return None
    v = pred.literal.value
    if not strict:
        if isinstance(pred, LessThan):
            return LessThanOrEqual(ref, lit(v - one))
        if isinstance(pred, LessThanOrEqual):
            return LessThanOrEqual(ref, lit(v))
        if isinstance(pred, GreaterThan):
            return GreaterThanOrEqual(ref, lit(v + one))
        if isinstance(pred, GreaterThanOrEqual):
            return GreaterThanOrEqual(ref, lit(v))
        if isinstance(pred, EqualTo):
            return EqualTo(ref, lit(v))
        return None
    if isinstance(pred, LessThan):
        return LessThan(ref, lit(v))
    if isinstance(pred, LessThanOrEqual):
        return LessThan(ref, lit(v + one))
    if isinstance(pred, GreaterThan):
        return GreaterThan(ref, lit(v))
    if isinstance(pred, GreaterThanOrEqual):
        return GreaterThan(ref, lit(v - one))
    if isinstance(pred, NotEqualTo):
        return NotEqualTo(ref, lit(v))
    return None


def _truncate_array(pred: Predicate, name: str, f: Callable[[Any], Any], rt: PrimitiveType,
                    width: int, strict: bool, is_string: bool) -> Projected:
    """Java's truncateArray(Strict) plus TruncateString's STARTS WITH rules."""
    ref = Reference(name)
    if isinstance(pred, SetPredicate):
        if isinstance(pred, In) and not strict or isinstance(pred, NotIn) and strict:
            return type(pred)(ref, _lits(_mapped(f, pred), rt))
        return None
    if not isinstance(pred, LiteralPredicate):
        return None
    v = pred.literal.value
    t = Literal(f(v), rt)
    if isinstance(pred, (StartsWith, NotStartsWith)):
        whole = Literal(v, rt)
        if len(v) < width:
            return type(pred)(ref, whole)
        if len(v) == width:
            return EqualTo(ref, whole) if isinstance(pred, StartsWith) else NotEqualTo(ref, whole)
        if isinstance(pred, StartsWith):
            return None if strict else StartsWith(ref, t)
        return NotStartsWith(ref, t) if strict else None
    if not strict:
        if isinstance(pred, (LessThan, LessThanOrEqual)):
            return LessThanOrEqual(ref, t)
        if isinstance(pred, (GreaterThan, GreaterThanOrEqual)):
            return GreaterThanOrEqual(ref, t)
        if isinstance(pred, EqualTo):
            return EqualTo(ref, t)
        return None
    if isinstance(pred, (LessThan, LessThanOrEqual)):
        return LessThan(ref, t)
    if isinstance(pred, (GreaterThan, GreaterThanOrEqual)):
        return GreaterThan(ref, t)
    if isinstance(pred, NotEqualTo):
        return NotEqualTo(ref, t)
    return None


def _with_neighbours(pred: SetPredicate) -> list[Literal]:
    """The IN list with each negative value followed by the next (in the list's order)."""
    out: list[Literal] = []
    for lit in pred.ordered:
        out.append(lit)
        if lit.value < 0:
            out.append(Literal(lit.value + 1, lit.type))
    return out


def _fix_inclusive(p: Projected) -> Projected:
    """Java ProjectionUtil.fixInclusiveTimeProjection."""
    if isinstance(p, (LessThan, LessThanOrEqual)):
        lit = p.literal
        return type(p)(p.term, Literal(lit.value + 1, lit.type)) if lit.value < 0 else p
    if isinstance(p, EqualTo):
        lit = p.literal
        if lit.value < 0:
            return In(p.term, [lit, Literal(lit.value + 1, lit.type)])
        return p
    if isinstance(p, In):
        return In(p.term, _with_neighbours(p))
    if isinstance(p, (NotEqualTo, NotIn)):
        return None
    return p


def _fix_strict(p: Projected) -> Projected:
    """Java ProjectionUtil.fixStrictTimeProjection."""
    if isinstance(p, (GreaterThan, GreaterThanOrEqual)):
        lit = p.literal
        return type(p)(p.term, Literal(lit.value + 1, lit.type)) if lit.value <= 0 else p
    if isinstance(p, NotEqualTo):
        lit = p.literal
        if lit.value < 0:
            return NotIn(p.term, [lit, Literal(lit.value + 1, lit.type)])
        return p
    if isinstance(p, NotIn):
        return NotIn(p.term, _with_neighbours(p))
    if isinstance(p, (EqualTo, In)):
        return None
    return p


class _Projection:
    def __init__(self, schema: Schema, spec: PartitionSpec, case_sensitive: bool,
                 strict: bool) -> None:
        self.schema, self.spec, self.strict = schema, spec, strict
        self.case_sensitive = case_sensitive
        self.by_source: dict[int, list[PartitionField]] = {}
        for pf in spec.fields:
            self.by_source.setdefault(pf.source_id, []).append(pf)

    def __call__(self, expr: BooleanExpression) -> BooleanExpression:
        return self.visit(bind(self.schema, expr, self.case_sensitive))

    def visit(self, bound: BooleanExpression) -> BooleanExpression:
        return map_leaves(bound, self.leaf)

    def leaf(self, e: BooleanExpression) -> BooleanExpression:
        if isinstance(e, Predicate):
            result: BooleanExpression = AlwaysFalse() if self.strict else AlwaysTrue()
            for pf in self.by_source.get(e.ref.field_id, ()):
                p = project(pf.transform, pf.name, e, self.strict)
                if p is not None:
                    result = Or(result, p) if self.strict else And(result, p)
            return result
        return e


def inclusive_projection(schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
                         ) -> Callable[[BooleanExpression], BooleanExpression]:
    """Row filter → unbound filter over partition fields, true for every partition that
    may hold a matching row (partition fields of one source are ANDed)."""
    return _Projection(schema, spec, case_sensitive, strict=False)


def strict_projection(schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
                      ) -> Callable[[BooleanExpression], BooleanExpression]:
    """Row filter → unbound filter over partition fields, true only for partitions whose
    rows all match (partition fields of one source are ORed)."""
    return _Projection(schema, spec, case_sensitive, strict=True)


def partition_evaluator(schema: Schema, spec: PartitionSpec, expr: BooleanExpression,
                        case_sensitive: bool = True) -> Callable[[tuple[Any, ...]], bool]:
    """Whether a partition tuple (``DataFile.partition``) may hold rows matching ``expr``."""
    projected = inclusive_projection(schema, spec, case_sensitive)(expr)
    return evaluator(partition_schema(spec, schema), projected)


def partition_evaluator_explain(
    schema: Schema, spec: PartitionSpec, expr: BooleanExpression, case_sensitive: bool = True
) -> Callable[[tuple[Any, ...]], tuple[bool, str]]:
    """Like :func:`partition_evaluator`, answering ``(kept, reason)``."""
    projected = inclusive_projection(schema, spec, case_sensitive)(expr)
    bound = bind(partition_schema(spec, schema), projected)

    def leaf(p: Predicate) -> Callable[[Any], str | None]:
        get = p.ref.accessor.getter()
        t = p.ref.type
        row_test = row_predicate(p)
        return lambda part: None if row_test(part) else (
            f"pruned: partition {p.ref.name} = {show_value(t, get(part))} fails {p}")

    return compile_explained(bound, leaf, False, lambda p: f"kept: partition matches {p}")


# -- residuals -----------------------------------------------------------------------------


def residual_evaluator(
    spec: PartitionSpec, expr: BooleanExpression, schema: Schema, case_sensitive: bool = True
) -> Callable[[tuple[Any, ...]], BooleanExpression]:
    """Partition tuple → what rows of that partition still have to pass (Java
    ``ResidualEvaluator``): a predicate is ``AlwaysTrue`` where its strict projection holds
    for the partition, ``AlwaysFalse`` where its inclusive projection fails, else kept."""
    bound = bind(schema, expr, case_sensitive)
    if spec.is_unpartitioned:
        return lambda partition: bound
    pschema = partition_schema(spec, schema)
    by_source: dict[int, list[PartitionField]] = {}
    for pf in spec.fields:
        by_source.setdefault(pf.source_id, []).append(pf)

    def build(e: BooleanExpression) -> Callable[[tuple[Any, ...]], BooleanExpression]:
        if isinstance(e, And):
            lf, rf = build(e.left), build(e.right)
            return lambda part: And(lf(part), rf(part))
        if isinstance(e, Or):
            lf, rf = build(e.left), build(e.right)
            return lambda part: Or(lf(part), rf(part))
        if not isinstance(e, Predicate):
            return lambda part: e
        pred: Predicate = e
        checks: list[tuple[Callable[[Any], bool], Callable[[Any], bool]]] = []
        for pf in by_source.get(pred.ref.field_id, ()):
            s = project(pf.transform, pf.name, pred, strict=True)
            i = project(pf.transform, pf.name, pred, strict=False)
            checks.append((evaluator(pschema, s if s is not None else AlwaysFalse()),
                           evaluator(pschema, i if i is not None else AlwaysTrue())))
        if not checks:
            return lambda part: pred

        def residual(part: tuple[Any, ...]) -> BooleanExpression:
            for must, may in checks:
                if must(part):
                    return AlwaysTrue()
                if not may(part):
                    return AlwaysFalse()
            return pred

        return residual

    return build(bound)
