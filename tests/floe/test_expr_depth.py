"""Long and deep filters (issue 19, point 4): a filter of thousands of terms parses, binds,
prints, projects and evaluates without recursion limits; a filter nested deeper than
MAX_DEPTH is refused with one clear, one-line FilterTooDeep; IN lists keep the order typed."""

from __future__ import annotations

import functools
import operator
from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.filesystem import directory_table
from floe.cli import main
from floe.demo import create_demo_warehouse
from floe.errors import FilterTooDeep, ValidationError
from floe.expressions import (
    MAX_DEPTH,
    And,
    EqualTo,
    In,
    NotIn,
    Or,
    arrow_filter,
    bind,
    depth,
    evaluator,
    inclusive_projection,
    parse_filter,
    residual_evaluator,
    strict_projection,
)
from floe.scan.readers import plan_to_table
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=False),
                NestedField(2, "s", STRING, required=False))
TERMS = 2000


def _ors(n: int) -> str:
    return " OR ".join(f"id = {i}" for i in range(n))


# --- length: no limit ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    _ors(TERMS),
    " AND ".join(f"id != {i}" for i in range(TERMS)),
    " OR ".join(f"(id = {i} AND s != 'x{i}')" for i in range(TERMS)),
    "NOT " * 10_001 + "(" + _ors(TERMS) + ")",
], ids=["or-chain", "and-chain", "or-of-ands", "10001-nots"])
def test_a_long_filter_parses_prints_binds_and_evaluates(text: str) -> None:
    expr = parse_filter(text)
    assert depth(expr) <= 14  # balanced: log2(2000) + the AND inside each term
    printed = str(expr)
    assert parse_filter(printed) == expr  # printing is the filter syntax again
    bound = bind(SCHEMA, expr)
    assert depth(bound) <= 14 and str(bound)
    matches = evaluator(SCHEMA, expr)
    rows = [(i, f"y{i}") for i in (0, 1, 1999, 2000, 5000)]
    negated = text.startswith("NOT") or " AND " in text and "!=" in text and "(" not in text
    expected = [(i < TERMS) != negated for i, _ in rows]
    assert [matches(r) for r in rows] == expected
    table = pa.table({"id": [r[0] for r in rows], "s": [r[1] for r in rows]})
    kept = table.filter(arrow_filter(SCHEMA, expr))["id"].to_pylist()
    assert kept == [r[0] for r, e in zip(rows, expected, strict=True) if e]


def test_a_long_filter_projects_through_partition_transforms() -> None:
    expr = parse_filter(_ors(TERMS))
    for spec_text, inclusive_size in (("id", TERMS), ("bucket(8, id)", 8),
                                      ("truncate(10, id)", TERMS // 10)):
        spec = parse_partition_by(spec_text, SCHEMA)
        projected = inclusive_projection(SCHEMA, spec)(expr)
        assert depth(projected) <= 12 and str(projected)
        values = {p.split(" = ")[1] for p in str(projected).split(" OR ")}
        assert len(values) == inclusive_size
        assert str(strict_projection(SCHEMA, spec)(expr))
        residual = residual_evaluator(spec, expr, SCHEMA)((7,))
        assert str(residual)


def test_a_chain_built_in_code_is_rebalanced_when_bound() -> None:
    """A left-deep chain (functools.reduce over |, or And(*many)) binds and prints."""
    preds = [EqualTo("id", i) for i in range(5000)]
    left_deep = functools.reduce(operator.or_, preds)
    bound = bind(SCHEMA, left_deep)
    assert depth(bound) == 13 and str(bound).count(" OR ") == 4999
    assert evaluator(SCHEMA, left_deep)((4999, None))
    assert depth(And(*[EqualTo("id", i) for i in range(1000)])) == 10
    assert depth(Or(*[EqualTo("id", i) for i in range(3)])) == 2


def test_a_long_filter_plans_and_reads_a_real_table(tmp_path: Path) -> None:
    create_demo_warehouse(str(tmp_path))
    table = directory_table(str(tmp_path / "web" / "events"))
    ids = plan_to_table(table.io, plan_files(table.io, table.metadata))["event_id"].to_pylist()
    wanted = sorted(set(ids))[::3][:600]
    text = " OR ".join(f"event_id = {i}" for i in wanted) + " OR " + " OR ".join(
        f"event_id = {-i}" for i in range(1, 400))
    plan = plan_files(table.io, table.metadata, row_filter=text, explain=True)
    read = plan_to_table(table.io, plan)
    assert sorted(read["event_id"].to_pylist()) == sorted(i for i in ids if i in set(wanted))
    assert str(plan.bound_filter).count(" OR ") == len(wanted) + 398


# --- depth: one limit, one clear error ----------------------------------------------------------


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 10_000])
def test_parentheses_deeper_than_the_limit_are_refused_in_one_line(levels: int) -> None:
    text = "(" * levels + "id = 1" + ")" * levels
    with pytest.raises(FilterTooDeep) as caught:
        parse_filter(text)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 300
    assert f"more than {MAX_DEPTH} levels" in message
    assert f"at position {MAX_DEPTH + 1}" in message  # the parenthesis one too many
    assert isinstance(caught.value, ValidationError)


