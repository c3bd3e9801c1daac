"""Boolean expressions: unbound (column names) and bound (fields of one schema).

One predicate class per operation serves both states: ``EqualTo("id", 5)`` is unbound (its
term is a :class:`Reference` and its literal untyped), :func:`bind` returns the same class
with a :class:`BoundReference` and the literal converted to the field's type.

Constructors simplify (STYLE "Expressions: unbound → bound → visited"): ``And(x, AlwaysTrue())``
is ``x``, ``In`` with one value is ``EqualTo``, and ``Not`` pushes down to the leaves (Java's
``RewriteNot``), so evaluators never see a ``Not``.

Semantics of a predicate on one value, as Java's evaluators and metrics evaluators assume:
null and NaN satisfy no comparison (``=``, ``<``, ``IN``, ``STARTS WITH`` ...), and they do
satisfy the negative predicates ``!=``, ``NOT IN``, ``NOT STARTS WITH``.

Depth: every algorithm over an expression (binding, printing, projecting, evaluating) walks
it recursively, once per level. Chains of AND (OR) are therefore built as balanced trees, so
a filter of thousands of terms is only a dozen levels deep, and :data:`MAX_DEPTH` bounds the
rest: :func:`bind` (and :func:`floe.expressions.parse_filter`, which counts parentheses too)
refuse a deeper expression with :class:`~floe.errors.FilterTooDeep`, never a RecursionError.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from floe.errors import FilterInvalid, FilterTooDeep, ValidationError
from floe.expressions.literals import AboveMax, BelowMin, Literal, literal
from floe.schema import Schema, unknown_column
from floe.types import (
    DoubleType,
    FloatType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
)

__all__ = [
    "MAX_DEPTH", "Accessor", "AlwaysFalse", "AlwaysTrue", "And", "BooleanExpression",
    "BoundReference", "EqualTo", "GreaterThan", "GreaterThanOrEqual", "In", "IsNaN", "IsNull",
    "LessThan",
    "LessThanOrEqual", "LiteralPredicate", "Not", "NotEqualTo", "NotIn", "NotNaN", "NotNull",
    "NotStartsWith", "Or", "Predicate", "Reference", "SetPredicate", "StartsWith",
    "UnaryPredicate", "balanced", "bind", "check_depth", "depth", "map_leaves", "rewrite_not",
    "too_deep", "walk_predicates",
]

#: The most levels an expression may nest: parentheses and the AND / OR nodes of its tree
#: (NOT pushes down, it adds none). Each level costs the recursive walks over an expression
#: a few stack frames; 100 levels stay far from Python's recursion limit in any thread,
#: while a balanced chain of 2^99 terms would fit.
MAX_DEPTH = 100

_T = TypeVar("_T")


class BooleanExpression:
    """Base of every expression; ``str()`` gives the filter syntax of the CLI."""

    __slots__ = ()

    def negate(self) -> BooleanExpression:
        raise NotImplementedError

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return And(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return Or(self, other)

    def __invert__(self) -> BooleanExpression:
        return self.negate()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


class AlwaysTrue(BooleanExpression):
    __slots__ = ()
    _instance: ClassVar[AlwaysTrue | None] = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def negate(self) -> BooleanExpression:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "TRUE"


class AlwaysFalse(BooleanExpression):
    __slots__ = ()
    _instance: ClassVar[AlwaysFalse | None] = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def negate(self) -> BooleanExpression:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "FALSE"


class And(BooleanExpression):
    __slots__ = ("left", "right")
    left: BooleanExpression
    right: BooleanExpression

    def __new__(  # type: ignore[misc]
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> BooleanExpression:
        if rest:
            return balanced(And, [left, right, *rest])
        if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(left, AlwaysTrue):
            return right
        if isinstance(right, AlwaysTrue):
            return left
        obj = super().__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("expressions are immutable")

    def negate(self) -> BooleanExpression:
        return Or(self.left.negate(), self.right.negate())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, And) and (self.left, self.right) == (other.left, other.right)

    def __hash__(self) -> int:
        return hash(("and", self.left, self.right))

    def __str__(self) -> str:
        return f"{_paren(self.left, Or)} AND {_paren(self.right, Or)}"


class Or(BooleanExpression):
    __slots__ = ("left", "right")
    left: BooleanExpression
    right: BooleanExpression

    def __new__(  # type: ignore[misc]
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> BooleanExpression:
        if rest:
            return balanced(Or, [left, right, *rest])
        if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(left, AlwaysFalse):
            return right
        if isinstance(right, AlwaysFalse):
            return left
        obj = super().__new__(cls)
        object.__setattr__(obj, "left", left)
        object.__setattr__(obj, "right", right)
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("expressions are immutable")

    def negate(self) -> BooleanExpression:
        return And(self.left.negate(), self.right.negate())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Or) and (self.left, self.right) == (other.left, other.right)

    def __hash__(self) -> int:
        return hash(("or", self.left, self.right))

    def __str__(self) -> str:
        return f"{_paren(self.left, And)} OR {_paren(self.right, And)}"


def _paren(e: BooleanExpression, other: type) -> str:
    return f"({e})" if isinstance(e, other) else str(e)


def balanced(op: Callable[[_T, _T], _T], operands: Iterable[_T]) -> _T:
    """``a AND b AND c AND d`` as ``(a AND b) AND (c AND d)``: a chain of n operands (in
    order; at least one) nests log2(n) levels deep, not n. Built without recursion."""
    level = list(operands)
    while len(level) > 1:
        paired = [op(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def depth(expr: BooleanExpression) -> int:
    """How many AND / OR levels ``expr`` nests (a predicate: 0); without recursion."""
    deepest = 0
    stack: list[tuple[BooleanExpression, int]] = [(expr, 0)]
    while stack:
        e, d = stack.pop()
        if isinstance(e, (And, Or)):
            stack += ((e.left, d + 1), (e.right, d + 1))
        elif d > deepest:
            deepest = d
    return deepest


def too_deep(where: str = "") -> FilterTooDeep:
    """The one error for an expression deeper than :data:`MAX_DEPTH` (one line)."""
    return FilterTooDeep(
        f"the filter nests more than {MAX_DEPTH} levels deep{where} (parentheses, AND, OR);"
        " write it with fewer levels (a long list of terms joined by OR or AND is fine)")


def check_depth(expr: BooleanExpression) -> BooleanExpression:
    """``expr``, or :class:`FilterTooDeep` when it nests deeper than :data:`MAX_DEPTH`."""
    if depth(expr) > MAX_DEPTH:
        raise too_deep()
    return expr


def map_leaves(expr: BooleanExpression, fn: Callable[[BooleanExpression], BooleanExpression]
               ) -> BooleanExpression:
    """``expr`` with each predicate and constant replaced by ``fn(leaf)`` (left to right),
    every chain of ANDs (ORs) rebuilt :func:`balanced`; without recursion, so any depth of
    ``expr`` is walked (the result's depth is checked by the caller)."""
    # One frame per chain being rebuilt: its operator, its operands (the chain flattened),
    # the next operand to visit and the operands rebuilt so far.
    frames: list[tuple[type[And] | type[Or], list[BooleanExpression], list[BooleanExpression]]]
    frames = []

    def chain(e: And | Or) -> list[BooleanExpression]:
        op = type(e)
        out: list[BooleanExpression] = []
        todo: list[BooleanExpression] = [e]
        while todo:
            x = todo.pop()
            if isinstance(x, (And, Or)) and type(x) is op:
                todo += (x.right, x.left)
            else:
                out.append(x)
        return out[::-1]  # popped right to left: reversed for the stack below

    if not isinstance(expr, (And, Or)):
        return fn(expr)
    frames.append((type(expr), chain(expr), []))
    while True:
        op, todo, done = frames[-1]
        if todo:
            e = todo.pop()
            if isinstance(e, (And, Or)):
                frames.append((type(e), chain(e), []))
            else:
                done.append(fn(e))
            continue
        frames.pop()
        rebuilt: BooleanExpression = balanced(op, done)
        if not frames:
            return rebuilt
        frames[-1][2].append(rebuilt)


class Not(BooleanExpression):
    """``Not(x)`` is ``x.negate()``: negation is pushed down to the predicates at once."""

    __slots__ = ()

    def __new__(cls, child: BooleanExpression) -> BooleanExpression:  # type: ignore[misc]
        return child.negate()


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """Java's ``RewriteNot``; a no-op on floe expressions since ``Not`` pushes down."""
    return expr


# -- terms ---------------------------------------------------------------------------------


class Reference:
    """An unbound column reference by (dotted) name."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("references are immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Reference({self.name!r})"

    def __str__(self) -> str:
        return _quote_name(self.name)


def _quote_name(name: str) -> str:
    parts = name.split(".")
    return ".".join(
        p if p.isidentifier() and p.upper() not in _KEYWORDS else '"' + p.replace('"', '""') + '"'
        for p in parts
    )


_KEYWORDS = frozenset(
    "AND OR NOT IN IS NULL NAN STARTS WITH TRUE FALSE DATE TIMESTAMP".split()
)


class Accessor:
    """Reads a (nested) field from a row: a tuple by positions or a mapping by names."""

    __slots__ = ("names", "positions")
    positions: tuple[int, ...]
    names: tuple[str, ...]

    def __init__(self, positions: tuple[int, ...], names: tuple[str, ...]) -> None:
        object.__setattr__(self, "positions", positions)
        object.__setattr__(self, "names", names)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("accessors are immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Accessor) and other.positions == self.positions

    def __hash__(self) -> int:
        return hash(self.positions)

    def __repr__(self) -> str:
        return f"Accessor({self.positions}, {self.names})"

    def get(self, row: Any) -> Any:
        for pos, name in zip(self.positions, self.names, strict=True):
            if row is None:
                return None
            row = row.get(name) if isinstance(row, Mapping) else row[pos]
        return row

    def getter(self) -> Callable[[Any], Any]:
        """A fast reader for this accessor (one closure, used per row)."""
        if len(self.positions) == 1:
            pos, name = self.positions[0], self.names[0]

            def get1(row: Any) -> Any:
                return row.get(name) if isinstance(row, Mapping) else row[pos]

            return get1
        return self.get


class BoundReference:
    """A reference bound to a field of a schema: the field, its full name and an accessor."""

    __slots__ = ("accessor", "field", "name")
    field: NestedField
    accessor: Accessor
    name: str

    def __init__(self, field: NestedField, accessor: Accessor, name: str | None = None) -> None:
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "accessor", accessor)
        object.__setattr__(self, "name", name if name is not None else ".".join(accessor.names))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("references are immutable")

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def type(self) -> PrimitiveType:
        t = self.field.field_type
        assert isinstance(t, PrimitiveType)
        return t

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BoundReference)
            and other.field == self.field
            and other.accessor == self.accessor
        )

    def __hash__(self) -> int:
        return hash((self.field.field_id, self.accessor))

    def __repr__(self) -> str:
        return f"BoundReference({self.field!r}, {self.accessor!r})"

    def __str__(self) -> str:
        return _quote_name(self.name)


Term = Reference | BoundReference


def _term(t: str | Term) -> Term:
    return Reference(t) if isinstance(t, str) else t


# -- predicates ----------------------------------------------------------------------------


class Predicate(BooleanExpression):
    """A test of one column. ``term`` is a :class:`Reference` until bound."""

    __slots__ = ("term",)
    term: Term
    #: Java's operation name (``lt``, ``in`` ...) — used in explanations and JSON
    op: ClassVar[str]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("expressions are immutable")

    @property
    def is_bound(self) -> bool:
        return isinstance(self.term, BoundReference)

    @property
    def ref(self) -> BoundReference:
        """The bound reference (raises on an unbound predicate)."""
        if not isinstance(self.term, BoundReference):
            raise ValidationError(f"predicate {self} is not bound")
        return self.term


class UnaryPredicate(Predicate):
    __slots__ = ()
    _sql: ClassVar[str]
    _negation: ClassVar[type[UnaryPredicate]]

    def __init__(self, term: str | Term) -> None:
        object.__setattr__(self, "term", _term(term))

    def negate(self) -> BooleanExpression:
        return self._negation(self.term)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.term == self.term

    def __hash__(self) -> int:
        return hash((self.op, self.term))

    def __str__(self) -> str:
        return f"{self.term} {self._sql}"


class IsNull(UnaryPredicate):
    __slots__ = ()
    op = "is_null"
    _sql = "IS NULL"


class NotNull(UnaryPredicate):
    __slots__ = ()
    op = "not_null"
    _sql = "IS NOT NULL"


class IsNaN(UnaryPredicate):
    __slots__ = ()
    op = "is_nan"
    _sql = "IS NAN"


class NotNaN(UnaryPredicate):
    __slots__ = ()
    op = "not_nan"
    _sql = "IS NOT NAN"


IsNull._negation = NotNull
NotNull._negation = IsNull
IsNaN._negation = NotNaN
NotNaN._negation = IsNaN


def _check_literal(lit: Literal, pred: str) -> Literal:
    if isinstance(lit.value, float) and math.isnan(lit.value):
        raise FilterInvalid(f"{pred} with NaN is never true: use IS NAN / IS NOT NAN")
    return lit


class LiteralPredicate(Predicate):
    __slots__ = ("literal",)
    literal: Literal
    _sql: ClassVar[str]
    _negation: ClassVar[type[LiteralPredicate]]

    def __init__(self, term: str | Term, value: Any) -> None:
        object.__setattr__(self, "term", _term(term))
        object.__setattr__(self, "literal", _check_literal(literal(value), self._sql))

    def negate(self) -> BooleanExpression:
        return self._negation(self.term, self.literal)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.term == self.term
            and other.literal == self.literal
        )

    def __hash__(self) -> int:
        return hash((self.op, self.term, self.literal))

    def __str__(self) -> str:
        return f"{self.term} {self._sql} {self.literal}"


class EqualTo(LiteralPredicate):
    __slots__ = ()
    op = "eq"
    _sql = "="


class NotEqualTo(LiteralPredicate):
    __slots__ = ()
    op = "not_eq"
    _sql = "!="


class LessThan(LiteralPredicate):
    __slots__ = ()
    op = "lt"
    _sql = "<"


class LessThanOrEqual(LiteralPredicate):
    __slots__ = ()
    op = "lt_eq"
    _sql = "<="


class GreaterThan(LiteralPredicate):
    __slots__ = ()
    op = "gt"
    _sql = ">"


class GreaterThanOrEqual(LiteralPredicate):
    __slots__ = ()
    op = "gt_eq"
    _sql = ">="


class StartsWith(LiteralPredicate):
    __slots__ = ()
    op = "starts_with"
    _sql = "STARTS WITH"


class NotStartsWith(LiteralPredicate):
    __slots__ = ()
    op = "not_starts_with"
    _sql = "NOT STARTS WITH"


EqualTo._negation = NotEqualTo
NotEqualTo._negation = EqualTo
LessThan._negation = GreaterThanOrEqual
GreaterThanOrEqual._negation = LessThan
LessThanOrEqual._negation = GreaterThan
GreaterThan._negation = LessThanOrEqual
StartsWith._negation = NotStartsWith
NotStartsWith._negation = StartsWith


class SetPredicate(Predicate):
    """``IN`` / ``NOT IN``. ``ordered``: the literals in the order they were written, each
    once (what ``str()`` prints); ``literals``: the same as a frozenset and ``values`` the raw
    values (for membership tests). Two predicates with the same values in another order are
    equal."""

    __slots__ = ("literals", "ordered", "values")
    ordered: tuple[Literal, ...]
    literals: frozenset[Literal]
    values: frozenset[Any]
    _sql: ClassVar[str]

    def _init(self, term: Term, lits: tuple[Literal, ...]) -> None:
        object.__setattr__(self, "term", term)
        object.__setattr__(self, "ordered", lits)
        object.__setattr__(self, "literals", frozenset(lits))
        object.__setattr__(self, "values", frozenset(lit.value for lit in lits))

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.term == self.term
            and other.literals == self.literals
        )

    def __hash__(self) -> int:
        return hash((self.op, self.term, self.literals))

    def __str__(self) -> str:
        items = ", ".join(str(lit) for lit in self.ordered)
        return f"{self.term} {self._sql} ({items})"


def _literal_set(values: Iterable[Any], sql: str) -> tuple[Literal, ...]:
    """The values as literals, in order, each once (a dict keeps the first of equals)."""
    return tuple(dict.fromkeys(_check_literal(literal(v), sql) for v in values))


class In(SetPredicate):
    __slots__ = ()
    op = "in"
    _sql = "IN"

    def __new__(  # type: ignore[misc]
        cls, term: str | Term, values: Iterable[Any]
    ) -> BooleanExpression:
        lits = _literal_set(values, cls._sql)
        if not lits:
            return AlwaysFalse()
        if len(lits) == 1:
            return EqualTo(term, lits[0])
        obj = super().__new__(cls)
        obj._init(_term(term), lits)
        return obj

    def negate(self) -> BooleanExpression:
        return NotIn(self.term, self.ordered)


class NotIn(SetPredicate):
    __slots__ = ()
    op = "not_in"
    _sql = "NOT IN"

    def __new__(  # type: ignore[misc]
        cls, term: str | Term, values: Iterable[Any]
    ) -> BooleanExpression:
        lits = _literal_set(values, cls._sql)
        if not lits:
            return AlwaysTrue()
        if len(lits) == 1:
            return NotEqualTo(term, lits[0])
        obj = super().__new__(cls)
        obj._init(_term(term), lits)
        return obj

    def negate(self) -> BooleanExpression:
        return In(self.term, self.ordered)


# -- binding -------------------------------------------------------------------------------


def _accessors(struct: StructType) -> dict[int, tuple[tuple[int, ...], tuple[str, ...]]]:
    """Positions and names of every field reachable through structs only."""
    out: dict[int, tuple[tuple[int, ...], tuple[str, ...]]] = {}

    def walk(s: StructType, pos: tuple[int, ...], names: tuple[str, ...]) -> None:
        for i, f in enumerate(s.fields):
            p, n = (*pos, i), (*names, f.name)
            out[f.field_id] = (p, n)
            if isinstance(f.field_type, StructType):
                walk(f.field_type, p, n)

    walk(struct, (), ())
    return out


class _Binder:
    def __init__(self, schema: Schema, case_sensitive: bool) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.accessors = _accessors(schema.as_struct())

    def ref(self, name: str) -> BoundReference:
        try:
            fid = self.schema.find_field_id(name, self.case_sensitive)
        except ValidationError:
            raise FilterInvalid(self._unknown(name)) from None
        field = self.schema.find_field(fid)
        if fid not in self.accessors:
            raise FilterInvalid(f"cannot filter on {name!r}: it is inside a list or a map")
        if not isinstance(field.field_type, PrimitiveType):
            raise FilterInvalid(
                f"cannot filter on {name!r}: it is a {field.field_type}, not a primitive type"
            )
        positions, names = self.accessors[fid]
        return BoundReference(field, Accessor(positions, names))

    def _unknown(self, name: str) -> str:
        return unknown_column(self.schema.as_struct(), name, self.case_sensitive)

    def bind(self, expr: BooleanExpression) -> BooleanExpression:
        return check_depth(map_leaves(expr, self.leaf))

    def leaf(self, expr: BooleanExpression) -> BooleanExpression:
        if isinstance(expr, Predicate):
            if isinstance(expr.term, BoundReference):
                return expr
            return self.predicate(expr, self.ref(expr.term.name))
        if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
            return expr
        raise FilterInvalid(f"cannot bind {expr!r}")

    def predicate(self, pred: Predicate, ref: BoundReference) -> BooleanExpression:
        field, t = ref.field, ref.type
        if isinstance(pred, UnaryPredicate):
            if isinstance(pred, (IsNaN, NotNaN)) and not isinstance(t, (FloatType, DoubleType)):
                raise FilterInvalid(f"{pred}: {ref.name} is a {t}, IS NAN needs float or double")
            if field.required and isinstance(pred, IsNull):
                return AlwaysFalse()
            if field.required and isinstance(pred, NotNull):
                return AlwaysTrue()
            return type(pred)(ref)
        if isinstance(pred, LiteralPredicate):
            if isinstance(pred, (StartsWith, NotStartsWith)) and not isinstance(t, StringType):
                raise FilterInvalid(f"{pred}: {ref.name} is a {t}, STARTS WITH needs a string")
            lit = self.convert(pred, pred.literal, ref)
            if isinstance(lit, AboveMax):
                return AlwaysTrue() if isinstance(pred, (LessThan, LessThanOrEqual, NotEqualTo)) \
                    else AlwaysFalse()
            if isinstance(lit, BelowMin):
                return AlwaysTrue() if isinstance(
                    pred, (GreaterThan, GreaterThanOrEqual, NotEqualTo)) else AlwaysFalse()
            return type(pred)(ref, lit)
        if isinstance(pred, SetPredicate):
            lits = [self.convert(pred, lit, ref) for lit in pred.ordered]
            kept = [lit for lit in lits if not isinstance(lit, (AboveMax, BelowMin))]
            return In(ref, kept) if isinstance(pred, In) else NotIn(ref, kept)
        raise FilterInvalid(f"cannot bind {pred!r}")

    def convert(self, pred: Predicate, lit: Literal, ref: BoundReference) -> Literal:
        try:
            return lit.to(ref.type)
        except ValidationError as e:
            raise FilterInvalid(
                f"{pred}: cannot compare {ref.name} ({ref.type}) with {lit}: {e}"
            ) from None


def bind(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """The expression with every reference bound to ``schema`` and literals converted.

    Raises :class:`~floe.errors.FilterInvalid` (a ValidationError) for an unknown column
    (naming close names), a literal that does not convert to the column's type, IS NAN on a
    non-float column, STARTS WITH on a non-string column; its subclass
    :class:`~floe.errors.FilterTooDeep` when the result nests deeper
    than :data:`MAX_DEPTH` (chains of AND / OR are rebuilt balanced first, so only nesting
    counts, not length). Null tests of required columns become constants.
    """
    return _Binder(schema, case_sensitive).bind(expr)


def walk_predicates(expr: BooleanExpression) -> Iterable[Predicate]:
    """Every predicate of an expression, left to right."""
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, (And, Or)):
            todo += (e.right, e.left)
        elif isinstance(e, Predicate):
            yield e
