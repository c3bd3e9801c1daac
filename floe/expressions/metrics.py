"""Evaluators over statistics: file metrics (inclusive and strict) and manifest partition
summaries, with Java's rules (``InclusiveMetricsEvaluator``, ``StrictMetricsEvaluator``,
``ManifestEvaluator``).

Bounds are decoded lazily, once per input and field. A bound that cannot be decoded (or a
NaN bound, written by old writers) counts as missing: a missing statistic never prunes.
String bounds may be truncated (spec "Manifests": a truncated upper bound is incremented),
which keeps every rule below correct: a lower bound is ≤ every value, an upper ≥ every value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from floe.conversions import from_bytes
from floe.errors import ValidationError
from floe.expressions.base import (
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
    Predicate,
    StartsWith,
    bind,
)
from floe.expressions.visitors import (
    Decision,
    compile_decisions,
    compile_explained,
    show_value,
)
from floe.manifest import DataFile, ManifestFile, PartitionFieldSummary
from floe.partitioning import PartitionSpec
from floe.schema import Schema
from floe.types import DoubleType, FloatType, PrimitiveType

__all__ = [
    "IN_PREDICATE_LIMIT", "InclusiveMetricsEvaluator", "StrictMetricsEvaluator",
    "manifest_evaluator", "manifest_evaluator_explain",
]

#: Java: beyond this many IN values the bounds are not checked
IN_PREDICATE_LIMIT = 200


def _decode(t: PrimitiveType, raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        v = from_bytes(t, raw)
    except (ValidationError, ValueError, UnicodeDecodeError):
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


class _FileStats:
    """The statistics of one data file, bounds decoded on first use (fresh per file)."""

    __slots__ = ("df", "lowers", "uppers")

    def __init__(self, df: DataFile) -> None:
        self.df = df
        self.lowers: dict[int, Any] = {}
        self.uppers: dict[int, Any] = {}

    def lower(self, fid: int, t: PrimitiveType) -> Any:
        try:
            return self.lowers[fid]
        except KeyError:
            b = self.df.lower_bounds
            v = self.lowers[fid] = _decode(t, b.get(fid) if b is not None else None)
            return v

    def upper(self, fid: int, t: PrimitiveType) -> Any:
        try:
            return self.uppers[fid]
        except KeyError:
            b = self.df.upper_bounds
            v = self.uppers[fid] = _decode(t, b.get(fid) if b is not None else None)
            return v


def _get(m: Mapping[int, int] | None, fid: int) -> int | None:
    return None if m is None else m.get(fid)


def _nulls_only(df: DataFile, fid: int) -> bool:
    vc, nc = _get(df.value_counts, fid), _get(df.null_value_counts, fid)
    return vc is not None and nc is not None and vc == nc


def _nans_only(df: DataFile, fid: int) -> bool:
    vc, nan = _get(df.value_counts, fid), _get(df.nan_value_counts, fid)
    return vc is not None and nan is not None and vc == nan


def _is_float(t: PrimitiveType) -> bool:
    return isinstance(t, (FloatType, DoubleType))


def _parts(p: Predicate) -> tuple[int, PrimitiveType, str, Any]:
    ref = p.ref
    value = p.literal.value if isinstance(p, LiteralPredicate) else None
    return ref.field_id, ref.type, ref.name, value


# -- inclusive metrics ---------------------------------------------------------------------


def _inclusive_leaf(p: Predicate) -> Decision:
    """Reason the file's rows cannot match ``p``, or None."""
    fid, t, name, lit = _parts(p)
    show = lambda v: show_value(t, v)  # noqa: E731
    ps = str(p)  # formatted once: a plan explains up to millions of files

    def nulls_or_nans(fs: _FileStats) -> str | None:
        if _nulls_only(fs.df, fid):
            return f"pruned: {ps} but all values of {name} are null"
        if _nans_only(fs.df, fid):
            return f"pruned: {ps} but all values of {name} are NaN"
        return None

    if isinstance(p, IsNull):
        def is_null(fs: _FileStats) -> str | None:
            if _get(fs.df.null_value_counts, fid) == 0:
                return f"pruned: {ps} but null_value_count({name}) = 0"
            return None
        return is_null
    if isinstance(p, NotNull):
        def not_null(fs: _FileStats) -> str | None:
            if _nulls_only(fs.df, fid):
                return f"pruned: {ps} but all values of {name} are null"
            return None
        return not_null
    if isinstance(p, IsNaN):
        def is_nan(fs: _FileStats) -> str | None:
            if _get(fs.df.nan_value_counts, fid) == 0:
                return f"pruned: {ps} but nan_value_count({name}) = 0"
            if _nulls_only(fs.df, fid):
                return f"pruned: {ps} but all values of {name} are null"
            return None
        return is_nan
    if isinstance(p, NotNaN):
        def not_nan(fs: _FileStats) -> str | None:
            if _nans_only(fs.df, fid):
                return f"pruned: {ps} but all values of {name} are NaN"
            return None
        return not_nan
    if isinstance(p, (LessThan, LessThanOrEqual)):
        strict = isinstance(p, LessThan)

        def lt(fs: _FileStats) -> str | None:
            if (why := nulls_or_nans(fs)) is not None:
                return why
            lower = fs.lower(fid, t)
            if lower is not None and (lower >= lit if strict else lower > lit):
                return f"pruned: {ps} but lower_bound({name}) = {show(lower)}"
            return None
        return lt
    if isinstance(p, (GreaterThan, GreaterThanOrEqual)):
        strict = isinstance(p, GreaterThan)

        def gt(fs: _FileStats) -> str | None:
            if (why := nulls_or_nans(fs)) is not None:
                return why
            upper = fs.upper(fid, t)
            if upper is not None and (upper <= lit if strict else upper < lit):
                return f"pruned: {ps} but upper_bound({name}) = {show(upper)}"
            return None
        return gt
    if isinstance(p, EqualTo):
        def eq(fs: _FileStats) -> str | None:
            if (why := nulls_or_nans(fs)) is not None:
                return why
            lower = fs.lower(fid, t)
            if lower is not None and lower > lit:
                return f"pruned: {ps} but lower_bound({name}) = {show(lower)}"
            upper = fs.upper(fid, t)
            if upper is not None and upper < lit:
                return f"pruned: {ps} but upper_bound({name}) = {show(upper)}"
            return None
        return eq
    if isinstance(p, In):
        values = p.values

        def in_(fs: _FileStats) -> str | None:
            if (why := nulls_or_nans(fs)) is not None:
                return why
            if len(values) > IN_PREDICATE_LIMIT:
                return None
            lower, upper = fs.lower(fid, t), fs.upper(fid, t)
            left = [v for v in values if (lower is None or v >= lower)
                    and (upper is None or v <= upper)]
            if not left:
                return (f"pruned: {ps} but no value is within the bounds of {name}: "
                        f"[{show(lower)}, {show(upper)}]")
            return None
        return in_
    if isinstance(p, StartsWith):
        n = len(lit)

        def starts_with(fs: _FileStats) -> str | None:
            if _nulls_only(fs.df, fid):
                return f"pruned: {ps} but all values of {name} are null"
            lower = fs.lower(fid, t)
            if lower is not None and lower[:n] > lit:
                return f"pruned: {ps} but lower_bound({name}) = {show(lower)}"
            upper = fs.upper(fid, t)
            if upper is not None and upper[:n] < lit:
                return f"pruned: {ps} but upper_bound({name}) = {show(upper)}"
            return None
        return starts_with
    if isinstance(p, NotStartsWith):
        n = len(lit)

        def not_starts_with(fs: _FileStats) -> str | None:
            if _get(fs.df.null_value_counts, fid) != 0:
                return None  # nulls (or unknown) match NOT STARTS WITH
            lower, upper = fs.lower(fid, t), fs.upper(fid, t)
            if lower is not None and upper is not None and lower.startswith(lit) \
                    and upper.startswith(lit):
                return (f"pruned: {ps} but both bounds of {name} start with it: "
                        f"[{show(lower)}, {show(upper)}]")
            return None
        return not_starts_with
    if isinstance(p, (NotEqualTo, NotIn)):
        return lambda fs: None
    raise ValidationError(f"cannot evaluate {p!r} on metrics")


