"""``{{ text|ids_short }}``: a sentence of the audit trail with every snapshot id in it cut to
its first four and last three digits (``2571…203``), the whole id on hover; the rest of the
text is escaped."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

#: Snapshot ids are 64-bit: a run of 10 or more digits is one (counts have separators).
_ID = re.compile(r"(?<![\d,.])(-?\d{10,})(?![\d,])")


@register.filter
def ids_short(text: str | None) -> SafeString:
    parts = _ID.split(str(text or ""))
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(format_html('<span class="id" title="{}">{}…{}</span>', part,
                                   part[:4], part[-3:]))
        else:
            out.append(escape(part))
    return mark_safe("".join(out))  # every part was escaped above
