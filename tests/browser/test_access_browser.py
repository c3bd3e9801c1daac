"""Getting write access as a newcomer does it, in headless Chromium against `make run`'s
defaults (the demo warehouse, anonymous reading): the Actions tab says to sign in; the first
admin (made on the server with createsuperuser) signs in, opens Access, creates a user, makes
them maintainer of the catalog and creates their API token (shown once); the new user signs
in and has the Actions tab; the API takes the token."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest
from django.contrib.auth.models import User

from explorer.models import AuditEntry
from tests.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = "/catalogs/local/namespaces/web/tables/events/"
ROOT_PASSWORD = "the first admin's pass phrase"
BOB_PASSWORD = "bob's own long pass phrase"


def _sign_in(page: Any, site: str, name: str, password: str) -> None:
    page.goto(site + EVENTS)
    page.click("text=Log in")
    page.fill("#id_username", name)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("form.login button[type=submit]")


def test_a_newcomer_gets_write_access_from_the_site(page: Any, site: str) -> None:
    from playwright.sync_api import expect

    page.goto(site + EVENTS)
    locked = page.locator("#tab-actions-locked")
    assert locked.inner_text() == "Actions · sign in"
    assert locked.get_attribute("title") == (
        "Sign in to act on tables: changes need the maintainer role on catalog local.")
    page.goto(site + "/accounts/login/")
    expect(page.locator("#login-help")).to_contain_text("manage.py createsuperuser")

    User.objects.create_superuser("root", "root@example.com", ROOT_PASSWORD)  # on the server
    _sign_in(page, site, "root", ROOT_PASSWORD)
    assert page.url == site + EVENTS  # back where the sign-in started
    page.click("#nav-access")
    page.click("#manage-link")
    page.fill("#form-user input[name=username]", "bob")
    page.fill("#form-user input[name=password]", BOB_PASSWORD)
    with page.expect_navigation():
        page.click("#form-user button")
    expect(page.locator("[data-message]")).to_contain_text("User bob created")
    page.fill("#form-grant input[name=user]", "bob")
    page.select_option("#form-grant select[name=catalog]", "local")
    page.select_option("#form-grant select[name=role]", "maintainer")
    with page.expect_navigation():
        page.click("#form-grant button")
    expect(page.locator('tr[data-user="bob"] [data-grant="local:maintainer"]')).to_have_count(1)
    with page.expect_navigation():
        page.click('tr[data-user="bob"] form.token button')
    key = page.locator("#token-key").inner_text()
    assert re.fullmatch(r"[0-9a-f]{40}", key)
    screenshot(page, "access-token-once")
    page.goto(site + "/access/manage/")
    assert key not in page.content()  # shown once
    screenshot(page, "access-manage")

    request = urllib.request.Request(site + "/api/tasks/",
                                     headers={"Authorization": f"Token {key}",
                                              "Accept": "application/json"})
    with urllib.request.urlopen(request) as response:  # noqa: S310 - the live test server
        assert response.status == 200 and "results" in json.load(response)

    page.context.clear_cookies()
    _sign_in(page, site, "bob", BOB_PASSWORD)
    expect(page.locator("#tab-actions")).to_have_text("Actions")
    assert page.locator("#tab-actions-locked").count() == 0
    assert [e.action for e in AuditEntry.objects.order_by("id")] == [
        "user_create", "grant_add", "token_create"]
