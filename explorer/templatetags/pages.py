"""``{% page_url "page" n %}``: the current URL's query string with one page parameter set,
so every pager keeps the filters, selections and sort the page was opened with."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def page_url(context: dict[str, Any], param: str, number: int) -> str:
    query = context["request"].GET.copy()
    query[param] = str(number)
    return "?" + query.urlencode()