def _inclusive_undecided(p: Predicate) -> str:
    return f"kept: {p} might match"


class InclusiveMetricsEvaluator:
    """Whether a data file MAY contain rows matching the filter (False: prune it).

    Bind once per schema; :meth:`eval` and :meth:`explain` are safe to call from threads.
    Files without rows are pruned unless ``include_empty_files``; files with a negative
    (unknown) record count are kept.
    """

    def __init__(self, schema: Schema, expr: BooleanExpression, case_sensitive: bool = True,
                 include_empty_files: bool = False) -> None:
        self.expr = bind(schema, expr, case_sensitive)
        self.include_empty_files = include_empty_files
        self._eval = compile_decisions(self.expr, _inclusive_leaf, decides=False)
        self._explain = compile_explained(self.expr, _inclusive_leaf, False,
                                          _inclusive_undecided)

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count <= 0:
            return data_file.record_count < 0 or self.include_empty_files
        return self._eval(_FileStats(data_file))

    def explain(self, data_file: DataFile) -> tuple[bool, str]:
        if data_file.record_count == 0 and not self.include_empty_files:
            return False, "pruned: the file has no rows"
        if data_file.record_count <= 0:
            return True, "kept: the record count is unknown"
        return self._explain(_FileStats(data_file))


# -- strict metrics ------------------------------------------------------------------------


