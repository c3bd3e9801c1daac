"""Floe's ``/iceberg/`` in front of an existing REST catalog: a catalog entry of ``type =
"rest"`` (SeaweedFS's Iceberg REST catalog and S3, tests/object_store.py) served through Floe,
with tests/faulty_proxy.py between Floe and SeaweedFS to see (and break) what reaches it.

PyIceberg 0.12's ``RestCatalog`` pointed at Floe (``warehouse`` = the Floe catalog's name)
lists, creates, appends, overwrites, evolves, loads with ``ETag`` / 304, renames and drops;
each change is checked by a client talking to SeaweedFS directly, is an audit entry of the
Floe user with the engine, and a viewer's change is 403 with nothing sent upstream. Commits
are passed on as sent (upstream checks them: its 409 is the client's 409; a 5xx or a lost
answer after sending is 500 ``CommitStateUnknownException``); a transaction of several tables
is 406 (SeaweedFS lists no ``transactions/commit``), one of a single table goes through.
Storage: the client gets upstream's loadTable ``config`` (endpoint, region, path style) over
the properties of Floe's catalog entry the operator vends (``FLOE_ICEBERG_VENDED_PROPERTIES``).
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import pyarrow as pa
import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from explorer.audit.selectors import table_audit
from explorer.catalogs import catalog_get
from explorer.models import AuditEntry, CatalogGrant
from floe.catalog.sql import SqlCatalog
from tests.faulty_proxy import FaultyProxy
from tests.object_store import SeaweedFS, duckdb_connect, pyiceberg_rest_catalog, unique_name

rest = pytest.importorskip("pyiceberg.catalog.rest")
from pyiceberg.exceptions import (  # noqa: E402 - after the importorskip
    CommitFailedException,
    ForbiddenError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.types import StringType  # noqa: E402

pytestmark = [pytest.mark.objectstore, pytest.mark.django_db(transaction=True)]

CATALOG = "lake"


@dataclass
class Site:
    url: str
    uri: str  # a client's uri
    server: SeaweedFS
    upstream: FaultyProxy  # between Floe and SeaweedFS's REST catalog
    keys: dict[str, str]  # user name -> API token

    def client(self, user: str, **properties: str) -> Any:
        """PyIceberg on Floe as ``user``, with no storage properties of its own."""
        return rest.RestCatalog("floe", uri=self.uri, warehouse=CATALOG,
                                token=self.keys[user], **properties)

    def direct(self) -> Any:
        """PyIceberg on SeaweedFS itself (what upstream holds)."""
        return pyiceberg_rest_catalog(self.server)

    def sent(self, method: str = "POST") -> list[tuple[str, str, int]]:
        return self.upstream.requests(method)


def _user(name: str, role: str | None) -> str:
    user = User.objects.create_user(name)
    if role is not None:
        CatalogGrant.objects.create(user=user, catalog="*", role=role)
    return str(Token.objects.create(user=user).key)


@pytest.fixture
def site(seaweedfs: SeaweedFS, live_server: Any, tmp_path: Path,
         settings: Any) -> Iterator[Site]:
    """Floe with the catalog ``lake``: SeaweedFS's REST catalog through a FaultyProxy, as an
    operator configures it (OAuth2 client credentials; no delegation header, so SeaweedFS
    answers loadTable with its S3 endpoint; S3 keys for Floe's own reads). Users ann (admin),
    mia (maintainer), vic (the default viewer role). The entry's S3 keys are vended."""
    with FaultyProxy(seaweedfs.catalog_uri) as upstream:
        entry = {"uri": upstream.url, "warehouse": seaweedfs.warehouse,
                 "credential": f"{seaweedfs.access_key}:{seaweedfs.secret_key}",
                 "oauth2-server-uri": upstream.url + "/v1/oauth/tokens",
                 "header.X-Iceberg-Access-Delegation": "",
                 "s3.access-key-id": seaweedfs.access_key,
                 "s3.secret-access-key": seaweedfs.secret_key}
        path = tmp_path / "catalogs.toml"
        path.write_text(f'[catalogs.{CATALOG}]\ntype = "rest"\n' + "".join(
            f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in entry.items()))
        settings.FLOE_CATALOGS = str(path)
        settings.FLOE_ICEBERG_VENDED_PROPERTIES = ["s3.access-key-id", "s3.secret-access-key"]
        keys = {name: _user(name, role)
                for name, role in (("ann", "admin"), ("mia", "maintainer"), ("vic", None))}
        url = str(live_server.url)
        yield Site(url, url + "/iceberg", seaweedfs, upstream, keys)


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": pa.array([f"c{i % 3}" for i in range(start, start + n)])})


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _raw(site: Site, method: str, path: str, user: str, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    parsed = urllib.parse.urlsplit(site.url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    try:
        conn.request(method, "/iceberg" + path,
                     body=json.dumps(body).encode() if body is not None else None,
                     headers={"Authorization": f"Bearer {site.keys[user]}",
                              "Content-Type": "application/json", **(headers or {})})
        answer = conn.getresponse()
        data = answer.read()
        return (answer.status, {k.lower(): v for k, v in answer.getheaders()},
                json.loads(data) if data else None)
    finally:
        conn.close()


def _table_path(ns: str, table: str) -> str:
    return f"/v1/{CATALOG}/namespaces/{ns}/tables/{table}"


def test_pyiceberg_through_floe_changes_upstream_and_each_change_is_the_users(
        site: Site) -> None:
    ns = unique_name("proxy")
    ann = site.client("ann")
    ann.create_namespace(ns)
    direct = site.direct()
    assert (ns,) in direct.list_namespaces()
    assert (ns,) in ann.list_namespaces()
    mia = site.client("mia")
    table = mia.create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    assert direct.table_exists(f"{ns}.t")
    # the client brings no S3 properties: upstream's config gives the endpoint, the
    # operator's vended keys the rest
    assert table.io.properties["s3.endpoint"] == site.server.endpoint
    assert table.io.properties["s3.access-key-id"] == site.server.access_key
    table.append(_rows(0, 5))
    assert _ids(direct.load_table(f"{ns}.t")) == [0, 1, 2, 3, 4]
    table.overwrite(_rows(10, 2))
    assert _ids(direct.load_table(f"{ns}.t")) == [10, 11]
    with table.update_schema() as update:
        update.add_column("note", StringType())
    upstream = direct.load_table(f"{ns}.t")
    assert [f.name for f in upstream.schema().fields] == ["id", "cat", "note"]
    assert mia.load_table(f"{ns}.t").metadata_location == upstream.metadata_location
    # the explorer's Audit tab of the table: every version is mia's change, none external
    rows = table_audit(table=catalog_get(CATALOG).load_table(f"{ns}.t"))
    assert len(rows) == 4 and {(r.source, r.actor) for r in rows} == {("floe", "mia")}
    with pytest.raises(TableAlreadyExistsError):  # (SeaweedFS would answer the table)
        mia.create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    mia.rename_table(f"{ns}.t", f"{ns}.t2")
    assert not direct.table_exists(f"{ns}.t") and _ids(direct.load_table(f"{ns}.t2")) == [
        10, 11]
    mia.drop_table(f"{ns}.t2")
    assert not direct.table_exists(f"{ns}.t2")
    with pytest.raises(NoSuchTableError):
        mia.load_table(f"{ns}.t2")
    # the audit: each change the user's, through PyIceberg, passed on to the catalog
    entries = list(AuditEntry.objects.filter(catalog=CATALOG, namespace=ns).order_by("id"))
    assert [e.action for e in entries] == [
        "rest_create_namespace", "rest_create_table", "rest_commit", "rest_commit",
        "rest_commit", "rest_rename_table", "rest_drop_table"]
    assert [e.actor_name for e in entries] == ["ann"] + ["mia"] * 6
    assert {(e.actor_via, e.outcome) for e in entries} == {("rest", "succeeded")}
    assert all(e.params["engine"].startswith("PyIceberg 0.12") for e in entries)
    create, *commits = entries[1:5]
    assert all(e.params["proxied"] is True for e in entries[1:5])
    assert commits[0].params["updates"] == ["add-snapshot", "set-snapshot-ref"]
    assert commits[-1].params["updates"][:2] == ["add-schema", "set-current-schema"]
    chain = [create, *commits]
    assert [e.metadata_before for e in commits] == [e.metadata_after for e in chain[:-1]]
    assert commits[-1].metadata_after == upstream.metadata_location
    assert commits[0].snapshot_before is None and commits[0].snapshot_after is not None
    assert commits[1].snapshot_before == commits[0].snapshot_after
    assert entries[5].params["to"] == f"{ns}.t2"
    assert entries[6].params["purge"] is False


def test_a_viewer_is_403_and_nothing_reaches_upstream(site: Site) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    site.client("mia").create_table(f"{ns}.t", schema=_rows(0, 1).schema).append(_rows(0, 2))
    vic = site.client("vic")
    table = vic.load_table(f"{ns}.t")  # a viewer loads and lists
    assert _ids(table) == [0, 1]
    assert vic.list_tables(ns) == [(ns, "t")]
    before = len(site.upstream.requests())
    with pytest.raises(ForbiddenError, match="maintainer"):
        table.append(_rows(2, 2))
    with pytest.raises(ForbiddenError, match="maintainer"):
        vic.create_table(f"{ns}.v", schema=_rows(0, 1).schema)
    with pytest.raises(ForbiddenError, match="maintainer"):
        vic.rename_table(f"{ns}.t", f"{ns}.u")
    with pytest.raises(ForbiddenError, match="maintainer"):
        vic.drop_table(f"{ns}.t")
    with pytest.raises(ForbiddenError, match="admin"):
        vic.create_namespace(unique_name("nope"))
    with pytest.raises(ForbiddenError, match="admin"):
        site.client("mia").purge_table(f"{ns}.t")
    # only reads a viewer may make reached it (PyIceberg asks whether the namespace exists
    # before a rename): no change was sent
    assert {method for method, _, _ in site.upstream.requests()[before:]} <= {"GET", "HEAD"}
    assert _ids(site.direct().load_table(f"{ns}.t")) == [0, 1]
    assert not AuditEntry.objects.filter(actor_name="vic").exists()


def test_load_has_an_etag_and_if_none_match_is_304_until_a_commit(site: Site) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    table = site.client("mia").create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    path = _table_path(ns, "t")
    status, headers, doc = _raw(site, "GET", path, "vic")
    etag = headers["etag"]
    assert status == 200 and doc["metadata-location"] == table.metadata_location
    # upstream's config (no keys: SeaweedFS vends none) under the operator's vended keys
    assert doc["config"]["s3.endpoint"] == site.server.endpoint
    assert doc["config"]["s3.path-style-access"] == "true"
    assert doc["config"]["s3.secret-access-key"] == site.server.secret_key
    loads = len(site.upstream.requests("GET"))
    status, headers, doc = _raw(site, "GET", path, "vic", headers={"If-None-Match": etag})
    assert (status, headers["etag"], doc) == (304, etag, None)
    assert len(site.upstream.requests("GET")) == loads + 1  # asked upstream, then 304
    table.append(_rows(0, 1))
    status, headers, doc = _raw(site, "GET", path, "vic", headers={"If-None-Match": etag})
    assert status == 200 and headers["etag"] != etag
    assert doc["metadata-location"] == site.direct().load_table(f"{ns}.t").metadata_location


def test_without_vended_properties_the_client_brings_its_own_keys(site: Site,
                                                                  settings: Any) -> None:
    settings.FLOE_ICEBERG_VENDED_PROPERTIES = []
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    bare = site.client("mia").create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    assert "s3.access-key-id" not in bare.io.properties  # nothing of Floe's entry leaks
    assert bare.io.properties["s3.endpoint"] == site.server.endpoint  # upstream's config
    keyed = site.client("mia", **{"s3.access-key-id": site.server.access_key,
                                  "s3.secret-access-key": site.server.secret_key})
    keyed.load_table(f"{ns}.t").append(_rows(0, 3))
    assert _ids(site.direct().load_table(f"{ns}.t")) == [0, 1, 2]


def test_a_commit_is_passed_on_as_sent_and_upstreams_409_is_the_clients(
        site: Site, caplog: pytest.LogCaptureFixture) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    first, second = site.client("mia"), site.client("mia")
    first.create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    a, b = first.load_table(f"{ns}.t"), second.load_table(f"{ns}.t")
    a.append(_rows(0, 3))
    body = {"identifier": {"namespace": [ns], "name": "t"},
            "requirements": [{"type": "assert-table-uuid", "uuid": str(b.metadata.table_uuid)},
                             {"type": "assert-current-schema-id", "current-schema-id": 0}],
            "updates": [{"action": "set-properties", "updates": {"owner": "mia"}}]}
    status, _, doc = _raw(site, "POST", _table_path(ns, "t"), "mia", body)
    assert status == 200 and doc["metadata"]["properties"]["owner"] == "mia"
    assert json.loads(site.upstream.bodies("POST")[-1]) == body  # as sent, nothing added
    stale = dict(body, requirements=[{"type": "assert-ref-snapshot-id", "ref": "main",
                                      "snapshot-id": None}])
    status, _, doc = _raw(site, "POST", _table_path(ns, "t"), "mia", stale)
    assert (status, doc["error"]["type"]) == (409, "CommitFailedException")
    assert site.sent()[-1][2] == 409  # upstream checked it and said 409
    assert json.loads(site.upstream.bodies("POST")[-1]) == stale
    # PyIceberg's own stale append: 409 from upstream, retried by the client
    caplog.clear()
    with caplog.at_level("INFO", logger="explorer.iceberg"):
        try:
            b.append(_rows(3, 3))
        except CommitFailedException:
            second.load_table(f"{ns}.t").append(_rows(3, 3))
    answers = [r.getMessage() for r in caplog.records if "updateTable" in r.getMessage()]
    assert "409 CommitFailedException" in answers[0] and "-> 200" in answers[-1], answers
    assert _ids(site.direct().load_table(f"{ns}.t")) == list(range(6))
    sent = len(site.sent())
    status, _, doc = _raw(site, "POST", _table_path(ns, "t"), "mia",
                          {"requirements": [], "updates": [{"action": "explode"}]})
    assert (status, doc["error"]["type"]) == (400, "BadRequestException")  # Floe's, unsent
    assert site.sent()[sent:] == []
    commits = AuditEntry.objects.filter(namespace=ns, action="rest_commit")
    assert commits.count() == 3 and {e.outcome for e in commits} == {"succeeded"}


def test_upstream_failing_after_the_commit_was_sent_is_commit_state_unknown(
        site: Site) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    site.client("mia").create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    path = _table_path(ns, "t")
    body = {"requirements": [], "updates": [{"action": "set-properties",
                                             "updates": {"k": "lost"}}]}
    site.upstream.lose_answer(method="POST", path_contains="/tables/t")  # done, answer lost
    status, _, doc = _raw(site, "POST", path, "mia", body)
    assert (status, doc["error"]["type"]) == (500, "CommitStateUnknownException")
    assert site.direct().load_table(f"{ns}.t").properties["k"] == "lost"  # it happened
    site.upstream.throttle(1, method="POST", path_contains="/tables/t")  # a 503 answer
    status, _, doc = _raw(site, "POST", path, "mia", dict(body, updates=[
        {"action": "set-properties", "updates": {"k": "throttled"}}]))
    assert (status, doc["error"]["type"]) == (500, "CommitStateUnknownException")
    assert "503" in doc["error"]["message"]
    assert site.direct().load_table(f"{ns}.t").properties["k"] == "lost"
    unknown = AuditEntry.objects.filter(namespace=ns, action="rest_commit").order_by("id")
    assert [(e.outcome, e.params["outcome"]) for e in unknown] == [
        ("failed", "unknown"), ("failed", "unknown")]
    assert all(e.actor_name == "mia" and e.params["proxied"] for e in unknown)


def test_upstream_unreachable_is_503_and_nothing_is_audited(site: Site) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    site.client("mia").create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    site.upstream.__exit__(None, None, None)  # nothing listens there any more
    status, _, doc = _raw(site, "POST", _table_path(ns, "t"), "mia", {
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert (status, doc["error"]["type"]) == (503, "ServiceUnavailableException"), doc
    assert "cannot connect" in doc["error"]["message"]
    assert "k" not in site.direct().load_table(f"{ns}.t").properties
    assert not AuditEntry.objects.filter(namespace=ns, action="rest_commit").exists()


def test_transactions_one_table_goes_through_several_are_406(site: Site) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    mia = site.client("mia")
    mia.create_table(f"{ns}.a", schema=_rows(0, 1).schema)
    mia.create_table(f"{ns}.b", schema=_rows(0, 1).schema)

    def change(name: str, value: str) -> dict[str, Any]:
        return {"identifier": {"namespace": [ns], "name": name}, "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"tx": value}}]}

    path = f"/v1/{CATALOG}/transactions/commit"
    sent = len(site.sent())
    status, _, doc = _raw(site, "POST", path, "mia",
                          {"table-changes": [change("a", "1"), change("b", "1")]})
    assert (status, doc["error"]["type"]) == (406, "UnsupportedOperationException")
    assert "several tables" in doc["error"]["message"] and site.sent()[sent:] == []
    status, _, _ = _raw(site, "POST", path, "mia", {"table-changes": [change("a", "2")]})
    assert status == 204
    direct = site.direct()
    assert direct.load_table(f"{ns}.a").properties["tx"] == "2"
    assert "tx" not in direct.load_table(f"{ns}.b").properties
    entry = AuditEntry.objects.get(namespace=ns, table="a", action="rest_commit")
    assert entry.params["transaction"] == 1
    assert entry.metadata_after == direct.load_table(f"{ns}.a").metadata_location


def test_namespace_properties_and_a_missing_table_pass_through(site: Site) -> None:
    ns = unique_name("proxy")
    ann = site.client("ann")
    ann.create_namespace(ns, {"owner": "ann"})
    assert ann.load_namespace_properties(ns)["owner"] == "ann"
    status, _, doc = _raw(site, "GET", _table_path(ns, "nothing"), "vic")
    assert (status, doc["error"]["type"]) == (404, "NoSuchTableException")
    status, _, doc = _raw(site, "POST", _table_path(ns, "nothing"), "mia",
                          {"requirements": [], "updates": [
                              {"action": "set-properties", "updates": {"a": "b"}}]})
    assert (status, doc["error"]["type"]) == (404, "NoSuchTableException")
    ann.update_namespace_properties(ns, removals={"owner"}, updates={"team": "data"})
    assert site.direct().load_namespace_properties(ns).get("team") == "data"
    ann.drop_namespace(ns)
    assert (ns,) not in site.direct().list_namespaces()
    actions = AuditEntry.objects.filter(namespace=ns).order_by("id").values_list(
        "action", flat=True)
    assert list(actions) == ["rest_create_namespace", "rest_update_namespace_properties",
                             "rest_drop_namespace"]


def test_register_and_purge_pass_through(site: Site) -> None:
    ns = unique_name("proxy")
    ann = site.client("ann")
    ann.create_namespace(ns)
    mia = site.client("mia")
    mia.create_table(f"{ns}.t", schema=_rows(0, 1).schema).append(_rows(0, 2))
    location = site.direct().load_table(f"{ns}.t").metadata_location
    mia.register_table(f"{ns}.r", location)
    direct = site.direct()
    assert direct.load_table(f"{ns}.r").metadata_location == location
    mia.create_table(f"{ns}.u", schema=_rows(0, 1).schema).append(_rows(0, 2))
    ann.purge_table(f"{ns}.u")
    assert not direct.table_exists(f"{ns}.u")
    deletes = [path for _, path, _ in site.sent("DELETE")]
    assert deletes[-1] == (f"/v1/{site.server.table_bucket}/namespaces/{ns}/tables/u"
                           "?purgeRequested=true")
    entries = AuditEntry.objects.filter(
        namespace=ns, action__in=["rest_register_table", "rest_drop_table"]).order_by("id")
    assert [(e.action, e.table, e.actor_name) for e in entries] == [
        ("rest_register_table", "r", "mia"), ("rest_drop_table", "u", "ann")]
    assert entries[0].metadata_after == location and entries[1].params["purge"] is True


def test_upstream_failing_a_drop_is_a_500_not_unavailable(site: Site) -> None:
    """SeaweedFS 4.48 cannot drop a table registered over another table's metadata file
    (500 "failed to delete table", also asked directly): the drop reached it and failed,
    which is not "the catalog is unavailable, retry later" (503)."""
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    mia = site.client("mia")
    mia.create_table(f"{ns}.t", schema=_rows(0, 1).schema).append(_rows(0, 2))
    mia.register_table(f"{ns}.r", site.direct().load_table(f"{ns}.t").metadata_location)
    status, _, doc = _raw(site, "DELETE", _table_path(ns, "r"), "mia")
    assert status == 500, doc
    assert "failed to delete table" in doc["error"]["message"]
    assert "may or may not have happened" in doc["error"]["message"]
    assert site.sent("DELETE")[-1][2] == 500
    entry = AuditEntry.objects.get(namespace=ns, table="r", action="rest_drop_table")
    assert (entry.actor_name, entry.outcome, entry.params["outcome"]) == (
        "mia", "failed", "unknown")
    assert "failed to delete table" in entry.error


def test_staged_create_through_floe(site: Site) -> None:
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    mia = site.client("mia")
    with mia.create_table_transaction(f"{ns}.s", schema=_rows(0, 1).schema) as tx:
        tx.append(_rows(0, 4))
    upstream = site.direct().load_table(f"{ns}.s")
    assert _ids(upstream) == [0, 1, 2, 3]
    entry = AuditEntry.objects.get(namespace=ns, table="s")
    assert (entry.action, entry.actor_name, entry.params["staged"]) == (
        "rest_create_table", "mia", True)
    assert entry.metadata_after == upstream.metadata_location
    assert entry.snapshot_after == upstream.metadata.current_snapshot_id


def test_duckdb_inserts_through_floe_one_table_per_transaction(site: Site) -> None:
    """DuckDB 1.5.5 commits only through transactions/commit: one table's transaction is
    passed on as that table's commit (SeaweedFS lists no transactions/commit)."""
    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    site.client("mia").create_table(f"{ns}.d", schema=_rows(0, 1).schema)
    con = duckdb_connect(site.server)  # DuckDB brings the S3 secret
    con.execute(
        f"ATTACH '{CATALOG}' AS floe (TYPE iceberg, ENDPOINT '{site.uri}', "
        f"CLIENT_ID 'mia', CLIENT_SECRET '{site.keys['mia']}', "
        f"OAUTH2_SERVER_URI '{site.uri}/v1/oauth/tokens', READ_ONLY false)")
    con.execute(f"INSERT INTO floe.{ns}.d VALUES (1, 'a'), (2, 'b')")
    assert sorted(r[0] for r in con.execute(f"SELECT id FROM floe.{ns}.d").fetchall()) == [1, 2]
    con.close()
    upstream = site.direct().load_table(f"{ns}.d")
    assert _ids(upstream) == [1, 2]
    entry = AuditEntry.objects.get(namespace=ns, table="d", action="rest_commit")
    assert entry.actor_name == "mia" and entry.params["engine"].startswith("duckdb")
    assert entry.params["transaction"] == 1
    assert entry.metadata_after == upstream.metadata_location


def test_a_transaction_goes_to_upstreams_transactions_commit_when_it_lists_it(
        site: Site, tmp_path: Path, settings: Any) -> None:
    """Floe in front of Floe: ``chain`` passes everything on to this site's own SQL catalog
    ``sqlcat`` (whose /v1/config lists transactions/commit) as the service user ann."""
    sql_uri = f"sqlite:///{tmp_path / 'chain.db'}"
    extra = (f'\n[catalogs.sqlcat]\ntype = "sql"\nuri = "{sql_uri}"\n'
             f'warehouse = "{tmp_path / "sql"}"\n'
             f'\n[catalogs.chain]\ntype = "rest"\nuri = "{site.uri}"\nwarehouse = "sqlcat"\n'
             f'token = "{site.keys["ann"]}"\n')
    path = Path(settings.FLOE_CATALOGS)
    path.write_text(path.read_text() + extra)
    ann = rest.RestCatalog("floe", uri=site.uri, warehouse="chain", token=site.keys["ann"])
    ann.create_namespace("db")
    mia = rest.RestCatalog("floe", uri=site.uri, warehouse="chain", token=site.keys["mia"])
    a = mia.create_table("db.a", schema=_rows(0, 1).schema)
    mia.create_table("db.b", schema=_rows(0, 1).schema)

    def change(name: str, value: str, **requirement: Any) -> dict[str, Any]:
        return {"identifier": {"namespace": ["db"], "name": name},
                "requirements": [requirement] if requirement else [],
                "updates": [{"action": "set-properties", "updates": {"tx": value}}]}

    path_tx = "/v1/chain/transactions/commit"
    status, _, doc = _raw(site, "POST", path_tx, "mia", {"table-changes": [
        change("a", "1"), change("b", "1", type="assert-table-uuid", uuid=str(uuid4()))]})
    assert (status, doc["error"]["type"]) == (409, "CommitFailedException"), doc
    with SqlCatalog("sqlcat", sql_uri, str(tmp_path / "sql")) as catalog:
        assert "tx" not in catalog.load_table("db.a").metadata.properties  # neither table
    status, _, _ = _raw(site, "POST", path_tx, "mia", {"table-changes": [
        change("a", "2", type="assert-table-uuid", uuid=str(a.metadata.table_uuid)),
        change("b", "2")]})
    assert status == 204
    with SqlCatalog("sqlcat", sql_uri, str(tmp_path / "sql")) as catalog:
        after = {t: catalog.load_table(f"db.{t}") for t in ("a", "b")}
    assert {t: table.metadata.properties.get("tx") for t, table in after.items()} == {
        "a": "2", "b": "2"}  # both or (the 409) neither
    mine = AuditEntry.objects.filter(catalog="chain", action="rest_commit").order_by("table")
    assert [(e.table, e.actor_name, e.params["transaction"]) for e in mine] == [
        ("a", "mia", 2), ("b", "mia", 2)]
    assert [e.metadata_after for e in mine] == [after["a"].metadata_location,
                                                after["b"].metadata_location]
    served = AuditEntry.objects.filter(catalog="sqlcat", action="rest_commit")
    assert {e.actor_name for e in served} == {"ann"} and served.count() == 2
    assert {e.params["transaction"] for e in served} == {2}  # one transaction upstream


_WRITER = """
import os, sys, time, pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
uri, warehouse, token, ident, worker, count, go = sys.argv[1:8]
catalog = RestCatalog("floe", uri=uri, warehouse=warehouse, token=token)
catalog.load_table(ident)
while not os.path.exists(go):  # every writer starts at once
    time.sleep(0.005)
for i in range(int(count)):
    row = int(worker) * 1000 + i
    while True:
        try:
            catalog.load_table(ident).append(pa.table({"id": pa.array([row], pa.int64()),
                                                       "cat": pa.array([worker])}))
            break
        except CommitFailedException:
            pass
"""


@pytest.mark.slow
def test_four_processes_appending_through_the_proxy_lose_and_repeat_nothing(
        site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """4 PyIceberg processes x 8 appends to one table through Floe: upstream answers the
    conflicts 409, Floe passes them on, the clients retry; every row is upstream once."""
    import subprocess
    import sys
    import time

    ns = unique_name("proxy")
    site.client("ann").create_namespace(ns)
    site.client("mia").create_table(f"{ns}.t", schema=_rows(0, 1).schema)
    go = tmp_path / "go"
    with caplog.at_level("INFO", logger="explorer.iceberg"):
        writers = [subprocess.Popen([sys.executable, "-c", _WRITER, site.uri, CATALOG,
                                     site.keys["mia"], f"{ns}.t", str(w), "8", str(go)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for w in range(4)]
        time.sleep(1)
        go.touch()
        outputs = [w.communicate(timeout=300) for w in writers]
    assert all(w.returncode == 0 for w in writers), [err[-2000:] for _, err in outputs]
    assert _ids(site.direct().load_table(f"{ns}.t")) == sorted(
        w * 1000 + i for w in range(4) for i in range(8))
    commits = AuditEntry.objects.filter(namespace=ns, action="rest_commit")
    assert commits.filter(outcome="succeeded").count() == 32 == commits.count()
    answers = [r.getMessage() for r in caplog.records if "updateTable" in r.getMessage()]
    conflicts = sum("-> 409 CommitFailedException" in a for a in answers)
    upstream_409 = [r for r in site.sent("POST") if f"/{ns}/tables/t" in r[1] and r[2] == 409]
    assert conflicts > 0 and len(upstream_409) == conflicts  # each one upstream's answer
    assert len(answers) == 32 + conflicts  # nothing but successes and 409s
