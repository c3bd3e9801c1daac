"""Sort orders (spec "Sorting", Appendix C "Sort Orders").

A sort order is a list of sort fields, each a transform of a source column with a direction
and a null order. Order id 0 is reserved for the unsorted order, which has no fields.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from floe.errors import ValidationError
from floe.partitioning import parse_term, split_terms
from floe.schema import Schema
from floe.transforms import Transform, parse_transform

__all__ = [
    "INITIAL_SORT_ORDER_ID",
    "UNSORTED_SORT_ORDER",
    "NullOrder",
    "SortDirection",
    "SortField",
    "SortOrder",
    "parse_sort_by",
]

#: Java's ``TableMetadata.INITIAL_SORT_ORDER_ID``: the first real sort order of a table.
INITIAL_SORT_ORDER_ID = 1

_ORDER_ID = "order-id"
_FIELDS = "fields"
_TRANSFORM = "transform"
_SOURCE_ID = "source-id"
_SOURCE_IDS = "source-ids"
_DIRECTION = "direction"
_NULL_ORDER = "null-order"


class SortDirection(Enum):
    ASC = "asc"
    DESC = "desc"

    def __str__(self) -> str:
        return self.value


class NullOrder(Enum):
    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def default_for(cls, direction: SortDirection) -> NullOrder:
        """Iceberg's default: nulls sort low, so first when ascending, last when descending."""
        return cls.NULLS_FIRST if direction is SortDirection.ASC else cls.NULLS_LAST


@dataclass(frozen=True, slots=True)
class SortField:
    """``transform(source column)`` sorted in ``direction`` with nulls ``null_order``."""

    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST

    def __str__(self) -> str:
        return f"{self.transform}({self.source_id}) {self.direction} {self.null_order}"

    def to_json(self) -> dict[str, Any]:
        """Appendix C: ``{"transform", "source-id", "direction", "null-order"}``."""
        return {
            _TRANSFORM: str(self.transform),
            _SOURCE_ID: self.source_id,
            _DIRECTION: self.direction.value,
            _NULL_ORDER: self.null_order.value,
        }

    @classmethod
    def from_json(cls, obj: Any) -> SortField:
        if not isinstance(obj, dict):
            raise ValidationError(f"a sort field must be an object, got {obj!r:.200}")
        transform = obj.get(_TRANSFORM)
        if not isinstance(transform, str):
            raise ValidationError(f"sort field has no string 'transform': {obj!r:.200}")
        source_id = obj.get(_SOURCE_ID)
        if source_id is None and isinstance(obj.get(_SOURCE_IDS), list) and obj[_SOURCE_IDS]:
            source_id = obj[_SOURCE_IDS][0]  # v3 multi-argument transforms; keep the first
        if not isinstance(source_id, int) or isinstance(source_id, bool):
            raise ValidationError(f"sort field has no integer 'source-id': {obj!r:.200}")
        return cls(
            source_id,
            parse_transform(transform),
            _direction(obj.get(_DIRECTION)),
            _null_order(obj.get(_NULL_ORDER)),
        )


def _direction(text: Any) -> SortDirection:
    if isinstance(text, str):
        try:
            return SortDirection(text.strip().lower())
        except ValueError:
            pass
    raise ValidationError(f"invalid sort direction {text!r} (expected 'asc' or 'desc')")


def _null_order(text: Any) -> NullOrder:
    if isinstance(text, str):
        try:
            return NullOrder(text.strip().lower().replace("_", "-"))
        except ValueError:
            pass
    raise ValidationError(
        f"invalid null order {text!r} (expected 'nulls-first' or 'nulls-last')"
    )


