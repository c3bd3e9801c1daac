"""``{% include "explorer/crumbs.html" %}``'s helper: a dotted namespace as its levels, each
with the name of the namespace it ends (``lake.raw`` → ``lake``, ``lake.raw``), so every level
of a breadcrumb links its own namespace page."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def ns_levels(namespace: str | None) -> list[tuple[str, str]]:
    """``(level, namespace up to that level)`` for each level of ``namespace``."""
    levels = (namespace or "").split(".") if namespace else []
    return [(level, ".".join(levels[:i + 1])) for i, level in enumerate(levels)]