def _strict_leaf(p: Predicate) -> Decision:
    """Reason every row of the file matches ``p``, or None."""
    fid, t, name, lit = _parts(p)
    floating = _is_float(t)
    show = lambda v: show_value(t, v)  # noqa: E731

    def unsure(df: DataFile) -> bool:
        """May the column hold a null or NaN (which fail every comparison)?"""
        nc = _get(df.null_value_counts, fid)
        if nc is None or nc > 0:
            return True
        if floating:
            nan = _get(df.nan_value_counts, fid)
            return nan is None or nan > 0
        return False

    def absent(df: DataFile) -> str | None:
        if _nulls_only(df, fid):
            return f"all rows match: {p} and all values of {name} are null"
        if _nans_only(df, fid):
            return f"all rows match: {p} and all values of {name} are NaN"
        return None

    if isinstance(p, IsNull):
        return lambda fs: (f"all rows match: all values of {name} are null"
                           if _nulls_only(fs.df, fid) else None)
    if isinstance(p, NotNull):
        return lambda fs: (f"all rows match: null_value_count({name}) = 0"
                           if _get(fs.df.null_value_counts, fid) == 0 else None)
    if isinstance(p, IsNaN):
        return lambda fs: (f"all rows match: all values of {name} are NaN"
                           if _nans_only(fs.df, fid) else None)
    if isinstance(p, NotNaN):
        def not_nan(fs: _FileStats) -> str | None:
            if _get(fs.df.nan_value_counts, fid) == 0:
                return f"all rows match: nan_value_count({name}) = 0"
            if _nulls_only(fs.df, fid):
                return f"all rows match: all values of {name} are null"
            return None
        return not_nan
    if isinstance(p, (LessThan, LessThanOrEqual)):
        strict = isinstance(p, LessThan)

        def lt(fs: _FileStats) -> str | None:
            if unsure(fs.df):
                return None
            upper = fs.upper(fid, t)
            if upper is not None and (upper < lit if strict else upper <= lit):
                return f"all rows match: {p} and upper_bound({name}) = {show(upper)}"
            return None
        return lt
    if isinstance(p, (GreaterThan, GreaterThanOrEqual)):
        strict = isinstance(p, GreaterThan)

        def gt(fs: _FileStats) -> str | None:
            if unsure(fs.df):
                return None
            lower = fs.lower(fid, t)
            if lower is not None and (lower > lit if strict else lower >= lit):
                return f"all rows match: {p} and lower_bound({name}) = {show(lower)}"
            return None
        return gt
    if isinstance(p, (EqualTo, In)):
        values = p.values if isinstance(p, In) else frozenset([lit])

        def eq(fs: _FileStats) -> str | None:
            if unsure(fs.df):
                return None
            lower, upper = fs.lower(fid, t), fs.upper(fid, t)
            if lower is not None and lower == upper and lower in values:
                return f"all rows match: {p} and every value of {name} is {show(lower)}"
            return None
        return eq
    if isinstance(p, (NotEqualTo, NotIn)):
        values = p.values if isinstance(p, NotIn) else frozenset([lit])

        def not_in(fs: _FileStats) -> str | None:
            if (why := absent(fs.df)) is not None:
                return why
            lower, upper = fs.lower(fid, t), fs.upper(fid, t)
            if lower is not None and all(v < lower for v in values):
                return f"all rows match: {p} and lower_bound({name}) = {show(lower)}"
            if upper is not None and all(v > upper for v in values):
                return f"all rows match: {p} and upper_bound({name}) = {show(upper)}"
            return None
        return not_in
    if isinstance(p, StartsWith):
        def starts_with(fs: _FileStats) -> str | None:
            if unsure(fs.df):
                return None
            lower, upper = fs.lower(fid, t), fs.upper(fid, t)
            if lower is not None and upper is not None and lower.startswith(lit) \
                    and upper.startswith(lit):
                return (f"all rows match: {p} and both bounds start with it: "
                        f"[{show(lower)}, {show(upper)}]")
            return None
        return starts_with
    if isinstance(p, NotStartsWith):
        n = len(lit)

        def not_starts_with(fs: _FileStats) -> str | None:
            if _nulls_only(fs.df, fid):
                return f"all rows match: all values of {name} are null"
            lower = fs.lower(fid, t)
            if lower is not None and lower[:n] > lit:
                return f"all rows match: {p} and lower_bound({name}) = {show(lower)}"
            upper = fs.upper(fid, t)
            if upper is not None and upper[:n] < lit:
                return f"all rows match: {p} and upper_bound({name}) = {show(upper)}"
            return None
        return not_starts_with
    raise ValidationError(f"cannot evaluate {p!r} on metrics")


