"""Property tests on random rows and random predicates.

For each seed: rows with nulls, NaN and non-ASCII strings; the statistics a writer would
keep for them (string bounds sometimes truncated, some statistics missing). Then for random
filters: a file the inclusive evaluator prunes holds no matching row, a file the strict
evaluator accepts holds only matching rows, a manifest pruned by its partition summaries holds
no matching row, residuals decide exactly like the filter, and the Arrow filter selects
exactly the rows the row evaluator accepts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from floe.conversions import to_bytes
from floe.expressions import (
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InclusiveMetricsEvaluator,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    StrictMetricsEvaluator,
    arrow_filter,
    evaluator,
    inclusive_projection,
    manifest_evaluator,
    manifest_evaluator_explain,
    residual_evaluator,
)
from floe.manifest import DataFile, FileContent, ManifestFile, PartitionFieldSummary
from floe.partitioning import parse_partition_by
from floe.schema import Schema
from floe.types import DATE, DOUBLE, LONG, STRING, NestedField, PrimitiveType

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=False),
    NestedField(2, "s", STRING, required=False),
    NestedField(3, "x", DOUBLE, required=False),
    NestedField(4, "d", DATE, required=False),
)
COLUMNS = [f.name for f in SCHEMA.fields]
TYPES: list[PrimitiveType] = [LONG, STRING, DOUBLE, DATE]
SPEC = parse_partition_by("bucket(4, id), truncate(2, s), x, month(d)", SCHEMA)
ALPHABET = "abc\u00e9\U0001f600"


def _value(rng: random.Random, column: str, nullable: bool = True) -> Any:
    if nullable and rng.random() < 0.1:
        return None
    if column == "id":
        return rng.randint(-20, 20)
    if column == "s":
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4)))
    if column == "x":
        if nullable and rng.random() < 0.1:
            return float("nan")
        return round(rng.uniform(-5, 5), 1)
    return rng.randint(-70, 70)


def _leaf(rng: random.Random) -> BooleanExpression:
    column = rng.choice(COLUMNS)
    v = _value(rng, column, nullable=False)
    others = {v, *(_value(rng, column, nullable=False) for _ in range(rng.randint(1, 3)))}
    ops: list[Callable[[], BooleanExpression]] = [
        lambda: EqualTo(column, v), lambda: NotEqualTo(column, v), lambda: LessThan(column, v),
        lambda: LessThanOrEqual(column, v), lambda: GreaterThan(column, v),
        lambda: GreaterThanOrEqual(column, v), lambda: IsNull(column), lambda: NotNull(column),
        lambda: In(column, others), lambda: NotIn(column, others),
    ]
    if column == "s":
        ops += [lambda: StartsWith(column, v[:2]), lambda: NotStartsWith(column, v[:2])] * 3
    if column == "x":
        ops += [lambda: IsNaN(column), lambda: NotNaN(column)]
    return rng.choice(ops)()


def _predicate(rng: random.Random, depth: int = 2) -> BooleanExpression:
    if depth == 0 or rng.random() < 0.4:
        return _leaf(rng)
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        return Not(_predicate(rng, depth - 1))
    left, right = _predicate(rng, depth - 1), _predicate(rng, depth - 1)
    return And(left, right) if kind == "and" else Or(left, right)


def _increment(s: str) -> str | None:
    """The smallest string above every string with prefix ``s`` (Java's truncated max)."""
    chars = list(s)
    while chars:
        cp = ord(chars[-1]) + 1
        if cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF:
            chars[-1] = chr(cp)
            return "".join(chars)
        chars.pop()
    return None


def _metrics(rng: random.Random, rows: list[tuple[Any, ...]]) -> DataFile:
    value_counts: dict[int, int] = {}
    null_counts: dict[int, int] = {}
    nan_counts: dict[int, int] = {}
    lowers: dict[int, bytes] = {}
    uppers: dict[int, bytes] = {}
    for pos, (name, t) in enumerate(zip(COLUMNS, TYPES, strict=True)):
        fid = pos + 1
        values = [r[pos] for r in rows]
        value_counts[fid] = len(values)
        null_counts[fid] = sum(v is None for v in values)
        real = [v for v in values if v is not None and v == v]
        if name == "x":
            nan_counts[fid] = sum(v is not None and v != v for v in values)
        if real:
            lo, hi = min(real), max(real)
            if name == "s" and rng.random() < 0.5:
                lo, hi = lo[:2], (hi if len(hi) <= 2 else _increment(hi[:2]))
            lowers[fid] = to_bytes(t, lo)
            if hi is not None:
                uppers[fid] = to_bytes(t, hi)
    maps = [value_counts, null_counts, nan_counts, lowers, uppers]
    for m in maps:
        for key in list(m):
            if rng.random() < 0.1:
                del m[key]
    return DataFile(FileContent.DATA, "f.parquet", "PARQUET", (), len(rows), 1,
                    value_counts=value_counts, null_value_counts=null_counts,
                    nan_value_counts=nan_counts, lower_bounds=lowers, upper_bounds=uppers)


def _summaries(partitions: list[tuple[Any, ...]]) -> list[PartitionFieldSummary]:
    ptype = SPEC.partition_type(SCHEMA)
    out = []
    for pos, field in enumerate(ptype.fields):
        t = field.field_type
        assert isinstance(t, PrimitiveType)
        values = [p[pos] for p in partitions]
        real = [v for v in values if v is not None and v == v]
        has_nan = any(isinstance(v, float) and v != v for v in values)
        out.append(PartitionFieldSummary(
            contains_null=any(v is None for v in values),
            contains_nan=has_nan if isinstance(t, type(DOUBLE)) else None,
            lower_bound=to_bytes(t, min(real)) if real else None,
            upper_bound=to_bytes(t, max(real)) if real else None,
        ))
    return out


def _partition(row: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for pf in SPEC.fields:
        t = SCHEMA.find_type(pf.source_id)
        assert isinstance(t, PrimitiveType)
        out.append(pf.transform.transform(t)(row[pf.source_id - 1]))
    return tuple(out)


def _arrow(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({
        "id": pa.array([r[0] for r in rows], pa.int64()),
        "s": pa.array([r[1] for r in rows], pa.large_string()),
        "x": pa.array([r[2] for r in rows], pa.float64()),
        "d": pa.array([r[3] for r in rows], pa.date32()),
        "row": pa.array(range(len(rows)), pa.int64()),
    })


@pytest.mark.parametrize("seed", range(40))
def test_evaluators_never_contradict_the_rows(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(6):
        rows = [tuple(_value(rng, c) for c in COLUMNS) for _ in range(rng.randint(1, 8))]
        data_file = _metrics(rng, rows)
        partitions = [_partition(r) for r in rows]
        manifest = ManifestFile("m.avro", 1, 0, partitions=_summaries(partitions))
        table = _arrow(rows)
        for _ in range(12):
            pred = _predicate(rng)
            matches = [evaluator(SCHEMA, pred)(r) for r in rows]
            context = f"{pred} on {rows}"

            inclusive = InclusiveMetricsEvaluator(SCHEMA, pred)
            kept = inclusive.eval(data_file)
            assert inclusive.explain(data_file)[0] is kept
            if not kept:
                assert not any(matches), f"pruned a file with a match: {context}"

            strict = StrictMetricsEvaluator(SCHEMA, pred)
            all_match = strict.eval(data_file)
            assert strict.explain(data_file)[0] is all_match
            if all_match:
                assert all(matches), f"strict accepted a non-match: {context}"

            partition_filter = inclusive_projection(SCHEMA, SPEC)(pred)
            manifest_kept = manifest_evaluator(SPEC, SCHEMA, partition_filter)(manifest)
            explained = manifest_evaluator_explain(SPEC, SCHEMA, partition_filter)(manifest)
            assert explained[0] is manifest_kept
            if not manifest_kept:
                assert not any(matches), f"pruned a manifest with a match: {context}"

            residual = residual_evaluator(SPEC, pred, SCHEMA)
            for row, part, match in zip(rows, partitions, matches, strict=True):
                assert evaluator(SCHEMA, residual(part))(row) is match, context

            selected = table.filter(arrow_filter(SCHEMA, pred)).column("row").to_pylist()
            assert selected == [i for i, m in enumerate(matches) if m], context
