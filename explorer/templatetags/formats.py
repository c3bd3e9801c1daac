"""Numbers for people, the same on every page (a builtin of the templates, no ``load``):
``{{ n|bytes }}`` is a size in binary units (KiB, MiB, …, as the charts' axes) with the exact
byte count on hover, ``{{ text|sizes }}`` the same for the byte counts of a sentence;
``{{ n|count }}`` a count with thousands separators, "—" for unknown."""

from __future__ import annotations

from typing import Any

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from explorer.units import size_text, sizes_in_text

register = template.Library()

@register.filter(name="bytes")
def bytes_(n: Any) -> str:
    if n is None or n == "":
        return "—"
    try:
        number = int(n)
    except (TypeError, ValueError):
        return str(n)
    return format_html('<span class="size" title="{} bytes">{}</span>', intcomma(number),
                       size_text(number))


@register.filter
def sizes(text: Any) -> str:
    """A sentence with its byte counts (``… 536870912 bytes …``) in binary units."""
    return sizes_in_text(str(text))


@register.filter
def count(n: Any) -> str:
    if n is None or n == "":
        return "—"
    return str(intcomma(n))


_CONTENT = {"data": "Data", "position_deletes": "Position delete",
            "equality_deletes": "Equality delete"}


@register.filter
def content_label(content: Any) -> str:
    """A manifest entry's content for a heading: ``position_deletes`` → ``Position delete``."""
    return _CONTENT.get(str(content), str(content).replace("_", " ").capitalize())


@register.filter
def summary_value(value: Any, key: str) -> str:
    """A snapshot summary value: sizes (``…-size``) in binary units, counts with separators,
    anything else as written."""
    text = str(value)
    if not text.lstrip("-").isdigit():
        return text
    return bytes_(int(text)) if key.endswith("-size") else count(int(text))


def _local(path: str) -> str:
    """``file:/x`` and ``file:///x`` as ``/x``: a table written by Spark names its files one
    way and its location the other."""
    if path.startswith("file://"):
        return path[len("file://"):]
    return path[len("file:"):] if path.startswith("file:") else path


@register.filter
def in_table(path: Any, location: Any) -> str:
    """A file's path as the file, manifest and plan tables show it: relative to the table's
    ``location`` when it lies inside it (the full path goes in the cell's title and on the
    file's own page), else whole."""
    if not path or not location:
        return "" if path is None else str(path)
    text, root = str(path), _local(str(location)).rstrip("/") + "/"
    local = _local(text)
    return local[len(root):] if local.startswith(root) and len(local) > len(root) else text


#: What a JSON document needs escaped inside a <script> element: "</script>" or "<!--" in a
#: string of it (a partition value) would end the element or change how it is parsed.
_SCRIPT_JSON_ESCAPES = {ord("<"): "\\u003C", ord(">"): "\\u003E", ord("&"): "\\u0026"}


@register.filter
def script_json(text: Any) -> str:
    """A JSON document (text) to put inside ``<script type="application/json">``: the same
    JSON, with ``<``, ``>`` and ``&`` written as ``\\u`` escapes (as Django's json_script)."""
    return mark_safe(str(text).translate(_SCRIPT_JSON_ESCAPES))


@register.filter
def duration_ago(seconds: Any) -> str:
    """An age in seconds for people: ``40 s ago``, ``5 min ago``, ``3 h ago``, ``12 d ago``."""
    if seconds is None or seconds == "":
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s} s ago"
    if s < 3600:
        return f"{s // 60} min ago"
    if s < 86400:
        return f"{s // 3600} h ago"
    return f"{s // 86400:,} d ago"
