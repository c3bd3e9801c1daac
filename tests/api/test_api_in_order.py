"""IN lists in the order typed (issue 19, point 14): ``x IN (3, 1, 2)`` was shown sorted as text
(``IN (1, 2, 3)``, and ``IN (10, 2, 30)`` as ``IN (10, 2, 30)`` only by luck) in the bound
filter, the residuals and the plan's explanations; now every one of them keeps the order."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

EVENTS = "/catalogs/local/namespaces/web/tables/events/"
FILTER = "event_id IN (3000, 10, 200, 20) AND kind NOT IN ('view', 'click')"
SHOWN = ["event_id IN (3000, 10, 200, 20)", "kind NOT IN ('view', 'click')"]


def test_the_plan_endpoint_keeps_in_lists_in_the_order_typed(demo: Path) -> None:
    body = Client().get("/api" + EVENTS + "plan/", {"filter": FILTER}).json()
    assert body["filter"] == body["bound_filter"] == " AND ".join(SHOWN)
    files = [f for m in body["results"] for f in m["files"]]
    assert files and all(all(s in f["reason"] for s in SHOWN) for f in files)
    assert all(f["residual"] == " AND ".join(SHOWN) for f in files if f["kept"])


def test_the_plan_page_keeps_in_lists_in_the_order_typed(demo: Path) -> None:
    page = html.unescape(Client().get(EVENTS + "plan/", {"filter": FILTER}).content.decode())
    assert page.count(" AND ".join(SHOWN)) >= 2  # the filter as bound, and the residuals
    assert "IN (10, " not in page and "IN ('click'" not in page
