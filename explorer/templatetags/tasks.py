"""``{{ run|progress_text }}``: a task run's stage and counts while it runs, the sentence of what
happened once it finished (explorer.tasks.outcomes), as the API and explorer/tasks.js show it."""

from __future__ import annotations

from typing import Any

from django import template

from explorer.tasks import outcomes

register = template.Library()


@register.filter
def progress_text(run: Any) -> str:
    return outcomes.progress_text(run)
