"""Long and deep filters on the plan and preview pages (issue 19, point 4): a filter of hundreds
of terms was a 500 (RecursionError); now the page plans and reads it, and a filter nested past
floe.expressions.MAX_DEPTH is a 400 saying so above the form that keeps what was typed."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table
from floe.expressions import MAX_DEPTH
from floe.scan.readers import plan_to_table
from floe.scan import plan_files

pytestmark = pytest.mark.django_db

EVENTS = "/catalogs/local/namespaces/web/tables/events/"
LONG = " OR ".join(f"event_id = {i}" for i in range(500))
DEEP = "(" * 10_000 + "event_id = 1" + ")" * 10_000


def _rows(demo: Path, text: str) -> int:
    t = directory_table(str(demo / "web" / "events"))
    return plan_to_table(t.io, plan_files(t.io, t.metadata, row_filter=text), ["event_id"]
                         ).num_rows


def test_the_plan_page_plans_a_filter_of_500_terms(demo: Path) -> None:
    response = Client(raise_request_exception=False).get(EVENTS + "plan/", {"filter": LONG})
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "event_id = 0 OR event_id = 1 OR event_id = 2" in page
    assert "event_id = 498 OR event_id = 499" in page


def test_the_preview_page_reads_a_filter_of_500_terms(demo: Path) -> None:
    response = Client(raise_request_exception=False).get(
        EVENTS + "preview/", {"filter": LONG, "columns": "event_id", "limit": "1000"})
    assert response.status_code == 200
    shown = re.search(r'<span id="row-count">([\d,]+)</span>', response.content.decode())
    assert shown is not None
    assert int(shown.group(1).replace(",", "")) == min(1000, _rows(demo, LONG)) > 0


@pytest.mark.parametrize("page", ["plan/", "preview/"])
def test_a_filter_nested_too_deep_is_a_400_above_the_form(demo: Path, page: str) -> None:
    response = Client(raise_request_exception=False).get(EVENTS + page, {"filter": DEEP})
    assert response.status_code == 400
    text = html.unescape(response.content.decode())
    assert (f"the filter nests more than {MAX_DEPTH} levels deep at position {MAX_DEPTH + 1}"
            in text)
    assert f'value="{DEEP}"' in text  # the form keeps what was typed
