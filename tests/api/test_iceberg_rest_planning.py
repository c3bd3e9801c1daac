"""Server-side scan planning over the live site's ``/iceberg/`` (pytest-django's
``live_server``), with raw HTTP as a client sends it: a viewer's token plans a filtered scan of
a partitioned table with position and equality deletes in a SQL catalog, follows the plan
tasks, and gets floe's own plan; unknown plan ids are 404, bad filters 400, no token 401; the
ScanReport handed to the server's ``on_plan`` hook carries the explorer plan page's
parameters, and that page's funnel for them is the served plan's counts."""

from __future__ import annotations

import http.client
import json
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from explorer.rest import services as services_rest
from floe.catalog.base import TableIdentifier
from floe.catalog.rest import RestCatalog
from floe.catalog.sql import SqlCatalog
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))
IDENT = TableIdentifier(("db",), "events")


class Site:
    def __init__(self, url: str, catalog: str, token: str, table: Any,
                 sql: tuple[str, str]) -> None:
        self.url, self.catalog, self.token, self.table = url, catalog, token, table
        self.sql = sql  # the SQL catalog's URI and warehouse

    def call(self, method: str, path: str, body: Any = None, token: str | None = ""
             ) -> tuple[int, Any]:
        parsed = urllib.parse.urlsplit(self.url)
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token or self.token}"
        try:
            conn.request(method, "/iceberg/v1/" + path, headers=headers,
                         body=None if body is None else json.dumps(body).encode())
            answer = conn.getresponse()
            data = answer.read()
            return answer.status, json.loads(data) if data else None
        finally:
            conn.close()

    def table_path(self, what: str) -> str:
        return f"{self.catalog}/namespaces/db/tables/events/{what}"


@pytest.fixture
def site(live_server: Any, tmp_path: Path, settings: Any) -> Site:
    """A SQL catalog (SQLite) with db.events: partitioned by cat, 6 appends, a merge-on-read
    delete (position deletes) and an equality delete; user vic with only the default viewer
    role and an API token."""
    name = f"sql_{uuid.uuid4().hex[:8]}"
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    path = tmp_path / "catalogs.toml"
    path.write_text(f'[catalogs.{name}]\ntype = "sql"\nuri = "{uri}"\n'
                    f'warehouse = "{tmp_path / "sql"}"\n')
    settings.FLOE_CATALOGS = str(path)
    with SqlCatalog(name, uri, str(tmp_path / "sql")) as cat:
        cat.create_namespace(("db",))
        t = cat.create_table(IDENT, SCHEMA, spec=parse_partition_by("identity(cat)", SCHEMA),
                             format_version=2)
        for k, c in enumerate(["a", "b", "c", "a", "b", "c"]):
            t.append(pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64()),
                               "cat": pa.array([c] * 10)}))
        t.delete_where("id < 5", mode="merge-on-read")
        t.delete_equal(["id"], pa.table({"id": pa.array([31, 32], pa.int64())}))
        t = t.refresh()
    user = User.objects.create_user("vic")
    token = str(Token.objects.create(user=user).key)
    return Site(str(live_server.url), name, token, t, (uri, str(tmp_path / "sql")))


