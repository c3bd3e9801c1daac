"""Glue between scan planning / reading and :mod:`floe.expressions`.

One :class:`ExprSpecFilter` per partition spec id holds the compiled evaluators: partition
summaries (manifests), partition tuples (inclusive projection), column metrics, residuals.
The plain evaluators serve normal planning; the ``explain`` variants, which build a reason
string per decision, only serve ``explain=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from floe.errors import ValidationError
from floe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    And,
    InclusiveMetricsEvaluator,
    NotNull,
    Or,
    Predicate,
    bind,
    inclusive_projection,
    manifest_evaluator,
    manifest_evaluator_explain,
    parse_filter,
    partition_evaluator,
    partition_evaluator_explain,
    residual_evaluator,
    walk_predicates,
)
from floe.manifest import DataFile, ManifestFile
from floe.metadata import TableMetadata
from floe.schema import Schema

__all__ = ["bind_filter", "spec_filter", "ArrowResidual", "arrow_residual"]


_NEGATIVE_OPS = frozenset({"not_eq", "not_in", "not_starts_with"})


def bind_filter(schema: Schema, row_filter: Any, case_sensitive: bool, sql_nulls: bool = True
                ) -> tuple[BooleanExpression, BooleanExpression]:
    """(unbound, bound) filter; a string is parsed with :func:`parse_filter`.

    With ``sql_nulls`` the filter keeps the rows SQL's ``WHERE`` keeps (Spark, PyIceberg,
    DuckDB): a null satisfies no comparison, not even ``!=``, ``NOT IN`` or ``NOT STARTS
    WITH``, which Iceberg Java's row evaluator lets nulls pass. Since ``Not`` is already
    pushed down to the leaves, the expression is monotone and guarding each negative leaf
    with ``IS NOT NULL`` gives exactly SQL's three-valued result.
    """
    expr = parse_filter(row_filter) if isinstance(row_filter, str) else row_filter
    if not isinstance(expr, BooleanExpression):
        raise ValidationError(f"not a filter expression: {row_filter!r}")
    bound = bind(schema, expr, case_sensitive)
    return expr, _null_rejecting(bound) if sql_nulls else bound


def _null_rejecting(e: BooleanExpression) -> BooleanExpression:
    if isinstance(e, And):
        return And(_null_rejecting(e.left), _null_rejecting(e.right))
    if isinstance(e, Or):
        return Or(_null_rejecting(e.left), _null_rejecting(e.right))
    if isinstance(e, Predicate) and e.op in _NEGATIVE_OPS and not e.ref.field.required:
        return And(NotNull(e.term), e)
    return e


class ExprSpecFilter:
    """Evaluators of one partition spec for a bound row filter."""

    uniform_reason: str | None = None  # each file's reason is its own

    def __init__(self, md: TableMetadata, schema: Schema, spec_id: int,
                 bound: BooleanExpression, case_sensitive: bool, explain: bool) -> None:
        self.always_true = isinstance(bound, AlwaysTrue)
        self.always_false = isinstance(bound, AlwaysFalse)
        self.bound = bound
        self._explain = explain
        spec = md.spec_by_id(spec_id)
        self._metrics = InclusiveMetricsEvaluator(schema, bound, case_sensitive)
        self._residuals: dict[tuple[Any, ...], BooleanExpression] = {}
        self._manifest: Callable[[ManifestFile], Any] | None = None
        self._partition: Callable[[tuple[Any, ...]], Any] | None = None
        self._residual: Callable[[tuple[Any, ...]], BooleanExpression] | None = None
        self._uniform_partitions = False
        if spec is None or spec.is_unpartitioned:
            return
        try:
            pfilter = inclusive_projection(schema, spec, case_sensitive)(bound)
            # the projection decides every partition alike (the filter's columns are not
            # partition sources, or only through a transform that cannot project it)
            self._uniform_partitions = isinstance(pfilter, (AlwaysTrue, AlwaysFalse))
            if explain:
                self._manifest = manifest_evaluator_explain(spec, schema, pfilter,
                                                            case_sensitive)
                self._partition = partition_evaluator_explain(schema, spec, bound,
                                                              case_sensitive)
            else:
                self._manifest = manifest_evaluator(spec, schema, pfilter, case_sensitive)
                self._partition = partition_evaluator(schema, spec, bound, case_sensitive)
            self._residual = residual_evaluator(spec, bound, schema, case_sensitive)
        except ValidationError:
            # a spec whose source columns the scan schema lacks: no partition pruning, which
            # is always correct (metrics and residuals still apply)
            self._manifest = self._partition = self._residual = None

    def manifest(self, m: ManifestFile) -> tuple[bool, str]:
        if self._manifest is None:
            return True, "kept: no partition summaries to prune by"
        got = self._manifest(m)
        return got if self._explain else (bool(got), "")

    @property
    def partitioned(self) -> bool:
        """Whether partitions may be decided differently (False: one answer for all)."""
        return self._partition is not None and not self._uniform_partitions

    @property
    def metrics_expression(self) -> BooleanExpression:
        return self._metrics.expr

    @property
    def metrics_prunes_empty(self) -> bool:
        return not self._metrics.include_empty_files

    def partition(self, df: DataFile) -> tuple[bool, str]:
        return self.partition_of(df.partition)

    def partition_of(self, partition: tuple[Any, ...]) -> tuple[bool, str]:
        if self._partition is None:
            return True, "kept: unpartitioned"
        got = self._partition(partition)
        return got if self._explain else (bool(got), "")

    def metrics(self, df: DataFile) -> tuple[bool, str]:
        if self._explain:
            return self._metrics.explain(df)
        return self._metrics.eval(df), ""

    def residual_for(self, partition: tuple[Any, ...]) -> BooleanExpression | None:
        if self._residual is None:
            r = self.bound
        else:
            key = tuple(partition)
            got = self._residuals.get(key)
            if got is None:
                got = self._residual(key)
                self._residuals[key] = got
            r = got
        return None if isinstance(r, AlwaysTrue) else r


def spec_filter(md: TableMetadata, schema: Schema, spec_id: int, expression: Any,
                bound: BooleanExpression, case_sensitive: bool, explain: bool = False
                ) -> ExprSpecFilter:
    return ExprSpecFilter(md, schema, spec_id, bound, case_sensitive, explain)


class ArrowResidual:
    """A residual as a filter over record batches of a read schema (null → dropped)."""

    def __init__(self, residual: BooleanExpression, schema: Schema, case_sensitive: bool
                 ) -> None:
        from floe.expressions.arrow import arrow_filter

        self.residual = residual
        self.expression = arrow_filter(schema, residual, case_sensitive)
        self.field_ids = frozenset(p.ref.field_id for p in walk_predicates(
            bind(schema, residual, case_sensitive)))

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.filter(self.expression)


def arrow_residual(residual: BooleanExpression | None, schema: Schema, case_sensitive: bool
                   ) -> ArrowResidual | None:
    if residual is None or isinstance(residual, AlwaysTrue):
        return None
    return ArrowResidual(residual, schema, case_sensitive)
