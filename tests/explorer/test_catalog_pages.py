"""A catalog's page (its namespaces as a tree, its tables) and a namespace's page (the
namespaces below it, its own tables), reached from every breadcrumb; an unknown catalog or
namespace is a 404 page naming it; the viewer role is needed as for a table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.explorer.tasks_support import make_table, user_with

pytestmark = pytest.mark.django_db


def _namespace_row(html: str, name: str) -> dict[str, str]:
    m = re.search(rf'<tr data-namespace="{re.escape(name)}">(.*?)</tr>', html, re.S)
    assert m, f"no namespace row for {name}"
    return dict(re.findall(r'data-col="([a-z-]+)">([^<]*)<', m.group(1)))


def _tables(html: str) -> list[str]:
    return re.findall(r'<tr data-catalog="[^"]+" data-table="([^"]+)"', html) + re.findall(
        r'<tr class="broken" data-catalog="[^"]+" data-table="([^"]+)"', html)


def test_the_catalog_page_lists_its_namespaces_nested_and_its_tables(
        client: Client, warehouse: Path) -> None:
    response = client.get("/catalogs/local/")
    assert response.status_code == 200
    html = response.content.decode()
    assert re.findall(r'<tr data-namespace="([^"]+)"', html) == [
        "lake", "lake.raw", "sales", "staging"]
    assert _namespace_row(html, "lake") == {"tables": "0", "tables-below": "1", "children": "1"}
    assert _namespace_row(html, "lake.raw") == {"tables": "1", "tables-below": "1",
                                                "children": "0"}
    assert _namespace_row(html, "sales") == {"tables": "2", "tables-below": "2", "children": "0"}
    assert 'href="/catalogs/local/namespaces/lake.raw/"' in html
    assert sorted(_tables(html)) == ["lake.raw.events", "sales.orders", "sales.refunds",
                                     "staging.broken", "staging.empty_table"]
    assert "5 tables" in html and "4 namespaces" in html


def test_the_namespace_page_lists_its_tables_and_the_namespaces_below(
        client: Client, warehouse: Path) -> None:
    sales = client.get("/catalogs/local/namespaces/sales/")
    assert sales.status_code == 200
    assert sorted(_tables(sales.content.decode())) == ["sales.orders", "sales.refunds"]
    lake = client.get("/catalogs/local/namespaces/lake/").content.decode()
    assert _tables(lake) == []  # its only table is one level down
    assert _namespace_row(lake, "lake.raw") == {"tables": "1", "tables-below": "1",
                                                "children": "0"}
    raw = client.get("/catalogs/local/namespaces/lake.raw/").content.decode()
    assert _tables(raw) == ["lake.raw.events"]
    # its breadcrumb links the catalog and each level of the namespace
    crumbs = re.search(r'<p class="crumbs muted">(.*?)</p>', raw, re.S).group(1)  # type: ignore[union-attr]
    assert re.findall(r'href="([^"]+)"', crumbs) == [
        "/", "/catalogs/local/", "/catalogs/local/namespaces/lake/",
        "/catalogs/local/namespaces/lake.raw/"]


def test_every_table_breadcrumb_links_its_catalog_and_namespace(
        client: Client, warehouse: Path) -> None:
    for page in ("", "snapshots/", "history/", "audit/"):
        html = client.get(f"/catalogs/local/namespaces/lake.raw/tables/events/{page}"
                          ).content.decode()
        crumbs = re.search(r'<p class="crumbs muted">(.*?)</p>', html, re.S).group(1)  # type: ignore[union-attr]
        assert re.findall(r'href="([^"]+)"', crumbs) == [
            "/", "/catalogs/local/", "/catalogs/local/namespaces/lake/",
            "/catalogs/local/namespaces/lake.raw/"], page
    # the home page links them too
    home = client.get("/").content.decode()
    assert 'href="/catalogs/local/"' in home
    assert 'href="/catalogs/local/namespaces/sales/"' in home


@pytest.mark.parametrize(("url", "names"), [
    ("/catalogs/nope/", "catalog 'nope' does not exist"),
    ("/catalogs/local/namespaces/nope/", "namespace 'nope' does not exist in catalog 'local'"),
    ("/catalogs/nope/namespaces/web/", "catalog 'nope' does not exist"),
    ("/catalogs/local/namespaces/sales.nope/",
     "namespace 'sales.nope' does not exist in catalog 'local'"),
])
def test_an_unknown_catalog_or_namespace_is_a_404_page_naming_it(
        client: Client, warehouse: Path, url: str, names: str) -> None:
    response = client.get(url)
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html and names in html.replace("&#x27;", "'")


def test_cut_back_urls_lead_to_the_pages(client: Client, warehouse: Path) -> None:
    assert client.get("/catalogs/local/namespaces/sales/tables/").url == (
        "/catalogs/local/namespaces/sales/")
    assert client.get("/catalogs/local/namespaces/").url == "/catalogs/local/"
    assert client.get("/catalogs/").url == "/"


def test_the_pages_need_the_viewer_role_on_the_catalog(tmp_path: Path, settings: Any) -> None:
    make_table(tmp_path / "local", "ns")
    make_table(tmp_path / "other", "ns")
    (tmp_path / "catalogs.toml").write_text(
        f'[catalogs.other]\ntype = "filesystem"\nwarehouse = "{tmp_path / "other"}"\n')
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    settings.FLOE_CATALOGS = str(tmp_path / "catalogs.toml")
    settings.FLOE_DEFAULT_ROLE = "none"
    settings.FLOE_ALLOW_ANONYMOUS = False
    assert Client().get("/catalogs/local/").status_code == 302  # to the login page
    client = Client()
    client.force_login(user_with("vic", "viewer", catalog="other"))
    assert client.get("/catalogs/other/").status_code == 200
    assert client.get("/catalogs/other/namespaces/ns/").status_code == 200
    for url in ("/catalogs/local/", "/catalogs/local/namespaces/ns/"):
        refused = client.get(url)
        assert refused.status_code == 403 and "viewer role" in refused.content.decode(), url


def test_a_url_no_page_has_is_the_sites_404_page(client: Client, warehouse: Path) -> None:
    response = client.get("/catalogs/local/namespaces/sales/nothing-here/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "<h1>Not found</h1>" in page and "there is no page at /catalogs/local/namespaces/"\
        "sales/nothing-here/" in page and 'href="/"' in page