def _pages(site: Site, body: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    status, first = site.call("POST", site.table_path("plan"), body)
    assert status == 200, first
    pages, todo = [first], list(first.get("plan-tasks", []))
    while todo:
        status, page = site.call("POST", site.table_path("tasks"), {"plan-task": todo.pop(0)})
        assert status == 200, page
        pages.append(page)
        todo.extend(page.get("plan-tasks", []))
    return first, pages


def _served(pages: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for p in pages:
        for t in p["file-scan-tasks"]:
            deletes = tuple(sorted(p["delete-files"][i]["file-path"]
                                   for i in t.get("delete-file-references", [])))
            out.append((t["data-file"]["file-path"], deletes))
    return sorted(out)


def test_a_viewer_plans_on_the_server_and_pages_through_plan_tasks(
        site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    status, config = site.call("GET", f"config?warehouse={site.catalog}")
    assert status == 200
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan" in config["endpoints"]
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks" in config["endpoints"]
    monkeypatch.setattr(services_rest.rest_server(), "plan_page_size", 2)
    flt = {"type": "in", "term": "cat", "values": ["a", "b"]}
    first, pages = _pages(site, {"filter": flt})
    assert first["status"] == "completed" and len(pages) == 2
    local = plan_files(site.table.io, site.table.metadata, row_filter="cat IN ('a', 'b')")
    assert _served(pages) == sorted(
        (t.file_path, tuple(sorted(d.path for d in t.delete_files))) for t in local.tasks)
    assert len(local.tasks) == 4 and any(d for _, d in _served(pages))
    status, again = site.call("GET", site.table_path(f"plan/{first['plan-id']}"))
    assert status == 200 and again["file-scan-tasks"] == first["file-scan-tasks"]
    assert site.call("DELETE", site.table_path(f"plan/{first['plan-id']}"))[0] == 204


def test_unknown_plans_bad_filters_and_no_token(site: Site) -> None:
    status, doc = site.call("GET", site.table_path("plan/nope"))
    assert status == 404 and doc["error"]["type"] == "NoSuchPlanIdException"
    status, doc = site.call("POST", site.table_path("tasks"), {"plan-task": "nope"})
    assert status == 404 and doc["error"]["type"] == "NoSuchPlanTaskException"
    status, doc = site.call("POST", site.table_path("plan"),
                            {"filter": {"type": "eq", "term": "nope", "value": 1}})
    assert status == 400 and doc["error"]["type"] == "BadRequestException"
    assert site.call("POST", site.table_path("plan"), {}, token=None)[0] == 401


def test_the_explorer_plan_page_shows_the_served_plan(
        site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[tuple[dict[str, Any], dict[str, str] | None]] = []
    monkeypatch.setattr(services_rest.rest_server(), "on_plan",
                        lambda call, report, params: got.append((report, params)))
    flt = {"type": "and", "left": {"type": "eq", "term": "cat", "value": "a"},
           "right": {"type": "gt-eq", "term": "id", "value": 3}}
    _, pages = _pages(site, {"filter": flt})
    assert len(got) == 1
    report, params = got[0]
    assert params is not None and params["snapshot"] == str(
        site.table.metadata.current_snapshot_id)
    browser = Client()
    browser.force_login(User.objects.get(username="vic"))
    page = browser.get(f"/catalogs/{site.catalog}/namespaces/db/tables/events/plan/", params)
    assert page.status_code == 200
    funnel = page.context["summary"]["funnel"]
    m = {k: v.get("value") for k, v in report["metrics"].items()}
    assert funnel["tasks"] == m["result-data-files"] == len(_served(pages)) == 2
    assert funnel["manifests_total"] == m["total-data-manifests"]
    assert funnel["manifests_after_summaries"] == m["scanned-data-manifests"]
    assert funnel["data_files_total"] - funnel["data_files_after_metrics"] == \
        m["skipped-data-files"]
    assert funnel["delete_files_matched"] == m["result-delete-files"]


def test_floes_rest_client_plans_on_the_server_and_reads_the_same_rows(
        site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services_rest.rest_server(), "plan_page_size", 1)
    remote = RestCatalog("served", {"uri": site.url + "/iceberg", "warehouse": site.catalog,
                                    "token": site.token})
    local = site.table
    for flt in (None, "cat = 'a'", "id >= 25 AND cat != 'c'"):
        served = remote.plan_on_server(IDENT, flt)
        here = plan_files(local.io, local.metadata, row_filter=flt)
        assert sorted((t.file_path, tuple(sorted(d.path for d in t.delete_files)))
                      for t in served.tasks) == sorted(
            (t.file_path, tuple(sorted(d.path for d in t.delete_files))) for t in here.tasks)
        got = plan_to_table(local.io, served).sort_by("id")
        assert got.equals(plan_to_table(local.io, here).sort_by("id"))
    rows = plan_to_table(local.io, remote.plan_on_server(IDENT, "cat = 'a'"))
    assert sorted(rows.column("id").to_pylist()) == [i for i in range(60) if i >= 5
                                                     and (i // 10) % 3 == 0 and i not in (31, 32)]
    old = sorted(local.metadata.snapshots, key=lambda s: s.sequence_number)[0].snapshot_id
    assert len(remote.plan_on_server(IDENT, snapshot_id=old).tasks) == 1


def test_pyiceberg_plans_on_the_server_when_asked_to(site: Site) -> None:
    """PyIceberg 0.12 plans on the server with ``scan-planning-mode = server`` (it refuses
    equality deletes: NotImplementedError; so a table with position deletes only here)."""
    rest = pytest.importorskip("pyiceberg.catalog.rest")
    with SqlCatalog(site.catalog, *site.sql) as cat:
        t = cat.create_table(TableIdentifier(("db",), "pos"), SCHEMA,
                             spec=parse_partition_by("identity(cat)", SCHEMA),
                             format_version=2)
        for k, c in enumerate(["a", "b", "a"]):
            t.append(pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64()),
                               "cat": pa.array([c] * 10)}))
        t.delete_where("id IN (0, 4, 8, 24, 28)", mode="merge-on-read")
        t = t.refresh()
    seen: list[dict[str, Any]] = []
    server = services_rest.rest_server()
    previous = server.on_plan
    server.on_plan = lambda call, report, params: seen.append(report)
    try:
        py = rest.RestCatalog("floe", uri=site.url + "/iceberg", warehouse=site.catalog,
                              token=site.token, **{"scan-planning-mode": "server"})
        assert py.supports_server_side_planning()
        table = py.load_table("db.pos")
        got = table.scan(row_filter="cat = 'a' and id >= 3").to_arrow()
        assert len(seen) == 1 and seen[0]["table-name"] == "db.pos"
        assert sorted(got.column("id").to_pylist()) == [
            i for i in list(range(0, 10)) + list(range(20, 30))
            if i >= 3 and i not in (4, 8, 24, 28)]
        with pytest.raises(NotImplementedError, match="equality deletes"):
            py.load_table("db.events").scan().to_arrow()
    finally:
        server.on_plan = previous


def test_a_served_plan_is_kept_on_the_tables_reports_with_its_explanation(site: Site) -> None:
    from explorer.models import EngineReport

    flt = {"type": "eq", "term": "cat", "value": "a"}
    _, pages = _pages(site, {"filter": flt})
    report = EngineReport.objects.get()  # the site's own hook kept it
    assert (report.source, report.actor_name, report.report_type) == (
        "floe-planned", "vic", "scan-report")
    assert report.result_data_files == len(_served(pages))
    browser = Client()
    browser.force_login(User.objects.get(username="vic"))
    base = f"/catalogs/{site.catalog}/namespaces/db/tables/events/"
    page = browser.get(base + "reports/")
    assert page.status_code == 200
    link = f'{base}plan/?{report.explain_query}'.replace("&", "&amp;")
    assert link in page.content.decode()
    plan = browser.get(f"{base}plan/?{report.explain_query}")
    assert plan.status_code == 200
    assert plan.context["summary"]["funnel"]["tasks"] == report.result_data_files