def test_nesting_up_to_the_limit_parses_binds_and_prints() -> None:
    text = "(" * MAX_DEPTH + "id = 1" + ")" * MAX_DEPTH
    assert str(bind(SCHEMA, parse_filter(text))) == "id = 1"
    right_deep = "id = 0"
    for i in range(1, MAX_DEPTH):
        right_deep = f"id = {i} OR ({right_deep})" if i % 2 else f"s = 'a' AND ({right_deep})"
    expr = parse_filter("s = 'z' AND NOT (" + right_deep + ")")
    assert depth(expr) == MAX_DEPTH and str(bind(SCHEMA, expr))
    assert not evaluator(SCHEMA, expr)((1, "b"))


def test_operators_nested_past_the_limit_are_refused() -> None:
    """Alternating OR / AND (no chain to balance): two levels per parenthesis, so the
    expression is too deep before the parentheses are."""
    text = "id = 0"
    for i in range(1, MAX_DEPTH // 2 + 2):
        text = f"id = {i} OR s = 'a' AND ({text})"
    with pytest.raises(FilterTooDeep, match=f"more than {MAX_DEPTH} levels"):
        parse_filter(text)


def test_an_expression_built_too_deep_in_code_is_refused_by_bind() -> None:
    expr = EqualTo("id", 0)
    for i in range(1, 5000):  # And(Or(And(...))): nothing to rebalance
        expr = (And if i % 2 else Or)(EqualTo("id", i), expr)
    with pytest.raises(FilterTooDeep):
        bind(SCHEMA, expr)


def test_a_parse_error_in_a_long_filter_shows_a_window_of_it() -> None:
    text = _ors(TERMS) + " OR id = = 3"
    with pytest.raises(ValidationError) as caught:
        parse_filter(text)
    message = str(caught.value)
    assert f"position {len(text) - 2}" in message and len(message) < 400
    window, caret = message.splitlines()[1:]
    assert window.strip().endswith("id = = 3") and window[caret.index("^")] == "="


def test_the_cli_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    create_demo_warehouse(str(tmp_path))
    deep = "(" * 5000 + "event_id = 1" + ")" * 5000
    assert main(["plan", str(tmp_path / "web" / "events"), "--filter", deep]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("floe: the filter nests more than")


# --- IN lists in the order typed ----------------------------------------------------------------


def test_in_lists_keep_the_order_typed() -> None:
    expr = parse_filter("id IN (3, 1, 2, 3) AND s NOT IN ('b', 'a')")
    assert str(expr) == "id IN (3, 1, 2) AND s NOT IN ('b', 'a')"
    assert str(bind(SCHEMA, expr)) == "id IN (3, 1, 2) AND s NOT IN ('b', 'a')"
    assert str(parse_filter("NOT (id IN (30, 10, 20))")) == "id NOT IN (30, 10, 20)"
    assert In("id", [2, 1]) == In("id", [1, 2])  # order is for people, not for equality
    assert hash(NotIn("id", [2, 1])) == hash(NotIn("id", [1, 2]))
    spec = parse_partition_by("id", SCHEMA)
    assert str(inclusive_projection(SCHEMA, spec)(expr)) == "id IN (3, 1, 2)"
    residual = residual_evaluator(parse_partition_by("s", SCHEMA), expr, SCHEMA)(("c",))
    assert str(residual) == "id IN (3, 1, 2)"
