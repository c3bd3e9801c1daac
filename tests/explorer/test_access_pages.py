"""Getting write access from the site: the Actions tab says why it is not yours and how to get
it, /access/ tells anyone their roles and whom to ask, and admins create and deactivate
users, grant and revoke roles per catalog and create or revoke API tokens on /access/manage/
(the key shown once), every change audited; CSRF needed; others get 403 and change nothing."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from explorer.audit.selectors import entry_words
from explorer.models import AuditEntry, CatalogGrant
from tests.explorer.tasks_support import REPO, make_table, user_with

pytestmark = pytest.mark.django_db

T = "/catalogs/local/namespaces/ns/tables/events/"
PASSWORD = "a long enough pass phrase"


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    make_table(tmp_path, "ns", appends=1)
    settings.FLOE_WAREHOUSE = str(tmp_path)
    settings.FLOE_ALLOW_ANONYMOUS = True
    settings.FLOE_DEFAULT_ROLE = "viewer"
    return tmp_path


def signed_in(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def _locked_tab(page: str) -> tuple[str, str]:
    m = re.search(r'<a href="([^"]*)" id="tab-actions-locked"[^>]* title="([^"]*)"', page)
    assert m, "no locked Actions tab"
    return html.unescape(m.group(1)), html.unescape(m.group(2))


def test_the_actions_tab_says_why_it_is_hidden_and_how_to_get_it(lake: Path) -> None:
    href, why = _locked_tab(Client().get(T).content.decode())
    assert why == ("Sign in to act on tables: changes need the maintainer role on catalog "
                   "local.")
    assert href == f"/accounts/login/?next={T}"
    vic = user_with("vic")  # the default role: viewer
    href, why = _locked_tab(signed_in(vic).get(T + "history/").content.decode())
    assert why.startswith("You are signed in as vic with the viewer role on catalog local; "
                          "no one administers catalog local yet: the first admin is made on "
                          "the server: .venv/bin/python manage.py createsuperuser")
    assert href == "/access/#catalog-local"
    user_with("ada", "admin")
    user_with("root", superuser=True)
    _, why = _locked_tab(signed_in(vic).get(T).content.decode())
    assert why == ("You are signed in as vic with the viewer role on catalog local; ask an "
                   "admin (ada, root) for maintainer.")
    page = signed_in(user_with("mia", "maintainer")).get(T).content.decode()
    assert 'id="tab-actions"' in page and "tab-actions-locked" not in page
    # the Actions page itself, opened by a viewer, says the same beside its 403
    refused = signed_in(vic).get(T + "actions/")
    assert refused.status_code == 403
    assert "ask an admin (ada, root) for maintainer" in html.unescape(refused.content.decode())


def test_the_access_page_tells_anyone_their_role_and_whom_to_ask(lake: Path) -> None:
    user_with("ada", "admin")
    page = signed_in(user_with("vic")).get("/access/").content.decode()
    assert re.search(r'data-catalog="local" data-role="viewer"', page)
    assert "You are signed in as <strong>vic</strong>" in page
    assert "ask an admin (ada) for the maintainer role" in html.unescape(page)
    assert 'id="manage-link"' not in page
    anonymous = Client().get("/access/").content.decode()
    assert "You are not signed in" in anonymous and "/accounts/login/" in anonymous
    admin_page = signed_in(user_with("ada2", "admin")).get("/access/").content.decode()
    assert 'id="manage-link"' in admin_page
    assert 'id="nav-access"' in Client().get("/").content.decode()  # linked from every page


def _manage_posts(user_id: int, grant_id: int) -> list[tuple[str, dict[str, str]]]:
    return [
        ("/access/manage/users/", {"username": "eve", "password": PASSWORD}),
        (f"/access/manage/users/{user_id}/active/", {"active": "0"}),
        (f"/access/manage/users/{user_id}/token/", {}),
        (f"/access/manage/users/{user_id}/token/revoke/", {}),
        ("/access/manage/grants/", {"user": "vic", "catalog": "local", "role": "admin"}),
        (f"/access/manage/grants/{grant_id}/revoke/", {}),
    ]


@pytest.mark.parametrize("role", [None, "viewer", "maintainer"])
def test_non_admins_get_403_and_change_nothing(lake: Path, role: str | None) -> None:
    vic = user_with("vic", role)
    bob = user_with("bob", "maintainer")
    Token.objects.create(user=bob)
    grant = CatalogGrant.objects.get(user=bob)
    client = signed_in(vic)
    assert client.get("/access/manage/").status_code == 403
    for url, data in _manage_posts(bob.pk, grant.pk):
        assert client.post(url, data).status_code == 403, url
        assert Client().post(url, data).status_code == 403, url  # anonymous
    assert Client().get("/access/manage/")["Location"].startswith("/accounts/login/")
    bob.refresh_from_db()
    assert bob.is_active and Token.objects.filter(user=bob).count() == 1
    assert not AuditEntry.objects.exists()
    assert sorted(CatalogGrant.objects.values_list("user__username", "catalog", "role")) == [
        ("bob", "local", "maintainer")] + ([("vic", "local", role)] if role else [])


def test_an_admin_manages_users_roles_and_tokens_every_change_audited(lake: Path) -> None:
    ada = user_with("ada", "admin", catalog="*")
    client = signed_in(ada)
    assert client.get("/access/manage/").status_code == 200
    assert client.post("/access/manage/users/", {"username": "bob", "password": PASSWORD}
                       )["Location"] == "/access/manage/"
    bob = User.objects.get(username="bob")
    assert bob.is_active and bob.check_password(PASSWORD) and not bob.is_staff
    grant = client.post("/access/manage/grants/", {"user": "bob", "catalog": "local",
                                                   "role": "maintainer"})
    assert grant.status_code == 302
    assert client.get("/access/manage/").content.decode().count('data-grant="local:maintainer"'
                                                                ) == 1
    # bob can act now: the Actions tab is his
    assert 'id="tab-actions"' in signed_in(bob).get(T).content.decode()

    made = client.post(f"/access/manage/users/{bob.pk}/token/")
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    key = re.search(r'<code id="token-key">([0-9a-f]{40})</code>',  # type: ignore[union-attr]
                    made.content.decode()).group(1)
    assert Token.objects.get(user=bob).key == key
    assert key not in client.get("/access/manage/").content.decode()  # shown once
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/tasks/").status_code == 200
    client.post(f"/access/manage/users/{bob.pk}/token/revoke/")
    assert api.get("/api/tasks/").status_code == 401

    assert client.post(f"/access/manage/users/{bob.pk}/active/", {"active": "0"}
                       ).status_code == 302
    bob.refresh_from_db()
    assert not bob.is_active and not Client().login(username="bob", password=PASSWORD)
    client.post(f"/access/manage/grants/{CatalogGrant.objects.get(user=bob).pk}/revoke/")
    assert not CatalogGrant.objects.filter(user=bob).exists()

    trail = list(AuditEntry.objects.order_by("id"))
    assert [(e.action, e.actor_name, e.actor_via, e.catalog) for e in trail] == [
        ("user_create", "ada", "session", "*"), ("grant_add", "ada", "session", "local"),
        ("token_create", "ada", "session", "*"), ("token_revoke", "ada", "session", "*"),
        ("user_deactivate", "ada", "session", "*"), ("grant_remove", "ada", "session", "local")]
    assert [entry_words(e) for e in trail] == [
        "created user bob", "gave bob the maintainer role on catalog local",
        "created an API token for bob", "revoked the API token of bob",
        "deactivated user bob", "took the maintainer role on catalog local from bob"]
    assert not any(key in str(e.params) or PASSWORD in str(e.params) for e in trail)


@pytest.mark.parametrize(("url", "data", "param", "message"), [
    ("/access/manage/users/", {"username": "vic", "password": PASSWORD}, "user",
     "user 'vic' already exists"),
    ("/access/manage/users/", {"username": "new user!", "password": PASSWORD}, "user",
     "user name 'new user!'"),
    ("/access/manage/users/", {"username": "eve", "password": "123"}, "password",
     "too short"),
    ("/access/manage/grants/", {"user": "nobody", "catalog": "local", "role": "viewer"},
     "user", "user 'nobody' does not exist"),
    ("/access/manage/grants/", {"user": "vic", "catalog": "local", "role": "owner"},
     "role", "role 'owner' is not one of viewer, maintainer, admin"),
    ("/access/manage/grants/", {"user": "vic", "catalog": "nope", "role": "viewer"},
     "catalog", "catalog 'nope' does not exist"),
])
def test_bad_input_is_a_400_next_to_its_field_and_changes_nothing(
        lake: Path, url: str, data: dict[str, str], param: str, message: str) -> None:
    client = signed_in(user_with("root", superuser=True))
    user_with("vic")
    response = client.post(url, data)
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    m = re.search(r'<p class="notice error" data-param="([a-z]+)">([^<]*)</p>', page)
    assert m and m.group(1) == param and message in m.group(2), page[-2000:]
    assert PASSWORD not in page  # a password is never sent back
    assert not AuditEntry.objects.exists() and not CatalogGrant.objects.exists()
    assert sorted(User.objects.values_list("username", flat=True)) == ["root", "vic"]


def test_an_admin_of_one_catalog_grants_there_only(lake: Path) -> None:
    ada = user_with("ada", "admin")  # on local only
    user_with("vic")
    client = signed_in(ada)
    page = client.get("/access/manage/").content.decode()
    assert 'id="form-user"' not in page and "/token/" not in page  # users: admins of *
    assert re.findall(r'<option value="([^"]+)"', page.split('name="catalog"')[1].split(
        "</select>")[0]) == ["local"]
    assert client.post("/access/manage/grants/", {"user": "vic", "catalog": "local",
                                                  "role": "maintainer"}).status_code == 302
    assert client.post("/access/manage/grants/", {"user": "vic", "catalog": "*",
                                                  "role": "admin"}).status_code == 403
    assert client.post("/access/manage/users/", {"username": "eve", "password": PASSWORD}
                       ).status_code == 403
    assert list(CatalogGrant.objects.filter(user__username="vic").values_list(
        "catalog", "role")) == [("local", "maintainer")]


def test_every_change_needs_the_csrf_token(lake: Path) -> None:
    client = signed_in(user_with("root", superuser=True), enforce_csrf_checks=True)
    refused = client.post("/access/manage/users/", {"username": "eve", "password": PASSWORD})
    assert refused.status_code == 403 and "CSRF" in refused.content.decode()
    page = client.get("/access/manage/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    done = client.post("/access/manage/users/", {"username": "eve", "password": PASSWORD,
                                                 "csrfmiddlewaretoken": token})
    assert done.status_code == 302


def test_the_page_and_the_command_grant_through_one_service(lake: Path) -> None:
    """floe_grant (the first admin) and the page write the same grant and the same entry."""
    user_with("bob")
    call_command("floe_grant", "bob", "local", "admin")
    user_with("x")
    client = signed_in(User.objects.get(username="bob"))
    assert client.post("/access/manage/grants/", {"user": "x", "catalog": "local",
                                                  "role": "viewer"}).status_code == 302
    a, b = AuditEntry.objects.order_by("id")
    assert (a.action, a.params, a.actor_via) == ("grant_add", {"user": "bob", "role": "admin"},
                                                 "command")
    assert (b.action, b.params, b.actor_via) == ("grant_add", {"user": "x", "role": "viewer"},
                                                 "session")


def test_the_readme_says_how_a_newcomer_gets_write_access() -> None:
    """The README's steps name pages and commands that exist."""
    from django.core.management import get_commands
    from django.urls import resolve

    text = (REPO / "README.md").read_text()
    section = text.split("## Getting write access", 1)[1].split("\n## ", 1)[0]
    for command in ("createsuperuser", "floe_grant"):
        assert f"manage.py {command}" in section and command in get_commands()
    for url in re.findall(r"`(/[a-z/]*)`", section):
        resolve(url)  # raises Resolver404 for a page that does not exist
    assert {"/accounts/login/", "/access/", "/access/manage/"} <= set(
        re.findall(r"`(/[a-z/]*)`", section))
