"""Sort orders: JSON both ways, ids, and the SORT BY mini-language with Iceberg's defaults."""

from __future__ import annotations

import pytest

from floe.errors import ValidationError
from floe.schema import Schema
from floe.sorting import (
    UNSORTED_SORT_ORDER,
    NullOrder,
    SortDirection,
    SortField,
    SortOrder,
    parse_sort_by,
)
from floe.transforms import parse_transform
from floe.types import LONG, STRING, TIMESTAMP, NestedField

SCHEMA = Schema(
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "ts", TIMESTAMP),
    NestedField(3, "s", STRING),
)


def test_sort_order_json_matches_java_layout() -> None:
    order = SortOrder(
        SortField(1, parse_transform("identity"), SortDirection.DESC, NullOrder.NULLS_LAST),
        SortField(2, parse_transform("day"), SortDirection.ASC, NullOrder.NULLS_FIRST),
        order_id=3,
    )
    doc = order.to_json()
    assert doc == {
        "order-id": 3,
        "fields": [
            {"transform": "identity", "source-id": 1, "direction": "desc",
             "null-order": "nulls-last"},
            {"transform": "day", "source-id": 2, "direction": "asc",
             "null-order": "nulls-first"},
        ],
    }
    assert list(doc["fields"][0]) == ["transform", "source-id", "direction", "null-order"]
    assert SortOrder.from_json(doc) == order


def test_unsorted_order() -> None:
    assert UNSORTED_SORT_ORDER.order_id == 0
    assert UNSORTED_SORT_ORDER.is_unsorted
    assert UNSORTED_SORT_ORDER.to_json() == {"order-id": 0, "fields": []}
    assert SortOrder.from_json({"order-id": 0, "fields": []}) == UNSORTED_SORT_ORDER
    assert SortOrder() == UNSORTED_SORT_ORDER


def test_order_ids_default_and_reserved_zero() -> None:
    f = SortField(1, parse_transform("identity"))
    assert SortOrder(f).order_id == 1
    with pytest.raises(ValidationError, match="reserved"):
        SortOrder(f, order_id=0)
    with pytest.raises(ValidationError, match="id 0"):
        SortOrder(order_id=2)


def test_from_json_accepts_upper_case_like_java() -> None:
    order = SortOrder.from_json(
        {"order-id": 1, "fields": [
            {"transform": "identity", "source-id": 1, "direction": "DESC",
             "null-order": "NULLS_LAST"}
        ]}
    )
    assert order.fields[0].direction is SortDirection.DESC
    assert order.fields[0].null_order is NullOrder.NULLS_LAST


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"fields": []},
        {"order-id": 1},
        {"order-id": 1, "fields": [{"source-id": 1, "direction": "asc",
                                    "null-order": "nulls-first"}]},
        {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1,
                                    "direction": "up", "null-order": "nulls-first"}]},
        {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1,
                                    "direction": "asc", "null-order": "sometimes"}]},
    ],
)
def test_malformed_sort_order_json(doc: object) -> None:
    with pytest.raises(ValidationError):
        SortOrder.from_json(doc)


def test_parse_sort_by_defaults_follow_direction() -> None:
    order = parse_sort_by("id desc nulls last, day(ts), s DESC, s ASC NULLS LAST", SCHEMA)
    assert order.order_id == 1
    assert [(f.source_id, str(f.transform), f.direction.value, f.null_order.value)
            for f in order.fields] == [
        (1, "identity", "desc", "nulls-last"),
        (2, "day", "asc", "nulls-first"),
        (3, "identity", "desc", "nulls-last"),
        (3, "identity", "asc", "nulls-last"),
    ]


def test_parse_sort_by_transforms_and_empty() -> None:
    order = parse_sort_by("bucket(16, id) desc nulls first, truncate(2, s)", SCHEMA, order_id=5)
    assert order.order_id == 5
    assert [str(f.transform) for f in order.fields] == ["bucket[16]", "truncate[2]"]
    assert order.fields[0].null_order is NullOrder.NULLS_FIRST
    assert parse_sort_by("", SCHEMA) == UNSORTED_SORT_ORDER


@pytest.mark.parametrize("text", ["nope", "id sideways", "day(s)", "desc"])
def test_parse_sort_by_errors(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_sort_by(text, SCHEMA)
