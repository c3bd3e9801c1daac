"""The Iceberg REST catalog the site serves under ``/iceberg/``, driven by real clients over a
live server (pytest-django's ``live_server``): PyIceberg 0.12's ``RestCatalog`` (with
``token`` and with ``credential``) and floe's own REST client create, append, evolve, conflict
and retry, rename and drop tables of a SQL catalog (SQLite and PostgreSQL) and a file-system
catalog; every change is an audit entry naming the user and the engine, shown on the table's
Audit tab as the user's change; 401 without or with a bad token, 403 for a missing role; the
OAuth2 endpoint (form body and HTTP Basic); bad requests each a 4xx that changes nothing."""

from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client
from rest_framework.authtoken.models import Token

from api import iceberg_auth
from explorer.audit.selectors import table_audit
from explorer.maintenance.metrics import metrics_sweep
from explorer.models import AuditEntry, CatalogGrant, TableMetrics
from explorer.rest.services import HEALTH
from floe.catalog.base import TableIdentifier
from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.rest import RestCatalog
from floe.catalog.sql import SqlCatalog
from floe.errors import CatalogUnavailable
from floe.reachable import reachable_files
from floe.rest_server import NotAuthorized
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.table.updates import AssertCurrentSchemaId, SetProperties
from floe.table.updates_json import commit_request_to_json
from floe.types import LONG, STRING, NestedField

rest = pytest.importorskip("pyiceberg.catalog.rest")
from pyiceberg.exceptions import (  # noqa: E402 - after the importorskip
    ForbiddenError,
    NoSuchTableError,
    UnauthorizedError,
)
from pyiceberg.types import StringType  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": pa.array([f"c{i % 3}" for i in range(start, start + n)])})


@dataclass
class Site:
    url: str
    uri: str  # what a client's uri is
    sql: str  # the SQL catalog's name
    files: str  # the file-system catalog's name
    sql_uri: str
    sql_warehouse: Path
    files_warehouse: Path
    keys: dict[str, str]  # user name -> API token

    def sql_catalog(self) -> SqlCatalog:
        return SqlCatalog(self.sql, self.sql_uri, str(self.sql_warehouse))


def _user(name: str, role: str | None, catalog: str) -> str:
    user = User.objects.create_user(name)
    if role is not None:
        CatalogGrant.objects.create(user=user, catalog=catalog, role=role)
    return str(Token.objects.create(user=user).key)


@pytest.fixture(params=["sqlite", "postgresql"])
def site(request: pytest.FixtureRequest, live_server: Any, tmp_path: Path,
         settings: Any) -> Site:
    """A catalog file with a SQL catalog and a file-system catalog; users ann (admin of
    both), mia (maintainer of both) and vic (only the default viewer role), each with an API
    token."""
    sql_uri = (f"sqlite:///{tmp_path / 'catalog.db'}" if request.param == "sqlite"
               else str(request.getfixturevalue("postgres_url")))
    sql, files = f"sql_{uuid.uuid4().hex[:8]}", "files"
    (tmp_path / "files").mkdir()
    path = tmp_path / "catalogs.toml"
    path.write_text(f'[catalogs.{sql}]\ntype = "sql"\nuri = "{sql_uri}"\n'
                    f'warehouse = "{tmp_path / "sql"}"\n'
                    f'"s3.region" = "eu-west-1"\n\n'
                    f'[catalogs.{files}]\ntype = "filesystem"\n'
                    f'warehouse = "{tmp_path / "files"}"\n')
    settings.FLOE_CATALOGS = str(path)
    keys = {}
    for name, role in (("ann", "admin"), ("mia", "maintainer"), ("vic", None)):
        keys[name] = _user(name, role, "*")
    url = str(live_server.url)
    return Site(url, url + "/iceberg", sql, files, sql_uri, tmp_path / "sql",
                tmp_path / "files", keys)


def _pyiceberg(site: Site, warehouse: str, **auth: str) -> Any:
    return rest.RestCatalog("floe", **{
        "uri": site.uri, "warehouse": warehouse,
        "oauth2-server-uri": site.uri + "/v1/oauth/tokens", **auth})


