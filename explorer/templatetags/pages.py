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


@register.simple_tag
def field_value(values: dict[str, dict[str, str]], kind: str, name: str) -> str:
    """The value a form field of ``kind`` was posted with (to show it again), or ""."""
    return (values or {}).get(kind, {}).get(name, "")


@register.simple_tag(takes_context=True)
def sort_head(context: dict[str, Any], key: str, label: str, numeric: bool = False) -> str:
    """A column heading that links the server-side sort by ``key`` (explorer.sorting): the
    first click sorts ascending (descending for numbers), the next reverses; the page and
    every other parameter are kept (the page goes back to 1)."""
    from django.utils.html import format_html

    query = context["request"].GET.copy()
    current = query.get("sort", "")
    if current == key:
        target, state, arrow = f"-{key}", "ascending", " ▲"
    elif current == f"-{key}":
        target, state, arrow = key, "descending", " ▼"
    else:
        target, state, arrow = (f"-{key}" if numeric else key), "", ""
    query["sort"] = target
    query.pop("page", None)
    return format_html('<th scope="col" class="sort-head{}" data-sort-key="{}"{}><a href="?{}">{}{}</a></th>',
                       " num" if numeric else "", key,
                       format_html(' aria-sort="{}"', state) if state else "",
                       query.urlencode(), label, arrow)


@register.simple_tag
def change_form(value: Any) -> dict[str, Any]:
    """The evolve form's rows (as posted, or blank ones) and the operations a row offers."""
    from explorer.tasks.forms import CHANGE_OPS, CHANGE_ROW_INPUTS, CHANGE_ROWS_SHOWN

    rows = value if isinstance(value, list) else \
        [dict.fromkeys(CHANGE_ROW_INPUTS, "")] * CHANGE_ROWS_SHOWN
    return {"rows": rows, "ops": CHANGE_OPS}


@register.filter
def ms_time(ms: int | None) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS`` UTC."""
    import datetime as dt

    if not ms:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
