"""floe.expressions.json: the REST catalog's expression JSON (rest-catalog-open-api.yaml
``Predicate``) read into floe expressions and written back as Java's ``ExpressionParser``
writes it; both the ``term``/``value`` form and the ``child``/``left``/``right`` form are read;
anything else is FilterInvalid naming the problem."""

from __future__ import annotations

import json
from typing import Any

import pytest

from floe.errors import FilterInvalid, FilterTooDeep
from floe.expressions import bind, parse_filter
from floe.expressions.json import expression_from_json, expression_to_json
from floe.schema import Schema
from floe.types import DATE, DOUBLE, LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                NestedField(3, "v", DOUBLE), NestedField(4, "d", DATE))

# (JSON as Java writes it, the same filter in floe's syntax)
VECTORS: list[tuple[Any, str]] = [
    (True, "TRUE"),
    (False, "FALSE"),
    ({"type": "eq", "term": "id", "value": 5}, "id = 5"),
    ({"type": "not-eq", "term": "cat", "value": "a"}, "cat != 'a'"),
    ({"type": "lt", "term": "v", "value": 1.5}, "v < 1.5"),
    ({"type": "lt-eq", "term": "id", "value": 5}, "id <= 5"),
    ({"type": "gt", "term": "id", "value": 5}, "id > 5"),
    ({"type": "gt-eq", "term": "d", "value": "2024-01-03"}, "d >= DATE '2024-01-03'"),
    ({"type": "starts-with", "term": "cat", "value": "ab"}, "cat STARTS WITH 'ab'"),
    ({"type": "not-starts-with", "term": "cat", "value": "ab"}, "cat NOT STARTS WITH 'ab'"),
    ({"type": "in", "term": "id", "values": [1, 2, 3]}, "id IN (1, 2, 3)"),
    ({"type": "not-in", "term": "cat", "values": ["a", "b"]}, "cat NOT IN ('a', 'b')"),
    ({"type": "is-null", "term": "cat"}, "cat IS NULL"),
    ({"type": "not-null", "term": "cat"}, "cat IS NOT NULL"),
    ({"type": "is-nan", "term": "v"}, "v IS NAN"),
    ({"type": "not-nan", "term": "v"}, "v IS NOT NAN"),
    ({"type": "and", "left": {"type": "eq", "term": "id", "value": 1},
      "right": {"type": "or", "left": {"type": "is-null", "term": "cat"},
                "right": {"type": "gt", "term": "v", "value": 2.0}}},
     "id = 1 AND (cat IS NULL OR v > 2.0)"),
]


@pytest.mark.parametrize(("doc", "text"), VECTORS, ids=[t for _, t in VECTORS])
def test_java_form_reads_as_floes_filter_and_writes_back(doc: Any, text: str) -> None:
    expr = expression_from_json(doc)
    assert bind(SCHEMA, expr) == bind(SCHEMA, parse_filter(text))
    assert expression_to_json(bind(SCHEMA, expr)) == doc


# (the newer or looser form, the same filter in floe's syntax)
OTHER_FORMS: list[tuple[Any, str]] = [
    ({"type": "true"}, "TRUE"),
    ({"type": "literal", "value": False}, "FALSE"),
    ({"type": "eq", "left": {"type": "reference", "name": "id"}, "right": 5}, "id = 5"),
    ({"type": "eq", "left": {"type": "reference", "id": 2},
      "right": {"type": "literal", "value": "x"}}, "cat = 'x'"),
    ({"type": "eq", "term": {"type": "reference", "term": "id"}, "value": 5}, "id = 5"),
    ({"type": "in", "child": {"type": "reference", "name": "id"},
      "values": {"type": "literals", "values": [1, 2], "data-type": "long"}}, "id IN (1, 2)"),
    ({"type": "is-null", "child": {"type": "reference", "name": "cat"}}, "cat IS NULL"),
    ({"type": "not", "child": {"type": "lt", "term": "id", "value": 3}}, "id >= 3"),
    ({"type": "GT", "term": "id", "value": 3}, "id > 3"),
]


@pytest.mark.parametrize(("doc", "text"), OTHER_FORMS, ids=[t for _, t in OTHER_FORMS])
def test_other_forms_are_read(doc: Any, text: str) -> None:
    assert bind(SCHEMA, expression_from_json(doc, SCHEMA)) == bind(SCHEMA, parse_filter(text))


BAD: list[tuple[str, Any, str]] = [
    ("not an object", [1], "must be true, false or an object"),
    ("no type", {"term": "id"}, "no string 'type'"),
    ("unknown type", {"type": "between", "term": "id"}, "unknown expression type"),
    ("and without right", {"type": "and", "left": True}, "no 'right'"),
    ("comparison without value", {"type": "eq", "term": "id"}, "has no value"),
    ("unary with a value", {"type": "is-null", "term": "id", "value": 1}, "invalid 'value'"),
    ("in with a value", {"type": "in", "term": "id", "value": 1}, "invalid 'value'"),
    ("in without values", {"type": "in", "term": "id"}, "needs 'values'"),
    ("null literal", {"type": "eq", "term": "id", "value": None}, "not a literal value"),
    ("object literal", {"type": "eq", "term": "id", "value": {"a": 1}}, "not a literal"),
    ("no column", {"type": "eq", "value": 1}, "has no column"),
    ("transform", {"type": "eq", "term": {"type": "transform", "transform": "day",
                                          "term": "d"}, "value": 1}, "transform"),
    ("function", {"type": "eq", "left": {"type": "apply", "function": "f", "arguments": []},
                  "right": 1}, "apply"),
    ("unknown field id", {"type": "is-null", "child": {"type": "reference", "id": 99}},
     "field id 99"),
]


@pytest.mark.parametrize(("doc", "needle"), [(d, n) for _, d, n in BAD],
                         ids=[name for name, _, _ in BAD])
def test_bad_json_is_refused_with_a_reason(doc: Any, needle: str) -> None:
    with pytest.raises(FilterInvalid, match=needle):
        expression_from_json(doc, SCHEMA)


def test_nesting_is_bounded() -> None:
    deep = json.loads('{"type": "not", "child": ' * 500 + "true" + "}" * 500)
    with pytest.raises(FilterTooDeep):
        expression_from_json(deep)
