"""Iceberg expressions: build or parse a filter, bind it to a schema, evaluate it.

See docs/core-api.md "floe.expressions" for the contract.
"""

from typing import Any

from floe.expressions.base import (
    MAX_DEPTH,
    Accessor,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundReference,
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
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    bind,
    depth,
    rewrite_not,
    walk_predicates,
)
from floe.expressions.literals import (
    ABOVE_MAX,
    BELOW_MIN,
    AboveMax,
    BelowMin,
    BinaryLiteral,
    BooleanLiteral,
    DateLiteral,
    DecimalLiteral,
    DoubleLiteral,
    FixedLiteral,
    FloatLiteral,
    IntLiteral,
    Literal,
    LongLiteral,
    StringLiteral,
    TimeLiteral,
    TimestampLiteral,
    UUIDLiteral,
    literal,
)
from floe.expressions.metrics import (
    IN_PREDICATE_LIMIT,
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
    manifest_evaluator,
    manifest_evaluator_explain,
)
from floe.expressions.parser import parse_filter
from floe.expressions.projection import (
    inclusive_projection,
    partition_evaluator,
    partition_evaluator_explain,
    partition_schema,
    project,
    residual_evaluator,
    strict_projection,
)
from floe.expressions.visitors import evaluator, evaluator_explain

__all__ = [
    "ABOVE_MAX", "BELOW_MIN", "IN_PREDICATE_LIMIT", "MAX_DEPTH", "AboveMax", "Accessor",
    "AlwaysFalse", "AlwaysTrue", "And", "BelowMin", "BinaryLiteral", "BooleanExpression",
    "BooleanLiteral",
    "BoundReference", "DateLiteral", "DecimalLiteral", "DoubleLiteral", "EqualTo",
    "FixedLiteral", "FloatLiteral", "GreaterThan", "GreaterThanOrEqual", "In",
    "InclusiveMetricsEvaluator", "IntLiteral", "IsNaN", "IsNull", "LessThan",
    "LessThanOrEqual", "Literal", "LiteralPredicate", "LongLiteral", "Not", "NotEqualTo",
    "NotIn", "NotNaN", "NotNull", "NotStartsWith", "Or", "Predicate", "Reference",
    "SetPredicate", "StartsWith", "StrictMetricsEvaluator", "StringLiteral", "TimeLiteral",
    "TimestampLiteral", "UUIDLiteral", "UnaryPredicate", "bind", "depth", "evaluator",
    "evaluator_explain", "literal", "manifest_evaluator", "manifest_evaluator_explain",
    "parse_filter", "rewrite_not", "walk_predicates", "arrow_filter", "inclusive_projection",
    "partition_evaluator", "partition_evaluator_explain", "partition_schema", "project",
    "residual_evaluator", "strict_projection",
]


def __getattr__(name: str) -> Any:
    # arrow_filter needs pyarrow.compute, whose import (~50 ms: a Python wrapper built for
    # each of its functions) planning does not need: imported when first asked for
    if name == "arrow_filter":
        from floe.expressions.arrow import arrow_filter

        return arrow_filter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
