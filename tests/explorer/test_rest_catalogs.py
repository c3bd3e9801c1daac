"""The explorer on a REST catalog whose tables are in a bucket: SeaweedFS's Iceberg REST catalog
(tests/object_store.py), configured in the catalog file as a user would (``type = "rest"``,
OAuth2 client credentials, the S3 endpoint from loadTable's config).

- catalog → nested namespaces → tables: the catalog page, the page of a namespace that only
  holds namespaces (SeaweedFS keeps ``a.b`` with no entry for ``a``), breadcrumbs, the table
  list and its filter, the API's listings;
- every page of a table and the API's equivalents;
- tasks change the table through the REST catalog (its commits), the audit names the user,
  and PyIceberg reads the result;
- confinement: the catalog's warehouse (a bucket), or, for a warehouse that is a name (as
  Polaris and Lakekeeper have), each table's own places;
- a broken catalog (a wrong credential, the server down, failing, or not answering) is a 503
  on that catalog's pages only, in bounded time.
"""

from __future__ import annotations

import dataclasses
import html
import http.server
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client
from rest_framework.test import APIClient

from explorer.models import AuditEntry, TaskRun
from floe.catalog.rest import RestCatalog
from floe.errors import CatalogUnavailable
from floe.io import FileIO
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.table import Table
from floe.table.updates import AddSnapshot, AssertRefSnapshotId, SetSnapshotRef
from floe.types import LONG, STRING, NestedField
from tests.explorer.tasks_support import client_for, user_with
from tests.faulty_proxy import FaultyProxy
from tests.object_store import SeaweedFS, pyiceberg_rest_catalog, unique_name

pytestmark = [pytest.mark.objectstore, pytest.mark.django_db]

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": [f"c{i % 2}" for i in range(start, start + n)]})


def rest_options(server: SeaweedFS, **extra: str) -> dict[str, str]:
    """A REST catalog entry for SeaweedFS as a user writes it: OAuth2 client credentials, the
    S3 keys, and the endpoint, region and path style from loadTable's config (asked without
    the vended-credentials header, which SeaweedFS answers with an empty config)."""
    return {"uri": server.catalog_uri, "warehouse": server.warehouse,
            "credential": f"{server.access_key}:{server.secret_key}",
            "oauth2-server-uri": server.token_url,
            "header.X-Iceberg-Access-Delegation": "",
            "s3.access-key-id": server.access_key,
            "s3.secret-access-key": server.secret_key, **extra}


def catalog_toml(catalogs: dict[str, dict[str, str]]) -> str:
    return "".join(f"[catalogs.{name}]\ntype = \"rest\"\n"
                   + "".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in opts.items())
                   for name, opts in catalogs.items())


def configure(tmp_path: Path, settings: Any, catalogs: dict[str, dict[str, str]]) -> None:
    """The explorer's catalogs: ``local`` (an empty directory) and ``catalogs``."""
    config = tmp_path / f"catalogs-{uuid.uuid4().hex[:6]}.toml"
    config.write_text(catalog_toml(catalogs))
    (tmp_path / "warehouse").mkdir(exist_ok=True)
    settings.FLOE_CATALOGS = str(config)
    settings.FLOE_WAREHOUSE = str(tmp_path / "warehouse")
    settings.FLOE_ALLOW_ANONYMOUS = True


@dataclass
class Lake:
    """``lake``: a REST catalog with ``<outer>.inner.events`` (partitioned, three appends)."""

    server: SeaweedFS
    catalog: RestCatalog
    outer: str

    @property
    def ns(self) -> str:
        return f"{self.outer}.inner"

    @property
    def ident(self) -> str:
        return f"{self.ns}.events"

    @property
    def base(self) -> str:
        return f"/catalogs/lake/namespaces/{self.ns}/tables/events/"

    @property
    def api(self) -> str:
        return f"/api/catalogs/lake/namespaces/{self.ns}/tables/events/"

    def table(self) -> Table:
        return self.catalog.load_table(self.ident)


def make_table(catalog: RestCatalog, ident: str, appends: int = 3) -> Table:
    table = catalog.create_table(ident, SCHEMA, parse_partition_by("cat", SCHEMA))
    for k in range(appends):
        table.append(_rows(10 * k, 10))
    return table