class StrictMetricsEvaluator:
    """Whether ALL rows of a data file match the filter (True: no residual needed there).

    Deviation from Java, on the safe side: a missing null count (or, for float/double, a
    missing NaN count) means "may contain nulls / NaN" instead of "contains none".
    """

    def __init__(self, schema: Schema, expr: BooleanExpression,
                 case_sensitive: bool = True) -> None:
        self.expr = bind(schema, expr, case_sensitive)
        self._eval = compile_decisions(self.expr, _strict_leaf, decides=True)
        self._explain = compile_explained(
            self.expr, _strict_leaf, True, lambda p: f"some rows might not match {p}")

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count <= 0:
            return True
        return self._eval(_FileStats(data_file))

    def explain(self, data_file: DataFile) -> tuple[bool, str]:
        if data_file.record_count <= 0:
            return True, "all rows match: the file has no rows"
        return self._explain(_FileStats(data_file))


# -- manifest partition summaries ----------------------------------------------------------


class _Summaries:
    """The partition summaries of one manifest, bounds decoded on first use."""

    __slots__ = ("lowers", "summaries", "uppers")

    def __init__(self, summaries: list[PartitionFieldSummary]) -> None:
        self.summaries = summaries
        self.lowers: dict[int, Any] = {}
        self.uppers: dict[int, Any] = {}

    def lower(self, pos: int, t: PrimitiveType) -> Any:
        try:
            return self.lowers[pos]
        except KeyError:
            v = self.lowers[pos] = _decode(t, self.summaries[pos].lower_bound)
            return v

    def upper(self, pos: int, t: PrimitiveType) -> Any:
        try:
            return self.uppers[pos]
        except KeyError:
            v = self.uppers[pos] = _decode(t, self.summaries[pos].upper_bound)
            return v


