"""Sorting a paged list on the server, the one way every paged page does it: ``?sort=KEY``
(ascending) or ``?sort=-KEY`` (descending), KEY one of the page's keys; rows without a value
for the key (None) come last either way. The headings link the sorts
(``{% sort_head %}`` in explorer.templatetags.pages), so a sort spans every page, not only
the rows on screen."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from floe.errors import ValidationError

R = TypeVar("R")


def parse_sort(raw: str | None, keys: Sequence[str], param: str = "sort"
               ) -> tuple[str, bool]:
    """(key, descending) of a ``sort`` parameter; ("", False) when absent. An unknown key is a
    400 naming the keys there are."""
    text = (raw or "").strip()
    if not text:
        return "", False
    key = text.lstrip("-")
    if key not in keys:
        raise ValidationError(f"query parameter {param!r}: cannot sort by {key!r}; sort by "
                              f"one of {', '.join(keys)} (a leading '-' for descending)")
    return key, text.startswith("-")


def sort_rows(rows: Sequence[R], value: Callable[[R], Any], descending: bool = False,
              group: Callable[[R], Any] | None = None) -> list[R]:
    """``rows`` ordered by ``value`` (None last), within ``group`` when given (groups keep
    their order of first appearance)."""
    present = [r for r in rows if value(r) is not None]
    present.sort(key=value, reverse=descending)
    ordered = present + [r for r in rows if value(r) is None]
    if group is None:
        return ordered
    first: dict[Any, int] = {}
    for i, r in enumerate(rows):
        first.setdefault(group(r), i)
    return sorted(ordered, key=lambda r: first[group(r)])  # stable: the sort within stays


def by_key(key: str) -> Callable[[Any], Any]:
    """The value of ``key`` of a row that is a mapping or an object."""
    def value(row: Any) -> Any:
        return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)

    return value
