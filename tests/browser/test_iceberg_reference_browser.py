"""The Iceberg REST catalog's reference (``/iceberg/reference/``): Swagger UI, served by the
site like the API's, shows every operation ``/iceberg/`` serves (the OAuth2 endpoint too),
from the site alone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_reference_shows_every_operation_served(page: Any, site: str) -> None:
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(site + "/iceberg/reference/")
    page.locator(".opblock").first.wait_for()
    page.wait_for_load_state("networkidle")
    doc = page.request.get(site + "/iceberg/openapi.json").json()
    operations = [op for item in doc["paths"].values() for op in item.values()]
    assert page.locator(".opblock").count() == len(operations) >= 17
    shown = page.locator(".opblock-summary-description").all_inner_texts()
    assert "Commit requirements and updates to a table" in shown
    assert any(t.startswith("An access token for OAuth2 client credentials") for t in shown)
    assert page.locator(".opblock-summary-path[data-path='/v1/{prefix}/transactions/commit']"
                        ).count() == 1
    assert not errors, errors
    assert all(u.startswith((site, "data:", "blob:")) for u in requested)  # no CDN
    screenshot(page, "iceberg-reference")