#: Distinct summaries a manifest leaf remembers its answer for (a bound on the memory of an
#: evaluator kept for a very long manifest list; past it, answers are worked out again).
SUMMARY_MEMO = 1 << 16


def _manifest_leaf(p: Predicate) -> Decision:
    """:func:`_manifest_rule`, answered once per distinct summary of the predicate's field.

    A leaf reads nothing but that one summary, and manifest lists repeat summaries: the
    manifests of one day's commits share the day's (690 distinct day summaries among the
    10,000 manifests of the plan benchmark's ``--per-manifest 10`` table), and the native
    list decoder hands out one object per distinct summary, found here by identity."""
    rule = _manifest_rule(p)
    pos = p.ref.accessor.positions[0]
    seen: dict[PartitionFieldSummary, str | None] = {}

    def leaf(ss: _Summaries) -> str | None:
        s = ss.summaries[pos]
        try:
            return seen[s]
        except KeyError:
            pass
        except TypeError:  # a value that cannot be a key (a bound in a bytearray)
            return rule(ss)
        why = rule(ss)
        if len(seen) < SUMMARY_MEMO:
            seen[s] = why
        return why

    return leaf


def _manifest_rule(p: Predicate) -> Decision:
    """Reason no partition of the manifest can match ``p``, or None (Java ManifestEvaluator)."""
    _, t, name, lit = _parts(p)
    ps = str(p)  # in every explanation: written once
    pos = p.ref.accessor.positions[0]
    show = lambda v: show_value(t, v)  # noqa: E731
    floating = _is_float(t)

    def all_null(s: PartitionFieldSummary) -> bool:
        if not s.contains_null or s.lower_bound is not None:
            return False
        return not floating or s.contains_nan is False

    def no_values(ss: _Summaries) -> str | None:
        if ss.lower(pos, t) is None and ss.summaries[pos].lower_bound is None:
            return f"pruned: {ps} but every partition value of {name} is null or NaN"
        return None

    if isinstance(p, IsNull):
        return lambda ss: (f"pruned: {ps} but no partition value of {name} is null"
                           if not ss.summaries[pos].contains_null else None)
    if isinstance(p, NotNull):
        return lambda ss: (f"pruned: {ps} but every partition value of {name} is null"
                           if all_null(ss.summaries[pos]) else None)
    if isinstance(p, IsNaN):
        return lambda ss: (f"pruned: {ps} but no partition value of {name} is NaN"
                           if ss.summaries[pos].contains_nan is False else None)
    if isinstance(p, NotNaN):
        def not_nan(ss: _Summaries) -> str | None:
            s = ss.summaries[pos]
            if s.contains_nan is True and not s.contains_null and s.lower_bound is None:
                return f"pruned: {ps} but every partition value of {name} is NaN"
            return None
        return not_nan
    if isinstance(p, (LessThan, LessThanOrEqual)):
        strict = isinstance(p, LessThan)

        def lt(ss: _Summaries) -> str | None:
            if (why := no_values(ss)) is not None:
                return why
            lower = ss.lower(pos, t)
            if lower is not None and (lower >= lit if strict else lower > lit):
                return f"pruned: {ps} but partition lower_bound({name}) = {show(lower)}"
            return None
        return lt
    if isinstance(p, (GreaterThan, GreaterThanOrEqual)):
        strict = isinstance(p, GreaterThan)

        def gt(ss: _Summaries) -> str | None:
            if (why := no_values(ss)) is not None:
                return why
            upper = ss.upper(pos, t)
            if upper is not None and (upper <= lit if strict else upper < lit):
                return f"pruned: {ps} but partition upper_bound({name}) = {show(upper)}"
            return None
        return gt
    if isinstance(p, (EqualTo, In)):
        values = p.values if isinstance(p, In) else frozenset([lit])

        def eq(ss: _Summaries) -> str | None:
            if (why := no_values(ss)) is not None:
                return why
            if len(values) > IN_PREDICATE_LIMIT:
                return None
            lower, upper = ss.lower(pos, t), ss.upper(pos, t)
            if not any((lower is None or v >= lower) and (upper is None or v <= upper)
                       for v in values):
                return (f"pruned: {ps} but partition bounds of {name} are "
                        f"[{show(lower)}, {show(upper)}]")
            return None
        return eq
    if isinstance(p, StartsWith):
        n = len(lit)

        def starts_with(ss: _Summaries) -> str | None:
            if (why := no_values(ss)) is not None:
                return why
            lower, upper = ss.lower(pos, t), ss.upper(pos, t)
            if lower is not None and lower[:n] > lit:
                return f"pruned: {ps} but partition lower_bound({name}) = {show(lower)}"
            if upper is not None and upper[:n] < lit:
                return f"pruned: {ps} but partition upper_bound({name}) = {show(upper)}"
            return None
        return starts_with
    if isinstance(p, NotStartsWith):
        def not_starts_with(ss: _Summaries) -> str | None:
            if ss.summaries[pos].contains_null:
                return None
            lower, upper = ss.lower(pos, t), ss.upper(pos, t)
            if lower is not None and upper is not None and lower.startswith(lit) \
                    and upper.startswith(lit):
                return (f"pruned: {ps} but both partition bounds of {name} start with it: "
                        f"[{show(lower)}, {show(upper)}]")
            return None
        return not_starts_with
    if isinstance(p, (NotEqualTo, NotIn)):
        return lambda ss: None
    raise ValidationError(f"cannot evaluate {p!r} on partition summaries")