class SortOrder:
    """An immutable sort order. Without fields it is the unsorted order (id 0).

    ``order_id`` defaults to 1 when there are fields and to 0 when there are none; the spec
    reserves 0 for the unsorted order, so a sorted order with id 0 is rejected.
    """

    __slots__ = ("_fields", "_order_id")

    _fields: tuple[SortField, ...]
    _order_id: int

    def __init__(self, *fields: SortField, order_id: int | None = None) -> None:
        if order_id is None:
            order_id = INITIAL_SORT_ORDER_ID if fields else 0
        if fields and order_id == 0:
            raise ValidationError("sort order id 0 is reserved for the unsorted order")
        if not fields and order_id != 0:
            raise ValidationError(f"the unsorted order must have id 0, got {order_id}")
        object.__setattr__(self, "_fields", tuple(fields))
        object.__setattr__(self, "_order_id", order_id)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("sort orders are immutable")

    @property
    def fields(self) -> tuple[SortField, ...]:
        return self._fields

    @property
    def order_id(self) -> int:
        return self._order_id

    @property
    def is_unsorted(self) -> bool:
        return not self._fields

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[SortField]:
        return iter(self._fields)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SortOrder)
            and self._order_id == other._order_id
            and self._fields == other._fields
        )

    def __hash__(self) -> int:
        return hash((self._order_id, self._fields))

    def __repr__(self) -> str:
        inner = ", ".join(repr(f) for f in self._fields)
        sep = ", " if inner else ""
        return f"SortOrder({inner}{sep}order_id={self._order_id})"

    def __str__(self) -> str:
        if not self._fields:
            return "[]"
        return "[\n" + "".join(f"  {f}\n" for f in self._fields) + "]"

    def same_order(self, other: SortOrder) -> bool:
        """Equal fields, ignoring the order id (Java's ``sameOrder``)."""
        return self._fields == other._fields

    def with_order_id(self, order_id: int) -> SortOrder:
        return SortOrder(*self._fields, order_id=order_id)

    def to_json(self) -> dict[str, Any]:
        return {_ORDER_ID: self._order_id, _FIELDS: [f.to_json() for f in self._fields]}

    @classmethod
    def from_json(cls, obj: Any) -> SortOrder:
        if not isinstance(obj, dict):
            raise ValidationError(f"a sort order must be an object, got {obj!r:.200}")
        order_id = obj.get(_ORDER_ID)
        if not isinstance(order_id, int) or isinstance(order_id, bool):
            raise ValidationError(f"sort order has no integer 'order-id': {obj!r:.200}")
        fields = obj.get(_FIELDS)
        if not isinstance(fields, list):
            raise ValidationError(f"sort order {order_id} has no 'fields' array")
        return cls(*(SortField.from_json(f) for f in fields), order_id=order_id)


#: The unsorted order: id 0, no fields.
UNSORTED_SORT_ORDER = SortOrder(order_id=0)

_SUFFIX = re.compile(
    r"^(?P<expr>.*?)(?:\s+(?P<dir>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def parse_sort_by(
    text: str, schema: Schema, order_id: int = INITIAL_SORT_ORDER_ID,
    case_sensitive: bool = True,
) -> SortOrder:
    """Build an order from ``"id desc nulls last, day(ts), bucket(16, s) asc"``.

    Terms are those of :func:`floe.partitioning.parse_partition_by`. Without a direction a
    term sorts ascending; without a null order, ascending puts nulls first and descending puts
    nulls last (Iceberg's and Spark's defaults). An empty text gives the unsorted order.
    """
    if not text.strip():
        return UNSORTED_SORT_ORDER
    fields = []
    for term in split_terms(text):
        m = _SUFFIX.match(term)
        assert m is not None  # the pattern matches every string
        expr = m.group("expr").strip()
        if not expr:
            raise ValidationError(f"missing column in sort term {term!r}")
        direction = SortDirection((m.group("dir") or "asc").lower())
        nulls = m.group("nulls")
        if nulls is None:
            null_order = NullOrder.default_for(direction)
        else:
            null_order = NullOrder(f"nulls-{nulls.lower()}")
        transform, source, _ = parse_term(expr, schema, case_sensitive)
        fields.append(SortField(source.field_id, transform, direction, null_order))
    return SortOrder(*fields, order_id=order_id)