def _raw(site: Site, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    parsed = urllib.parse.urlsplit(site.url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        conn.request(method, "/iceberg" + path, body=body, headers=headers or {})
        answer = conn.getresponse()
        data = answer.read()
        doc = json.loads(data) if data else None
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, doc
    finally:
        conn.close()


def _bearer(site: Site, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {site.keys[user]}", "Content-Type": "application/json"}


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


# -- PyIceberg -------------------------------------------------------------------------------


def test_pyiceberg_creates_appends_and_evolves_and_each_commit_is_the_users(site: Site) -> None:
    admin = _pyiceberg(site, site.sql, token=site.keys["ann"])
    admin.create_namespace("db")
    mia = _pyiceberg(site, site.sql, token=site.keys["mia"])
    table = mia.create_table("db.events", schema=_rows(0, 1).schema)
    table.append(_rows(0, 5))
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table.append(_rows(5, 5).append_column("note", pa.array(["n"] * 5)))
    assert _ids(mia.load_table("db.events")) == list(range(10))
    # the same table seen by floe's SQL catalog, which shares the database
    with site.sql_catalog() as catalog:
        floe_table = catalog.load_table("db.events")
        assert floe_table.metadata_location == mia.load_table("db.events").metadata_location
        data = plan_to_table(floe_table.io, plan_files(floe_table.io, floe_table.metadata))
        assert sorted(data.column("id").to_pylist()) == list(range(10))
    # every change is mia's, through PyIceberg, with the metadata before and after
    entries = list(AuditEntry.objects.filter(catalog=site.sql, table="events")
                   .order_by("created_at", "id"))
    assert [e.action for e in entries] == ["rest_create_table", "rest_commit", "rest_commit",
                                           "rest_commit"]
    assert {(e.actor_name, e.actor_via, e.outcome) for e in entries} == {
        ("mia", "rest", "succeeded")}
    assert all(e.params["engine"].startswith("PyIceberg 0.12") for e in entries)
    assert [e.metadata_before for e in entries[1:]] == [e.metadata_after for e in entries[:-1]]
    assert entries[-1].metadata_after == floe_table.metadata_location
    assert entries[1].params["updates"] == ["add-snapshot", "set-snapshot-ref"]
    assert entries[1].snapshot_before is None and entries[1].snapshot_after is not None
    assert AuditEntry.objects.get(action="rest_create_namespace").actor_name == "ann"
    # the table's Audit tab: every version is mia's change (source floe), none external
    rows = table_audit(table=floe_table)
    assert [r.source for r in rows] == ["floe"] * 4
    assert {r.actor for r in rows} == {"mia"}
    assert all(r.engine and r.engine.startswith("PyIceberg") for r in rows)
    page = Client()
    page.force_login(User.objects.get(username="vic"))
    doc = page.get(f"/catalogs/{site.sql}/namespaces/db/tables/events/audit/",
                   {"format": "json"}).json()
    assert [(r["source"], r["actor"], r["action"]) for r in doc][0] == (
        "floe", "mia", "rest_commit")
    # each state a REST commit made has its health row, from the metadata alone, written
    # behind the answers; the sweep finds nothing new
    assert HEALTH.flush()
    health = list(TableMetrics.objects.filter(catalog=site.sql, table="events").order_by("id"))
    assert [h.metadata_location for h in health] == [e.metadata_after for e in entries]
    assert {(h.source, h.external) for h in health} == {("rest", False)}
    assert [h.records for h in health] == [0, 5, 5, 10]
    assert health[-1].snapshots == 2 and health[-1].manifests is None
    assert metrics_sweep(catalogs=[site.sql]).recorded == 0


def test_pyiceberg_with_a_credential_gets_a_token_from_the_oauth_endpoint(site: Site) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    mia = _pyiceberg(site, site.sql, credential=f"mia:{site.keys['mia']}")
    mia.create_table("db.t", schema=_rows(0, 1).schema).append(_rows(0, 3))
    assert _ids(mia.load_table("db.t")) == [0, 1, 2]
    assert mia.list_tables("db") == [("db", "t")]
    assert AuditEntry.objects.filter(actor_name="mia", action="rest_commit").count() == 1


def test_a_conflicting_commit_is_409_and_the_clients_retry_goes_through(
        site: Site, caplog: pytest.LogCaptureFixture) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    first = _pyiceberg(site, site.sql, token=site.keys["mia"])
    first.create_table("db.t", schema=_rows(0, 1).schema)
    second = _pyiceberg(site, site.sql, token=site.keys["mia"])
    a, b = first.load_table("db.t"), second.load_table("db.t")
    a.append(_rows(0, 5))
    caplog.clear()
    with caplog.at_level("INFO", logger="explorer.iceberg"):
        b.append(_rows(5, 5))  # b's main is stale: 409, PyIceberg reloads and tries again
    answers = [r.getMessage() for r in caplog.records if r.name == "explorer.iceberg"
               and "updateTable" in r.getMessage()]
    assert "409 CommitFailedException" in answers[0] and "-> 200" in answers[-1], answers
    assert _ids(first.load_table("db.t")) == list(range(10))
    assert AuditEntry.objects.filter(action="rest_commit").count() == 2  # refusals: log only


def test_rename_drop_and_purge_need_their_roles(site: Site) -> None:
    ann = _pyiceberg(site, site.sql, token=site.keys["ann"])
    ann.create_namespace("db")
    ann.create_namespace("other")
    mia = _pyiceberg(site, site.sql, token=site.keys["mia"])
    vic = _pyiceberg(site, site.sql, token=site.keys["vic"])
    table = mia.create_table("db.t", schema=_rows(0, 1).schema)
    table.append(_rows(0, 2))
    with pytest.raises(ForbiddenError, match="maintainer"):
        vic.create_table("db.v", schema=_rows(0, 1).schema)
    with pytest.raises(ForbiddenError):
        vic.load_table("db.t").append(_rows(2, 2))
    with pytest.raises(ForbiddenError, match="admin"):
        mia.create_namespace("nope")
    assert _ids(vic.load_table("db.t")) == [0, 1]  # a viewer loads and lists
    assert vic.list_tables("db") == [("db", "t")]
    renamed = mia.rename_table("db.t", "other.t2")
    assert _ids(renamed) == [0, 1] and not mia.table_exists("db.t")
    rename = AuditEntry.objects.get(action="rest_rename_table")
    assert (rename.namespace, rename.table, rename.params["to"]) == ("db", "t", "other.t2")
    with site.sql_catalog() as catalog:  # every file the table's metadata reaches
        t2 = catalog.load_table("other.t2")
        reached = reachable_files(t2.io, t2.metadata, metadata_location=t2.metadata_location)
        files = {f for f in reached.all() if Path(f).exists()}  # (no version hint in SQL)
    assert len(files) >= 5  # data, manifest, manifest list, two metadata files
    with pytest.raises(ForbiddenError, match="purge"):
        mia.purge_table("other.t2")
    ann.purge_table("other.t2")
    assert not [f for f in files if Path(f).exists()]  # purged (vic's refused files stay)
    mia.create_table("other.x", schema=_rows(0, 1).schema)
    mia.drop_table("other.x")  # without purge: a maintainer's
    with pytest.raises(NoSuchTableError):
        mia.load_table("other.x")
    drops = AuditEntry.objects.filter(action="rest_drop_table").order_by("id")
    assert [(d.actor_name, d.params["purge"]) for d in drops] == [("ann", True), ("mia", False)]


def test_a_file_system_catalog_is_served_too(site: Site) -> None:
    ann = _pyiceberg(site, site.files, token=site.keys["ann"])
    ann.create_namespace("lake")
    mia = _pyiceberg(site, site.files, token=site.keys["mia"])
    table = mia.create_table("lake.t", schema=_rows(0, 1).schema)
    table.append(_rows(0, 4))
    table.append(_rows(4, 4))
    local = FileSystemCatalog("f", str(site.files_warehouse)).load_table("lake.t")
    assert local.metadata_location.endswith("/v3.metadata.json")
    assert _ids(mia.load_table("lake.t")) == list(range(8))
    status, _, doc = _raw(site, "POST", f"/v1/{site.files}/tables/rename", json.dumps({
        "source": {"namespace": ["lake"], "name": "t"},
        "destination": {"namespace": ["lake"], "name": "u"}}).encode(), _bearer(site, "mia"))
    assert (status, doc["error"]["type"]) == (406, "UnsupportedOperationException")


# -- floe's own REST client ------------------------------------------------------------------


def test_floes_rest_client_with_a_token_and_with_a_credential(site: Site) -> None:
    ann = RestCatalog("served", {"uri": site.uri, "warehouse": site.sql,
                                 "token": site.keys["ann"]})
    ann.create_namespace(("a", "b"))
    assert ann.list_namespaces(("a",)) == [("a", "b")]
    mia = RestCatalog("served", {"uri": site.uri, "warehouse": site.sql,
                                 "credential": f"mia:{site.keys['mia']}"})
    table = mia.create_table(TableIdentifier(("a", "b"), "t"), SCHEMA)
    table.append(_rows(0, 6))
    table.update_schema().add_column("note", STRING).commit()
    table = mia.load_table(TableIdentifier(("a", "b"), "t"))
    assert [f.name for f in table.schema().fields] == ["id", "cat", "note"]
    data = plan_to_table(table.io, plan_files(table.io, table.metadata))
    assert sorted(data.column("id").to_pylist()) == list(range(6))
    assert AuditEntry.objects.filter(actor_name="mia", namespace="a.b").count() == 3
    assert set(AuditEntry.objects.filter(actor_name="mia").values_list(
        "params__engine", flat=True)) != {""}
    vic = RestCatalog("served", {"uri": site.uri, "warehouse": site.sql,
                                 "token": "not-a-token"})
    with pytest.raises(CatalogUnavailable, match="401"):
        vic.list_namespaces()
    ann.close()
    mia.close()
    vic.close()


# -- authentication --------------------------------------------------------------------------


def test_401_without_or_with_a_bad_token_and_none_is_no_token(site: Site) -> None:
    for headers in ({}, {"Authorization": "Bearer None"}, {"Authorization": "Bearer nope"},
                    {"Authorization": "Basic bWlhOng="}, {"Authorization": "Bearer a:b:c"}):
        status, answer_headers, doc = _raw(site, "GET", f"/v1/config?warehouse={site.sql}",
                                           headers=headers)
        assert (status, doc["error"]["type"]) == (401, "NotAuthorizedException"), headers
        assert answer_headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(UnauthorizedError):
        _pyiceberg(site, site.sql).list_namespaces()  # PyIceberg without credentials
    status, _, doc = _raw(site, "GET", f"/v1/config?warehouse={site.sql}",
                          headers=_bearer(site, "vic"))
    assert status == 200 and doc["overrides"] == {"prefix": site.sql}


def test_the_oauth_endpoint_takes_the_form_or_basic_and_refuses_the_rest(site: Site) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    def post(body: dict[str, str], headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, answer_headers, doc = _raw(site, "POST", "/v1/oauth/tokens",
                                           urllib.parse.urlencode(body).encode(),
                                           {**form, **(headers or {})})
        assert answer_headers["cache-control"] == "no-store"
        return status, doc

    status, doc = post({"grant_type": "client_credentials", "client_id": "mia",
                        "client_secret": site.keys["mia"], "scope": "catalog"})
    assert status == 200 and doc["token_type"] == "bearer" and doc["expires_in"] == 3600
    token = doc["access_token"]
    assert _raw(site, "GET", f"/v1/{site.sql}/namespaces",
                headers={"Authorization": f"Bearer {token}"})[0] == 200
    basic = base64.b64encode(f"mia:{site.keys['mia']}".encode()).decode()
    status, doc = post({"grant_type": "client_credentials"}, {"Authorization": f"Basic {basic}"})
    assert status == 200 and doc["access_token"]
    wrong = post({"grant_type": "client_credentials", "client_id": "mia",
                  "client_secret": "wrong"})
    unknown = post({"grant_type": "client_credentials", "client_id": "nobody",
                    "client_secret": site.keys["mia"]})
    assert wrong[0] == unknown[0] == 401 and wrong[1]["error"] == "invalid_client"
    assert wrong[1] == unknown[1]  # the answer does not tell which user names exist
    assert post({"grant_type": "password"})[1]["error"] == "unsupported_grant_type"
    assert post({})[1]["error"] == "invalid_request"
    status, doc = post({"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                        "subject_token": token,
                        "subject_token_type": iceberg_auth.ACCESS_TOKEN_TYPE})
    assert status == 200 and _raw(site, "GET", f"/v1/{site.sql}/namespaces", headers={
        "Authorization": f"Bearer {doc['access_token']}"})[0] == 200
    assert post({"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                 "subject_token": "forged:token:x"})[1]["error"] == "invalid_grant"
    # replacing the API token ends the access tokens issued for the old one
    Token.objects.filter(user__username="mia").delete()
    status, _, err = _raw(site, "GET", f"/v1/{site.sql}/namespaces",
                          headers={"Authorization": f"Bearer {token}"})
    assert (status, err["error"]["type"]) == (401, "NotAuthorizedException")
    assert "replaced or revoked" in err["error"]["message"]


def test_each_request_sees_the_user_and_roles_as_they_are_now(site: Site) -> None:
    """The token is looked up on every request (one plain SQL statement): the user it names
    with its flags, a role revoked or a user deactivated between two requests counts at once,
    for API tokens and the access tokens issued for them."""
    mia = User.objects.get(username="mia")
    mia.email = "mia@example.com"
    mia.save()
    access = iceberg_auth.access_token_issue(mia, site.keys["mia"])["access_token"]
    for bearer in (site.keys["mia"], access):
        user = iceberg_auth.bearer_user(f"Bearer {bearer}")
        assert (user.pk, user.get_username(), user.is_active, user.is_superuser,
                user.is_staff) == (mia.pk, "mia", True, False, False)
        assert user.email == "mia@example.com"  # a field not read up front: loaded if asked
    ann = iceberg_auth.bearer_user(f"Bearer {site.keys['ann']}")
    assert ann.get_username() == "ann" and ann.is_superuser is False
    namespaces = f"/v1/{site.sql}/namespaces"
    body = json.dumps({"namespace": ["fresh"]}).encode()
    assert _raw(site, "POST", namespaces, body, _bearer(site, "ann"))[0] == 200
    CatalogGrant.objects.filter(user__username="ann").delete()  # ann is a viewer now
    status, _, err = _raw(site, "POST", namespaces, json.dumps(
        {"namespace": ["later"]}).encode(), _bearer(site, "ann"))
    assert (status, err["error"]["type"]) == (403, "ForbiddenException")
    assert _raw(site, "GET", namespaces, headers=_bearer(site, "ann"))[0] == 200
    User.objects.filter(username="mia").update(is_active=False)
    for bearer in (site.keys["mia"], access):
        status, _, err = _raw(site, "GET", namespaces,
                              headers={"Authorization": f"Bearer {bearer}"})
        assert status == 401 and "deactivated" in err["error"]["message"]


def test_an_access_token_expires(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    mia = User.objects.get(username="mia")
    token = iceberg_auth.access_token_issue(mia, site.keys["mia"])["access_token"]
    assert iceberg_auth.bearer_user(f"Bearer {token}") == mia
    later = time.time() + 3601
    monkeypatch.setattr(signing.time, "time", lambda: later)
    with pytest.raises(NotAuthorized, match="expired"):
        iceberg_auth.bearer_user(f"Bearer {token}")


# -- bad requests ----------------------------------------------------------------------------


def test_bad_requests_are_4xx_in_the_error_model_and_change_nothing(site: Site,
                                                                    settings: Any) -> None:
    ann = _pyiceberg(site, site.sql, token=site.keys["ann"])
    ann.create_namespace("db")
    ann.create_table("db.t", schema=_rows(0, 1).schema)
    with site.sql_catalog() as catalog:
        before = catalog.metadata_location("db.t")
    path = f"/v1/{site.sql}/namespaces/db/tables/t"
    cases: list[tuple[str, str, bytes, int, str]] = [
        ("POST", path, b"{broken", 400, "malformed JSON"),
        ("POST", path, b'{"requirements": [], "updates": [{"action": "explode"}]}', 400,
         "'explode' is unknown"),
        ("POST", path, b'{"requirements": [{"type": "assert-magic"}], "updates": []}', 400,
         "'assert-magic' is unknown"),
        ("POST", path, json.dumps(commit_request_to_json(
            [AssertCurrentSchemaId(3)], [SetProperties({"a": "b"})])).encode(), 409,
         "current schema id"),
        ("GET", f"/v1/{site.sql}/namespaces/db/tables/a..b", b"", 400, "'..'"),
        ("GET", f"/v1/{site.sql}/namespaces/db/tables/x%1Fy", b"", 400, "unit separator"),
        ("GET", f"/v1/{site.sql}/namespaces/db%1F%1Fz/tables", b"", 400, "non-empty"),
        ("POST", f"/v1/{site.sql}/namespaces", b'{"namespace": ["a\\u001fb"]}', 400,
         "unit separator"),
        ("POST", f"/v1/{site.sql}/namespaces/db/tables",
         json.dumps({"name": "..", "schema": SCHEMA.to_json()}).encode(), 400, "'..'"),
    ]
    for method, target, body, status, says in cases:
        got, _, doc = _raw(site, method, target, body or None, _bearer(site, "ann"))
        assert (got, doc["error"]["code"]) == (status, status), (target, body, doc)
        assert says in doc["error"]["message"], (says, doc)
    # the site reads and writes only inside a catalog's warehouse: 422, nothing read or made
    outside = [
        ("POST", f"/v1/{site.sql}/namespaces/db/register",
         json.dumps({"name": "pw", "metadata-location": "/etc/passwd"}).encode()),
        ("POST", f"/v1/{site.sql}/namespaces/db/tables",
         json.dumps({"name": "away", "schema": SCHEMA.to_json(),
                     "location": str(site.sql_warehouse.parent / "elsewhere")}).encode()),
    ]
    for method, target, body in outside:
        got, _, doc = _raw(site, method, target, body, _bearer(site, "ann"))
        assert (got, doc["error"]["type"]) == (422, "UnprocessableEntityException"), doc
        assert "outside the warehouse" in doc["error"]["message"]
    assert not (site.sql_warehouse.parent / "elsewhere").exists()
    settings.FLOE_ICEBERG_MAX_BODY = 2048
    big = json.dumps(commit_request_to_json([], [SetProperties({"k": "v" * 5000})])).encode()
    got, _, doc = _raw(site, "POST", path, big, _bearer(site, "ann"))
    assert (got, doc["error"]["type"]) == (413, "RequestTooLargeException")
    assert "2048 bytes" in doc["error"]["message"]
    with site.sql_catalog() as catalog:
        assert catalog.metadata_location("db.t") == before
        assert catalog.list_namespaces() == [("db",)]
        assert [i.name for i in catalog.list_tables("db")] == ["t"]
    assert AuditEntry.objects.filter(action="rest_commit").count() == 0


def test_a_raw_path_keeps_an_encoded_slash_inside_its_name(site: Site) -> None:
    """Behind a server that passes the raw request target (waitress's REQUEST_URI), a table
    name with an encoded ``/`` is refused as a name, not read as two path segments."""
    client = Client()
    target = f"/iceberg/v1/{site.sql}/namespaces/db/tables/a%2Ftables%2Fb"
    r = client.get(target, REQUEST_URI=target,
                   HTTP_AUTHORIZATION=f"Bearer {site.keys['vic']}")
    assert r.status_code == 400 and "'/'" in r.json()["error"]["message"]
    decoded = client.get(target, HTTP_AUTHORIZATION=f"Bearer {site.keys['vic']}")
    assert decoded.status_code == 404  # without it the decoded path is all there is


def test_pyiceberg_nested_namespaces_staged_creates_and_more_kinds_of_commits(
        site: Site, settings: Any) -> None:
    settings.FLOE_ICEBERG_VENDED_PROPERTIES = ["s3.region", "s3.endpoint"]
    ann = _pyiceberg(site, site.sql, token=site.keys["ann"])
    ann.create_namespace(("a", "b"))  # levels joined by %1F in its paths
    ann.create_namespace(("a", "c"))
    assert ann.list_namespaces(("a",)) == [("a", "b"), ("a", "c")]
    assert ann.namespace_exists(("a", "b")) and not ann.namespace_exists(("a", "z"))
    mia = _pyiceberg(site, site.sql, token=site.keys["mia"])
    with mia.create_table_transaction(("a", "b", "t"), schema=_rows(0, 1).schema) as tx:
        tx.append(_rows(0, 4))  # a staged create and its first snapshot, one commit
    table = mia.load_table(("a", "b", "t"))
    assert _ids(table) == [0, 1, 2, 3]
    assert table.config == {"s3.region": "eu-west-1"}  # vended: named and configured
    table.delete("id = 1")
    table.overwrite(_rows(10, 2))
    first = table.metadata.snapshots[0].snapshot_id
    table.manage_snapshots().create_tag(first, "v1").commit()
    assert _ids(mia.load_table(("a", "b", "t"))) == [10, 11]
    assert mia.load_table(("a", "b", "t")).scan(snapshot_id=first).to_arrow().num_rows == 4
    with site.sql_catalog() as catalog:
        floe_table = catalog.load_table(TableIdentifier(("a", "b"), "t"))
        assert floe_table.metadata.refs["v1"].snapshot_id == first
    entries = AuditEntry.objects.filter(namespace="a.b", table="t").order_by("id")
    assert [e.action for e in entries][0] == "rest_create_table"
    assert entries[0].params["staged"] is True and entries[0].snapshot_after is not None
    assert entries.count() >= 4 and {e.actor_name for e in entries} == {"mia"}
    assert [r.source for r in table_audit(table=floe_table)] == ["floe"] * entries.count()


def test_an_idempotency_key_over_http_commits_once(site: Site) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    _pyiceberg(site, site.sql, token=site.keys["mia"]).create_table(
        "db.t", schema=_rows(0, 1).schema)
    body = json.dumps(commit_request_to_json([], [SetProperties({"once": "1"})])).encode()
    headers = {**_bearer(site, "mia"), "Idempotency-Key": str(uuid.uuid4())}
    path = f"/v1/{site.sql}/namespaces/db/tables/t"
    first = _raw(site, "POST", path, body, headers)
    second = _raw(site, "POST", path, body, headers)
    assert first[0] == second[0] == 200 and first[2] == second[2]
    assert AuditEntry.objects.filter(action="rest_commit").count() == 1
    with site.sql_catalog() as catalog:
        assert len(catalog.load_table("db.t").metadata.metadata_log) == 1


_WRITER = """
import os, sys, time, pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
uri, warehouse, token, worker, count, go = sys.argv[1:7]
catalog = RestCatalog("floe", uri=uri, warehouse=warehouse, token=token)
catalog.load_table("db.t")
while not os.path.exists(go):  # every writer starts at once
    time.sleep(0.005)
conflicts = 0
for i in range(int(count)):
    row = int(worker) * 1000 + i
    while True:
        try:
            catalog.load_table("db.t").append(pa.table({"id": pa.array([row], pa.int64()),
                                                        "cat": pa.array([worker])}))
            break
        except CommitFailedException:
            conflicts += 1
print(conflicts)
"""


@pytest.mark.slow
def test_four_processes_appending_through_rest_lose_and_repeat_nothing(
        site: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """4 PyIceberg processes x 8 appends to one table: conflicts are answered 409 and the
    clients retry (PyIceberg itself, then the script); every row is there once."""
    import subprocess
    import sys

    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    _pyiceberg(site, site.sql, token=site.keys["mia"]).create_table(
        "db.t", schema=_rows(0, 1).schema)
    go = tmp_path / "go"
    with caplog.at_level("INFO", logger="explorer.iceberg"):
        writers = [subprocess.Popen([sys.executable, "-c", _WRITER, site.uri, site.sql,
                                     site.keys["mia"], str(w), "8", str(go)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for w in range(4)]
        time.sleep(1)
        go.touch()
        outputs = [w.communicate(timeout=300) for w in writers]
    assert all(w.returncode == 0 for w in writers), [err[-2000:] for _, err in outputs]
    ids = _ids(_pyiceberg(site, site.sql, token=site.keys["mia"]).load_table("db.t"))
    assert ids == sorted(w * 1000 + i for w in range(4) for i in range(8))
    assert AuditEntry.objects.filter(action="rest_commit", outcome="succeeded").count() == 32
    answers = [r.getMessage() for r in caplog.records if "updateTable" in r.getMessage()]
    conflicts = sum("-> 409 CommitFailedException" in a for a in answers)
    assert conflicts > 0 and sum("-> 200" in a for a in answers) == 32
    assert len(answers) == 32 + conflicts  # nothing but successes and 409s


def test_the_reference_documents_what_is_served(site: Site) -> None:
    from drf_spectacular.validation import validate_schema

    client = Client()
    doc = client.get("/iceberg/openapi.json").json()
    validate_schema(doc)
    served = {f"{method.upper()} {path}" for path, item in doc["paths"].items()
              for method in item if path not in ("/v1/config", "/v1/oauth/tokens")}
    status, _, config = _raw(site, "GET", f"/v1/config?warehouse={site.sql}",
                             headers=_bearer(site, "vic"))
    assert served == set(config["endpoints"])  # the reference lists what config advertises
    ops = {op["operationId"] for item in doc["paths"].values() for op in item.values()}
    assert {"getConfig", "getToken", "updateTable", "commitTransaction", "dropTable"} <= ops
    page = client.get("/iceberg/reference/")
    assert page.status_code == 200 and b"/iceberg/openapi.json" in page.content