def _partition_schema(spec: PartitionSpec, schema: Schema) -> Schema:
    return Schema(*spec.partition_type(schema).fields)


def _manifest_parts(spec: PartitionSpec, schema: Schema, partition_filter: BooleanExpression,
                    case_sensitive: bool) -> tuple[BooleanExpression, int]:
    bound = bind(_partition_schema(spec, schema), partition_filter, case_sensitive)
    return bound, len(spec.fields)


def manifest_evaluator(
    spec: PartitionSpec, schema: Schema, partition_filter: BooleanExpression,
    case_sensitive: bool = True,
) -> Callable[[ManifestFile], bool]:
    """Whether a manifest of ``spec`` may hold matching files, from its partition summaries.

    ``partition_filter`` is over the spec's partition fields (by partition field name), as
    :func:`floe.expressions.inclusive_projection` makes it from a row filter (PyIceberg's
    signature). Manifests without summaries (or with a summary count that does not match
    the spec) are kept.
    """
    bound, n = _manifest_parts(spec, schema, partition_filter, case_sensitive)
    fn = compile_decisions(bound, _manifest_leaf, decides=False)

    def evaluate(m: ManifestFile) -> bool:
        if m.partitions is None or len(m.partitions) != n:
            return True
        return fn(_Summaries(m.partitions))

    return evaluate


def manifest_evaluator_explain(
    spec: PartitionSpec, schema: Schema, partition_filter: BooleanExpression,
    case_sensitive: bool = True,
) -> Callable[[ManifestFile], tuple[bool, str]]:
    """Like :func:`manifest_evaluator`, answering ``(kept, reason)``."""
    bound, n = _manifest_parts(spec, schema, partition_filter, case_sensitive)
    fn = compile_explained(bound, _manifest_leaf, False, _inclusive_undecided)

    def evaluate(m: ManifestFile) -> tuple[bool, str]:
        if m.partitions is None or len(m.partitions) != n:
            return True, "kept: the manifest has no partition summaries for this spec"
        return fn(_Summaries(m.partitions))

    return evaluate