@pytest.fixture
def lake(seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> Iterator[Lake]:
    outer = unique_name("outer")
    catalog = RestCatalog("lake", rest_options(seaweedfs))
    catalog.create_namespace((outer, "inner"))  # no entry for outer itself
    make_table(catalog, f"{outer}.inner.events")
    configure(tmp_path, settings, {"lake": rest_options(seaweedfs)})
    yield Lake(seaweedfs, catalog, outer)
    catalog.close()


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    text = html.unescape(response.content.decode())
    assert response.status_code == status, (url, response.status_code, text[:600])
    return text


def floe_ids(table: Table) -> list[int]:
    table.refresh()
    data = plan_to_table(table.io, plan_files(table.io, table.metadata), ["id"])
    return sorted(data.column("id").to_pylist())


def pyiceberg_ids(server: SeaweedFS, ident: str) -> list[int]:
    data = pyiceberg_rest_catalog(server).load_table(ident).scan().to_arrow()
    return sorted(data.column("id").to_pylist())


# -- catalog → nested namespaces → tables --------------------------------------------------------


def test_catalog_nested_namespaces_and_tables(lake: Lake) -> None:
    client = Client()
    catalog = page(client, "/catalogs/lake/")
    assert "rest · warehouse" in catalog and lake.server.warehouse in catalog
    # the tree: outer (no tables of its own, one below) and outer.inner under it
    assert f'href="/catalogs/lake/namespaces/{lake.outer}/"' in catalog
    assert f'href="/catalogs/lake/namespaces/{lake.ns}/"' in catalog
    assert f'href="{lake.base}"' in catalog
    # outer is only a level of outer.inner in SeaweedFS, and still a page (it was a 404)
    outer = page(client, f"/catalogs/lake/namespaces/{lake.outer}/")
    assert f'href="/catalogs/lake/namespaces/{lake.ns}/"' in outer
    inner = page(client, f"/catalogs/lake/namespaces/{lake.ns}/")
    assert f'href="{lake.base}"' in inner
    # the breadcrumbs of a table page lead to both levels, and each answers
    overview = page(client, lake.base)
    crumbs = re.findall(r'href="([^"]+)" data-crumb="namespace"', overview)
    assert crumbs == [f"/catalogs/lake/namespaces/{lake.outer}/",
                      f"/catalogs/lake/namespaces/{lake.ns}/"]
    for url in crumbs:
        page(client, url)
    page(client, f"/catalogs/lake/namespaces/{lake.outer}.nothing/", 404)
    # the table list: every catalog's tables, and its filter
    assert f'href="{lake.base}"' in page(client, "/?q=" + lake.outer)
    assert f'href="{lake.base}"' not in page(client, "/?q=" + lake.outer + "-none")
    # the API: namespaces listed whole, the tables below a namespace, the filter
    api = APIClient()
    names = [r["name"] for r in api.get("/api/catalogs/lake/namespaces/").json()["results"]]
    assert lake.outer in names and lake.ns in names
    below = api.get(f"/api/catalogs/lake/namespaces/{lake.outer}/tables/").json()["results"]
    assert [(r["namespace"], r["name"], r["error"]) for r in below] == \
        [(lake.ns, "events", None)]
    assert api.get(f"/api/catalogs/lake/namespaces/{lake.outer}/tables/?q=nothing"
                   ).json()["results"] == []


PAGES = ["", "snapshots/", "history/", "metadata/", "partitions/", "plan/",
         "plan/?filter=id%20%3C%205", "preview/", "preview/?format=csv", "diff/", "audit/",
         "tasks/"]
ENDPOINTS = ["", "snapshots/", "refs/", "history/", "plan/", "plan/?filter=id%20%3C%205",
             "partitions/", "preview/?limit=5", "audit/"]


def test_every_page_and_endpoint_of_a_rest_table(lake: Lake) -> None:
    client, api = Client(), APIClient()
    table = lake.table()
    first, *_, current = table.snapshots()
    sid = current.snapshot_id
    urls = [lake.base + p for p in PAGES] + [
        lake.base + f"snapshots/{sid}/", lake.base + f"snapshots/{sid}/manifests/0/",
        lake.base + f"snapshots/{sid}/manifests/0/files/0/",
        lake.base + f"diff/?from={first.snapshot_id}&to={sid}"]
    for url in urls:
        page(client, url)
    for url in [lake.api + e for e in ENDPOINTS] + [
            lake.api + f"snapshots/{sid}/", lake.api + f"snapshots/{sid}/manifests/",
            lake.api + f"snapshots/{sid}/files/",
            lake.api + f"diff/?from={first.snapshot_id}&to={sid}"]:
        response = api.get(url)
        assert response.status_code == 200, (url, response.content[:300])
    detail = api.get(lake.api).json()
    assert detail["metadata_location"] == table.metadata_location
    assert detail["location"].startswith(lake.server.warehouse + "/")
    preview = api.get(lake.api + "preview/?limit=100").json()
    at = preview["columns"].index("id")
    assert sorted(r[at] for r in preview["rows"]) == list(range(30))
    plan = api.get(lake.api + "plan/?filter=id%20%3C%205").json()
    assert plan["funnel"]["tasks"] < plan["funnel"]["data_files_in_snapshot"] == 6
    files = api.get(lake.api + f"snapshots/{sid}/files/").json()["results"]
    assert len(files) == 6 and all(f["file_path"].startswith(table.location + "/")
                                   for f in files)


# -- tasks: REST commits, attributed to the user ------------------------------------------------


def submit(client: APIClient, eager: Any, kind: str, lake: Lake, **params: Any) -> TaskRun:
    response = eager(lambda: client.post("/api/tasks/", {"kind": kind, "params": {
        "catalog": "lake", "namespace": lake.ns, "table": "events", **params}},
        format="json"))
    assert response.status_code == 201, response.content
    run = TaskRun.objects.get(pk=response.json()["id"])
    assert run.state == "SUCCEEDED", (kind, run.error)
    return run


def audited(run: TaskRun, lake: Lake, action: str) -> AuditEntry:
    (entry,) = AuditEntry.objects.filter(task_run_id=run.pk)
    assert (entry.actor_name, entry.action, entry.outcome) == ("mia", action, "succeeded")
    assert (entry.catalog, entry.namespace, entry.table) == ("lake", lake.ns, "events")
    # the REST catalog's current metadata is the one the audit says the task committed
    assert entry.metadata_after == lake.table().metadata_location != entry.metadata_before
    return entry


def test_tasks_change_a_rest_table_and_the_audit_names_the_user(lake: Lake, eager: Any) -> None:
    mia = client_for(user_with("mia", "maintainer", catalog="lake"))
    first, second, third = lake.table().snapshots()

    run = submit(mia, eager, "rollback", lake, snapshot_id=second.snapshot_id)
    entry = audited(run, lake, "rollback")
    assert (entry.snapshot_before, entry.snapshot_after) == (third.snapshot_id,
                                                             second.snapshot_id)
    assert pyiceberg_ids(lake.server, lake.ident) == list(range(20))

    submit(mia, eager, "set_current", lake, snapshot_id=third.snapshot_id)
    run = submit(mia, eager, "delete_rows", lake, filter="id < 5")
    audited(run, lake, "delete_rows")
    assert floe_ids(lake.table()) == pyiceberg_ids(lake.server, lake.ident) == \
        list(range(5, 30))

    run = submit(mia, eager, "evolve", lake, changes=[
        {"op": "add-column", "path": "note", "type": "string"},
        {"op": "add-partition-field", "term": "bucket(2, id)"}])
    audited(run, lake, "evolve")
    table = lake.table()
    assert [f.name for f in table.schema().fields] == ["id", "cat", "note"]
    assert [f.name for f in table.spec().fields] == ["cat", "id_bucket_2"]

    before = {t.data_file.file_path for t in plan_files(table.io, table.metadata).tasks}
    run = submit(mia, eager, "compact", lake, options={"min-input-files": 2})
    audited(run, lake, "compact")
    table = lake.table()
    after = {t.data_file.file_path for t in plan_files(table.io, table.metadata).tasks}
    assert run.result["rewritten_data_files_count"] > 0 and len(after) < len(before)
    assert floe_ids(table) == pyiceberg_ids(lake.server, lake.ident) == list(range(5, 30))

    run = submit(mia, eager, "branch_create", lake, name="audit", snapshot_id=first.snapshot_id)
    audited(run, lake, "branch_create")
    run = submit(mia, eager, "tag_create", lake, name="v1",
                 snapshot_id=lake.table().metadata.current_snapshot_id)
    audited(run, lake, "tag_create")
    assert set(lake.table().metadata.refs) == {"main", "audit", "v1"}
    submit(mia, eager, "branch_remove", lake, name="audit")

    # expire: the dry run lists the files, the confirm deletes exactly those from the bucket
    io = FileIO(lake.server.s3_properties())
    dry = submit(mia, eager, "expire_snapshots_dry_run", lake,
                 older_than_ms=int(time.time() * 1000), retain_last=1)
    listed = dry.result["files"]["items"]
    assert listed and all(io.exists(p) for p in listed)
    run = submit(mia, eager, "expire_snapshots", lake, dry_run_task_id=dry.pk)
    entry = audited(run, lake, "expire_snapshots")
    assert run.result["deleted_files"] == len(listed)
    assert not any(io.exists(p) for p in listed)
    kept = lake.table()
    assert [s.snapshot_id for s in kept.snapshots()] == [kept.metadata.current_snapshot_id]
    assert floe_ids(kept) == pyiceberg_ids(lake.server, lake.ident) == list(range(5, 30))

    # orphans: a stray object under the table's data, listed by the dry run, then removed
    stray = f"{kept.location}/data/stray-{uuid.uuid4().hex[:6]}.parquet"
    io.write(stray, b"not referenced")
    time.sleep(1.1)  # the store's times are in whole seconds: older than the cutoff
    dry = submit(mia, eager, "remove_orphan_files_dry_run", lake,
                 older_than_ms=int(time.time() * 1000), force=True)
    assert dry.result["orphan_files"]["items"] == [stray]
    submit(mia, eager, "remove_orphan_files", lake, dry_run_task_id=dry.pk)
    assert not io.exists(stray)
    assert floe_ids(lake.table()) == list(range(5, 30))

    # the table's audit page and the API's say who did what
    text = page(Client(), lake.base + "audit/")
    for action in ("rollback", "delete_rows", "evolve", "compact", "expire_snapshots"):
        assert action.replace("_", " ") in text.lower() or action in text
    rows = APIClient().get(lake.api + "audit/").json()["results"]
    ours = [r for r in rows if r["source"] == "floe"]
    assert len(ours) == AuditEntry.objects.filter(catalog="lake").count() == 10
    assert {r["actor"] for r in ours} == {"mia"}
    # each metadata file a task committed through the REST catalog is attributed to mia
    by_file = {r["metadata_file"]: r["actor"] for r in ours}
    for entry in AuditEntry.objects.filter(catalog="lake").exclude(metadata_after=""):
        assert by_file[entry.metadata_after] == "mia"


# -- confinement -------------------------------------------------------------------------------


def forge(catalog: RestCatalog, table: Table, manifest_list: str) -> int:
    """Commit to ``table`` through the REST catalog a snapshot whose manifest list is
    ``manifest_list`` (what a buggy or hostile writer could commit); its id."""
    current = table.current_snapshot()
    assert current is not None
    snapshot = dataclasses.replace(
        current, snapshot_id=current.snapshot_id + 1, parent_snapshot_id=current.snapshot_id,
        sequence_number=table.metadata.last_sequence_number + 1,
        timestamp_ms=int(time.time() * 1000), manifest_list=manifest_list)
    catalog.commit_updates(table.identifier, table.metadata_location, table.metadata,
                           [AssertRefSnapshotId("main", current.snapshot_id)],
                           [AddSnapshot(snapshot), SetSnapshotRef("main", snapshot.snapshot_id)])
    return snapshot.snapshot_id


def test_a_file_outside_the_rest_warehouse_is_refused(lake: Lake) -> None:
    """A REST table whose metadata names a manifest list in another bucket than the catalog's
    warehouse (s3://<table bucket>): refused, naming the file and the warehouse."""
    table = lake.table()
    own = table.current_snapshot().manifest_list  # type: ignore[union-attr]
    outside = f"s3://{lake.server.bucket}/elsewhere-{uuid.uuid4().hex[:6]}/snap.avro"
    table.io.write(outside, table.io.read(own))  # the same content, outside
    sid = forge(lake.catalog, table, outside)
    text = page(Client(), lake.base + f"snapshots/{sid}/", 422)
    assert "outside the warehouse" in text and outside in text
    assert lake.server.warehouse in text
    response = APIClient().get(lake.api + f"snapshots/{sid}/manifests/")
    assert response.status_code == 422
    assert response.json()["error"] == "OutsideWarehouse"
    assert response.json()["location"] == outside
    assert APIClient().get(lake.api + "preview/").status_code == 422


def test_a_warehouse_that_is_a_name_confines_each_table_to_its_places(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> None:
    """``warehouse = "<table bucket>"`` (a name, as Polaris and Lakekeeper have; SeaweedFS
    takes it too): the explorer reads each table inside its own location only. A table whose
    metadata names another table's manifest list (in the same bucket) is refused."""
    options = rest_options(seaweedfs, warehouse=seaweedfs.table_bucket)
    ns = unique_name("named")
    catalog = RestCatalog("named", options)
    catalog.create_namespace((ns,))
    one, two = make_table(catalog, f"{ns}.one"), make_table(catalog, f"{ns}.two", 1)
    configure(tmp_path, settings, {"named": options})
    client, base = Client(), f"/catalogs/named/namespaces/{ns}/tables/one/"
    sid = one.metadata.current_snapshot_id
    for url in ["", "snapshots/", f"snapshots/{sid}/", f"snapshots/{sid}/manifests/0/",
                f"snapshots/{sid}/manifests/0/files/0/", "plan/", "preview/", "partitions/"]:
        page(client, base + url)  # inside its location: read (it was refused)
    foreign = two.current_snapshot().manifest_list  # type: ignore[union-attr]
    forged = forge(catalog, one, foreign)
    text = page(client, base + f"snapshots/{forged}/", 422)
    assert foreign in text and one.location in text
    assert "outside the places of the table" in text
    response = APIClient().get(f"/api/catalogs/named/namespaces/{ns}/tables/one/snapshots/"
                               f"{forged}/manifests/")
    assert response.status_code == 422 and response.json()["error"] == "OutsideWarehouse"
    page(client, base + f"snapshots/{sid}/")  # the snapshots before it still read
    # in a catalog whose warehouse is the bucket, the other table's file is inside: read
    configure(tmp_path, settings, {"named": rest_options(seaweedfs)})
    page(client, base + f"snapshots/{forged}/")
    catalog.close()


def test_a_table_writing_data_elsewhere_is_read_and_changed_there(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any, eager: Any) -> None:
    """write.data.path puts a table's data files outside its location: with a warehouse that
    is a name, they are read (the table's places), and a task writes its files there."""
    options = rest_options(seaweedfs, warehouse=seaweedfs.table_bucket)
    ns = unique_name("datapath")
    with RestCatalog("named", options) as catalog:
        catalog.create_namespace((ns,))
        other = catalog.create_table(f"{ns}.other", SCHEMA)
        table = catalog.create_table(f"{ns}.t", SCHEMA, properties={
            "write.data.path": f"{other.location}/data/of-t"})
        table.append(_rows(0, 10))
        table.append(_rows(10, 10))
    configure(tmp_path, settings, {"named": options})
    api = APIClient()
    url = f"/api/catalogs/named/namespaces/{ns}/tables/t/"
    preview = api.get(url + "preview/?limit=100")
    assert preview.status_code == 200, preview.content[:300]
    assert len(preview.json()["rows"]) == 20
    files = api.get(url + f"snapshots/{table.metadata.current_snapshot_id}/files/").json()
    assert len(files["results"]) == 2
    assert all(f["file_path"].startswith(f"{other.location}/data/of-t/")
               for f in files["results"])
    mia = client_for(user_with("mia", "maintainer", catalog="named"))
    response = eager(lambda: mia.post("/api/tasks/", {"kind": "delete_rows", "params": {
        "catalog": "named", "namespace": ns, "table": "t", "filter": "id < 5 OR id >= 15"}},
        format="json"))
    run = TaskRun.objects.get(pk=response.json()["id"])
    assert run.state == "SUCCEEDED", run.error
    table.refresh()
    assert floe_ids(table) == list(range(5, 15))
    assert all(t.data_file.file_path.startswith(f"{other.location}/data/of-t/")
               for t in plan_files(table.io, table.metadata).tasks)


# -- a broken REST catalog: 503 on its pages only, in bounded time -------------------------------


def assert_unavailable_alone(lake_pages: list[str], secret: str | None = None) -> None:
    client = Client()
    for url in lake_pages:
        text = page(client, url, 503)
        assert "catalog 'broken'" in text, text[:500]
        if secret:
            assert secret not in text
    api = APIClient().get("/api/catalogs/broken/namespaces/")
    assert api.status_code == 503 and api.json()["error"] == "CatalogUnavailable"
    # the other catalogs are fine; the table list says which one failed
    page(client, "/catalogs/local/")
    listing = page(client, "/")
    assert "broken" in listing


BROKEN_PAGES = ["/catalogs/broken/", "/catalogs/broken/namespaces/db/",
                "/catalogs/broken/namespaces/db/tables/t/",
                "/catalogs/broken/namespaces/db/tables/t/snapshots/"]


def test_a_wrong_credential_is_503_on_that_catalog_only(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> None:
    wrong = "wrong-SECRET-7c1e"
    configure(tmp_path, settings, {"broken": rest_options(
        seaweedfs, credential=f"{seaweedfs.access_key}:{wrong}")})
    assert_unavailable_alone(BROKEN_PAGES, wrong)
    text = page(Client(), "/catalogs/broken/", 503)
    assert "401" in text and wrong not in text


def test_a_catalog_server_down_is_503_on_that_catalog_only(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.FLOE_CATALOG_TIMEOUT = 1.0
    configure(tmp_path, settings, {"broken": rest_options(
        seaweedfs, uri=f"http://127.0.0.1:{port}")})
    assert_unavailable_alone(BROKEN_PAGES)


def test_a_failing_catalog_server_is_503_not_500(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> None:
    """The catalog answers 503 to every request (after the client's retries): the catalog is
    unavailable, a 503 naming it, not a server error of the explorer."""
    settings.FLOE_CATALOG_RETRIES = 1
    with FaultyProxy(seaweedfs.catalog_uri) as proxy:
        configure(tmp_path, settings, {"broken": rest_options(seaweedfs, uri=proxy.url)})
        proxy.throttle(1000, path_contains="/namespaces")
        assert_unavailable_alone(BROKEN_PAGES)
        assert proxy.requests()  # they reached the (failing) catalog
        # floe's REST client says so itself (it was a plain FloeError: a 500 page)
        direct = RestCatalog("direct", rest_options(seaweedfs, uri=proxy.url, **{
            "rest.client.max-retries": "1"}))
        with pytest.raises(CatalogUnavailable, match=r"catalog 'direct'.*503"):
            direct.list_namespaces()


def test_a_uri_that_is_not_a_rest_catalog_is_503_not_500(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> None:
    """The entry's uri reaches a web server that is not a REST catalog (a wrong path, a
    portal's login page): every answer is an HTML page. The catalog cannot be used: a 503
    naming it and what it answered, not a server error of the explorer."""

    class WebPage(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html><body>Welcome</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), WebPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        configure(tmp_path, settings, {"broken": rest_options(
            seaweedfs, uri=f"http://127.0.0.1:{server.server_address[1]}/portal")})
        assert_unavailable_alone(BROKEN_PAGES)
        text = page(Client(), "/catalogs/broken/", 503)
        assert "configuration" in text and "200 OK" in text
    finally:
        server.shutdown()
        server.server_close()


def test_a_catalog_server_that_does_not_answer_fails_the_page_in_bounded_time(
        seaweedfs: SeaweedFS, tmp_path: Path, settings: Any) -> None:
    """A server that accepts connections and never answers (a hung process): with the
    explorer's limits (FLOE_CATALOG_TIMEOUT, FLOE_CATALOG_RETRIES) the page is a 503 after
    about (retries + 1) × timeout, not after the REST client's own defaults (four retries of a
    minute each)."""
    settings.FLOE_CATALOG_TIMEOUT = 0.5
    settings.FLOE_CATALOG_RETRIES = 1
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)  # the kernel accepts; nobody reads
        configure(tmp_path, settings, {"broken": rest_options(
            seaweedfs, uri=f"http://127.0.0.1:{hung.getsockname()[1]}")})
        started = time.monotonic()
        text = page(Client(), "/catalogs/broken/", 503)
        elapsed = time.monotonic() - started
    assert "no answer after 2 attempts" in text
    assert elapsed < 30, elapsed  # the client's defaults: 5 × 60 s
