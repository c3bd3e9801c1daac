"""The Iceberg REST protocol served from floe catalogs (floe.rest_server), driven directly with
requests as a web layer builds them, on SQL catalogs (SQLite and the real PostgreSQL of
tests/conftest.py) and file-system catalogs: configuration, namespaces, tables, commits
(requirements checked against the current metadata, a pointer moved underneath retried, an
unknown outcome answered 500), transactions across tables, the error model for bad requests
(each a 4xx that changes nothing), paging, ETags, Idempotency-Key. The last tests put the core
behind a plain HTTP server and let floe's own REST client create, append and evolve tables
through it."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.base import Catalog, TableIdentifier
from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.rest import RestCatalog
from floe.catalog.sql import SqlCatalog, SqlPointers
from floe.errors import CommitStateUnknown, NotFound
from floe.rest_server import Access, Forbidden, Operation, Request, Response, RestServer
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.table.updates import (
    AddSchema,
    AssertCurrentSchemaId,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetCurrentSchema,
    SetProperties,
    TableRequirement,
    TableUpdate,
)
from floe.table.updates_json import commit_request_to_json
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))
SCHEMA_JSON = SCHEMA.to_json()


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql", "filesystem"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    name = f"c{uuid.uuid4().hex[:10]}"
    warehouse = str(tmp_path / "warehouse")
    cat: Catalog
    if request.param == "filesystem":
        cat = FileSystemCatalog(name, warehouse)
    elif request.param == "sqlite":
        cat = SqlCatalog(name, f"sqlite:///{tmp_path / 'catalog.db'}", warehouse)
    else:
        cat = SqlCatalog(name, str(request.getfixturevalue("postgres_url")), warehouse)
    with cat:
        yield cat


@pytest.fixture
def sql_catalog(sql_uri: str, catalog_name: str, tmp_path: Path) -> Iterator[SqlCatalog]:
    with SqlCatalog(catalog_name, sql_uri, str(tmp_path / "warehouse")) as cat:
        yield cat


def _lookup(*catalogs: Catalog) -> Callable[[str], Catalog]:
    by_name = {c.name: c for c in catalogs}

    def get(name: str) -> Catalog:
        if name not in by_name:
            raise NotFound(f"catalog {name!r} does not exist")
        return by_name[name]

    return get


class Client:
    """Requests to a server as a web layer makes them (raw paths, lower-case headers)."""

    def __init__(self, server: RestServer, prefix: str) -> None:
        self.server = server
        self.prefix = prefix

    def __call__(self, method: str, path: str, body: Any = None, *,
                 query: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                 raw: bytes | None = None, principal: str = "alice",
                 authorize: Callable[[Operation], None] | None = None) -> Response:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        full = "/v1/" + (path if path.startswith("config") else f"{self.prefix}/{path}")
        return self.server.handle(
            Request(method, full, query or {}, {k.lower(): v for k, v in (headers or {}).items()},
                    data, principal), authorize=authorize)


@pytest.fixture
def client(catalog: Catalog) -> Client:
    return Client(RestServer(_lookup(catalog)), catalog.name)


def _error(r: Response) -> tuple[int, str]:
    doc = r.json()
    assert set(doc) == {"error"} and set(doc["error"]) == {"message", "type", "code"}
    assert doc["error"]["code"] == r.status and doc["error"]["message"]
    return r.status, doc["error"]["type"]


def _create(client: Client, ns: str = "db", name: str = "t", **extra: Any) -> Response:
    if client("HEAD", f"namespaces/{ns}").status == 404:
        assert client("POST", "namespaces", {"namespace": ns.split("\x1f")}).status == 200
    r = client("POST", f"namespaces/{ns}/tables", {"name": name, "schema": SCHEMA_JSON, **extra})
    assert r.status == 200, r.body
    return r


def _commit(client: Client, path: str, requirements: list[TableRequirement],
            updates: list[TableUpdate], **kw: Any) -> Response:
    return client("POST", path, commit_request_to_json(requirements, updates), **kw)


def _location(catalog: Catalog, ident: str) -> str:
    return catalog.metadata_location(TableIdentifier.parse(ident))


# -- configuration ---------------------------------------------------------------------------


def test_config_names_the_prefix_and_the_endpoints_served(client: Client) -> None:
    r = client("GET", "config", query={"warehouse": client.prefix})
    assert r.status == 200
    doc = r.json()
    assert doc["overrides"] == {"prefix": client.prefix} and doc["defaults"] == {}
    assert doc["idempotency-key-lifetime"] == "PT1800S"
    endpoints = set(doc["endpoints"])
    assert {"GET /v1/{prefix}/namespaces", "HEAD /v1/{prefix}/namespaces/{namespace}",
            "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
            "POST /v1/{prefix}/transactions/commit", "POST /v1/{prefix}/tables/rename",
            "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"} <= endpoints
    assert not [e for e in endpoints if "/views" in e or "config" in e]
    assert _error(client("GET", "config")) == (400, "BadRequestException")
    assert _error(client("GET", "config", query={"warehouse": "nope"})) == (
        404, "NoSuchWarehouseException")


def test_an_unknown_route_and_a_wrong_method_are_refused(client: Client) -> None:
    status, kind = _error(client.server.handle(Request("GET", "/v1/namespaces")))
    assert (status, kind) == (404, "NotFoundException")
    assert "warehouse" in client.server.handle(Request("GET", "/v1/namespaces")).json()[
        "error"]["message"]
    assert _error(client("PUT", "namespaces")) == (405, "MethodNotAllowedException")
    assert _error(client("GET", "namespaces/db/views")) == (404, "NotFoundException")


# -- namespaces ------------------------------------------------------------------------------


def test_namespaces_nested_listed_paged_loaded_and_dropped(client: Client,
                                                           catalog: Catalog) -> None:
    for ns in (["a"], ["a", "b"], ["a", "c"], ["d"], ["e"]):
        r = client("POST", "namespaces", {"namespace": ns})
        assert r.status == 200 and r.json()["namespace"] == ns
    assert _error(client("POST", "namespaces", {"namespace": ["a"]})) == (
        409, "AlreadyExistsException")
    assert client("GET", "namespaces").json() == {
        "namespaces": [["a"], ["d"], ["e"]], "next-page-token": None}
    assert client("GET", "namespaces", query={"parent": "a"}).json()["namespaces"] == [
        ["a", "b"], ["a", "c"]]
    assert client("GET", "namespaces", query={"parent": "a\x1fb"}).json()["namespaces"] == []
    assert _error(client("GET", "namespaces", query={"parent": "zz"})) == (
        404, "NoSuchNamespaceException")
    # pages of two: every namespace once, the token opaque, the last page without one
    seen, query = [], {"pageSize": "2"}
    while True:
        doc = client("GET", "namespaces", query=query).json()
        seen += doc["namespaces"]
        if doc["next-page-token"] is None:
            break
        query = {"pageSize": "2", "pageToken": doc["next-page-token"]}
    assert seen == [["a"], ["d"], ["e"]]
    assert _error(client("GET", "namespaces", query={"pageSize": "0"}))[0] == 400
    assert _error(client("GET", "namespaces", query={"pageToken": "%%%"}))[0] == 400
    # load and exists; %1F joins levels in paths
    assert client("GET", "namespaces/a%1Fb").json()["namespace"] == ["a", "b"]
    assert client("HEAD", "namespaces/a%1Fb").status == 204
    missing = client("HEAD", "namespaces/a%1Fz")
    assert missing.status == 404 and missing.body == b""
    assert _error(client("GET", "namespaces/zz")) == (404, "NoSuchNamespaceException")
    # drop: not empty, then empty, then missing
    assert _error(client("DELETE", "namespaces/a")) == (409, "NamespaceNotEmptyException")
    assert client("DELETE", "namespaces/a%1Fb").status == 204
    assert _error(client("DELETE", "namespaces/a%1Fb")) == (404, "NoSuchNamespaceException")
    assert client("HEAD", "namespaces/a%1Fb").status == 404
    assert catalog.list_namespaces("a") == [("a", "c")]


def test_namespace_properties_are_updated_where_a_catalog_keeps_them(
        client: Client, catalog: Catalog) -> None:
    body = {"namespace": ["p"], "properties": {"owner": "ann", "x": "1"}}
    if isinstance(catalog, FileSystemCatalog):
        assert _error(client("POST", "namespaces", body)) == (
            406, "UnsupportedOperationException")
        assert not catalog.namespace_exists("p")
        client("POST", "namespaces", {"namespace": ["p"]})
        assert _error(client("POST", "namespaces/p/properties", {"updates": {"a": "b"}})) == (
            406, "UnsupportedOperationException")
        return
    assert client("POST", "namespaces", body).json()["properties"]["owner"] == "ann"
    r = client("POST", "namespaces/p/properties",
               {"removals": ["x", "gone"], "updates": {"owner": "bob", "team": "t"}})
    assert r.json() == {"updated": ["owner", "team"], "removed": ["x"], "missing": ["gone"]}
    props = client("GET", "namespaces/p").json()["properties"]
    assert props["owner"] == "bob" and props["team"] == "t" and "x" not in props
    assert r.changes[0].action == "update_namespace_properties"
    both = client("POST", "namespaces/p/properties", {"removals": ["team"],
                                                       "updates": {"team": "u"}})
    assert _error(both) == (422, "UnprocessableEntityException")
    assert catalog.load_namespace_properties("p")["team"] == "t"


# -- tables ----------------------------------------------------------------------------------


def test_tables_created_listed_loaded_with_etags_and_dropped(client: Client,
                                                             catalog: Catalog) -> None:
    created = _create(client)
    doc = created.json()
    assert doc["metadata-location"] == _location(catalog, "db.t")
    assert doc["metadata"]["schemas"][0]["fields"][0]["name"] == "id" and doc["config"] == {}
    assert created.changes[0].action == "create_table"
    assert _error(client("POST", "namespaces/db/tables", {"name": "t", "schema": SCHEMA_JSON})
                  ) == (409, "AlreadyExistsException")
    assert _error(client("POST", "namespaces/nope/tables", {"name": "t",
                                                             "schema": SCHEMA_JSON})) == (
        404, "NoSuchNamespaceException")
    for name in ("u", "v"):
        _create(client, name=name)
    assert client("GET", "namespaces/db/tables", query={"pageSize": "2"}).json() == {
        "identifiers": [{"namespace": ["db"], "name": "t"}, {"namespace": ["db"], "name": "u"}],
        "next-page-token": client("GET", "namespaces/db/tables", query={"pageSize": "2"}
                                  ).json()["next-page-token"]}
    token = client("GET", "namespaces/db/tables", query={"pageSize": "2"}).json()[
        "next-page-token"]
    assert client("GET", "namespaces/db/tables", query={"pageToken": token}).json() == {
        "identifiers": [{"namespace": ["db"], "name": "v"}], "next-page-token": None}
    # load, and If-None-Match: 304 until the table changes
    loaded = client("GET", "namespaces/db/tables/t")
    etag = loaded.headers["ETag"]
    assert loaded.status == 200 and etag.startswith('"') and etag == created.headers["ETag"]
    same = client("GET", "namespaces/db/tables/t", headers={"If-None-Match": etag})
    assert same.status == 304 and same.body == b"" and same.headers["ETag"] == etag
    assert client("GET", "namespaces/db/tables/t", query={"snapshots": "refs"}
                  ).headers["ETag"] != etag
    assert _error(client("GET", "namespaces/db/tables/t", query={"snapshots": "some"}))[0] == 400
    _commit(client, "namespaces/db/tables/t", [], [SetProperties({"k": "v"})])
    changed = client("GET", "namespaces/db/tables/t", headers={"If-None-Match": etag})
    assert changed.status == 200 and changed.headers["ETag"] != etag
    assert changed.json()["metadata"]["properties"]["k"] == "v"
    # exists, missing table vs missing namespace, drop
    assert client("HEAD", "namespaces/db/tables/t").status == 204
    assert client("HEAD", "namespaces/db/tables/zz").status == 404
    assert _error(client("GET", "namespaces/db/tables/zz")) == (404, "NoSuchTableException")
    assert _error(client("GET", "namespaces/zz/tables/t")) == (404, "NoSuchTableException")
    dropped = client("DELETE", "namespaces/db/tables/u")
    assert dropped.status == 204 and dropped.changes[0].action == "drop_table"
    assert not catalog.table_exists("db.u")
    assert _error(client("DELETE", "namespaces/db/tables/u")) == (404, "NoSuchTableException")


def test_a_table_of_a_missing_namespace_is_no_such_table_where_the_spec_says_so(
        client: Client, catalog: Catalog) -> None:
    """Iceberg Java loads ``db.t.snapshots`` (a metadata table) and ``db.t.branch_b`` as a
    table of namespace ``db.t`` first, and looks for table ``db.t`` only on
    NoSuchTableException; the spec names no other 404 for these operations."""
    _create(client)
    update = commit_request_to_json([], [SetProperties({"k": "v"})])
    for method, body in (("GET", None), ("POST", update), ("DELETE", None)):
        assert _error(client(method, "namespaces/db%1Ft/tables/snapshots", body)) == (
            404, "NoSuchTableException"), method
    missing = {"table-changes": [{"identifier": {"namespace": ["zz"], "name": "t"},
                                  **update}]}
    assert _error(client("POST", "transactions/commit", missing)) == (
        404, "NoSuchTableException")
    # where the spec names it, a missing namespace is still NoSuchNamespaceException
    assert _error(client("POST", "namespaces/zz/tables", {"name": "t",
                                                           "schema": SCHEMA_JSON})) == (
        404, "NoSuchNamespaceException")
    assert _error(client("GET", "namespaces/zz/tables")) == (404, "NoSuchNamespaceException")
    assert catalog.load_table("db.t").properties.get("k") is None


def test_a_drop_with_purge_deletes_the_files_and_needs_admin(client: Client,
                                                             catalog: Catalog) -> None:
    location = _create(client).json()["metadata-location"]
    asked: list[Operation] = []

    def authorize(op: Operation) -> None:
        asked.append(op)
        if op.access >= Access.ADMIN:
            raise Forbidden(f"{op.name} needs admin")

    refused = client("DELETE", "namespaces/db/tables/t", query={"purgeRequested": "true"},
                     authorize=authorize)
    assert _error(refused) == (403, "ForbiddenException") and catalog.table_exists("db.t")
    assert asked[-1] == Operation("dropTable", catalog.name, Access.ADMIN, ("db",), "t", True)
    r = client("DELETE", "namespaces/db/tables/t", query={"purgeRequested": "true"})
    assert r.status == 204 and r.changes[0].detail == {"purge": True}
    assert not Path(location).exists()


def test_load_table_hands_out_the_storage_config_the_operator_vends(catalog: Catalog) -> None:
    vend = {"s3.endpoint": "http://127.0.0.1:9", "s3.region": "eu-west-1"}
    client = Client(RestServer(_lookup(catalog), vended_config=lambda name: vend),
                    catalog.name)
    _create(client)
    assert client("GET", "namespaces/db/tables/t").json()["config"] == vend


# -- commits ---------------------------------------------------------------------------------


def test_a_commit_applies_the_updates_when_the_requirements_hold(client: Client,
                                                                 catalog: Catalog) -> None:
    md = _create(client).json()["metadata"]
    before = _location(catalog, "db.t")
    evolved = Schema(*SCHEMA.fields, NestedField(3, "note", STRING))
    r = _commit(client, "namespaces/db/tables/t",
                [AssertTableUUID(md["table-uuid"]), AssertCurrentSchemaId(0)],
                [AddSchema(evolved), SetCurrentSchema(-1), SetProperties({"a": "1"})])
    assert r.status == 200, r.body
    doc = r.json()
    assert set(doc) == {"metadata-location", "metadata"} and "ETag" in r.headers
    assert doc["metadata-location"] == _location(catalog, "db.t") != before
    table = catalog.load_table("db.t")
    assert [f.name for f in table.schema().fields] == ["id", "cat", "note"]
    assert table.properties["a"] == "1"
    change = r.changes[0]
    assert (change.action, change.metadata_before, change.metadata_after) == (
        "commit", before, doc["metadata-location"])
    assert change.detail["updates"] == ["add-schema", "set-current-schema", "set-properties"]
    # nothing to change: no new metadata file
    same = _commit(client, "namespaces/db/tables/t", [AssertCurrentSchemaId(1)], [])
    assert same.status == 200 and same.json()["metadata-location"] == _location(catalog, "db.t")
    assert same.changes == []


def test_a_v3_snapshot_moves_next_row_id_and_one_behind_it_is_409(client: Client,
                                                                  catalog: Catalog) -> None:
    """Spec "Row Lineage": Iceberg Java's commits to a v3 table carry first-row-id (the
    table's next-row-id when written) and added-rows; the catalog moves next-row-id past
    them, and a snapshot whose first-row-id is behind it was written on stale metadata."""
    _create(client, properties={"format-version": "3"})
    path = "namespaces/db/tables/t"

    def add(snapshot_id: int, parent: int | None, first_row_id: int, rows: int) -> Response:
        snapshot = {"snapshot-id": snapshot_id, "sequence-number": snapshot_id,
                    "timestamp-ms": int(time.time() * 1000), "summary": {"operation": "append"},
                    "manifest-list": f"/nowhere/snap-{snapshot_id}.avro", "schema-id": 0,
                    "first-row-id": first_row_id, "added-rows": rows}
        if parent is not None:
            snapshot["parent-snapshot-id"] = parent
        return client("POST", path, {"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": snapshot_id}]})

    first = add(1, None, 0, 5)
    assert first.status == 200, first.body
    assert first.json()["metadata"]["next-row-id"] == 5
    stale = _location(catalog, "db.t")
    assert _error(add(2, 1, 0, 3)) == (409, "CommitFailedException")
    assert _location(catalog, "db.t") == stale
    assert add(2, 1, 5, 3).json()["metadata"]["next-row-id"] == 8
    assert catalog.load_table("db.t").metadata.next_row_id == 8


def test_a_stale_requirement_is_409_and_changes_nothing(client: Client,
                                                        catalog: Catalog) -> None:
    _create(client)
    before = _location(catalog, "db.t")
    for requirement in (AssertCurrentSchemaId(7), AssertTableUUID(str(uuid.uuid4())),
                        AssertRefSnapshotId("main", 123)):
        r = _commit(client, "namespaces/db/tables/t", [requirement], [SetProperties({"a": "b"})])
        assert _error(r) == (409, "CommitFailedException") and r.changes == []
        assert "requirement failed" in r.json()["error"]["message"]
    assert _location(catalog, "db.t") == before


@pytest.mark.parametrize("body, says", [
    (b"{not json", "malformed JSON"),
    (b"[]", "must be a JSON object"),
    (b"", "no body"),
    (b'{"requirements": [], "updates": [{"action": "frobnicate"}]}', "'frobnicate' is unknown"),
    (b'{"requirements": [{"type": "assert-nothing"}], "updates": []}',
     "'assert-nothing' is unknown"),
    (b'{"requirements": [], "updates": [{"action": "set-properties"}]}', "missing field"),
    (b'{"updates": []}', "no 'requirements'"),
    (b'{"requirements": [], "updates": [{"action": "add-view-version"}]}', "not supported"),
    (b'{"identifier": {"namespace": ["db"], "name": "other"}, "requirements": [], '
     b'"updates": []}', "names table db.other"),
])
def test_a_malformed_commit_is_400_and_changes_nothing(client: Client, catalog: Catalog,
                                                       body: bytes, says: str) -> None:
    _create(client)
    before = _location(catalog, "db.t")
    r = client("POST", "namespaces/db/tables/t", raw=body)
    assert _error(r) == (400, "BadRequestException")
    assert says in r.json()["error"]["message"]
    assert _location(catalog, "db.t") == before


def test_a_body_nested_too_deep_is_400_and_changes_nothing(client: Client,
                                                           catalog: Catalog) -> None:
    _create(client)
    before = _location(catalog, "db.t")
    r = client("POST", "namespaces/db/tables/t", raw=b"[" * 200_000 + b"]" * 200_000)
    assert _error(r) == (400, "BadRequestException")
    commit = b'{"requirements": [], "updates": [{"action": "set-properties", "updates": ' \
        + b'{"k": ' + b'[' * 100_000 + b']' * 100_000 + b'}}]}'
    assert _error(client("POST", "namespaces/db/tables/t", raw=commit))[0] == 400
    assert _location(catalog, "db.t") == before


@pytest.mark.parametrize("path, body", [
    ("namespaces/db/tables/a..b", None),
    ("namespaces/db/tables/a%1Fb", None),
    ("namespaces/db%1F%1Fx/tables", None),
    ("namespaces/..%1Fx/tables", None),
    ("namespaces/db/tables", {"name": "x\x1fy", "schema": SCHEMA_JSON}),
    ("namespaces/db/tables", {"name": "..", "schema": SCHEMA_JSON}),
    ("namespaces", {"namespace": ["ok", "a\x1fb"]}),
    ("namespaces", {"namespace": []}),
    ("namespaces", {"namespace": ["a", ".."]}),
])
def test_names_with_dot_dot_or_separators_in_the_wrong_place_are_400(
        client: Client, catalog: Catalog, path: str, body: Any) -> None:
    client("POST", "namespaces", {"namespace": ["db"]})
    r = client("POST" if body is not None else "GET", path, body)
    assert _error(r) == (400, "BadRequestException")
    assert catalog.list_namespaces() == [("db",)] and catalog.list_tables("db") == []


def test_an_oversized_body_is_413_and_changes_nothing(catalog: Catalog) -> None:
    client = Client(RestServer(_lookup(catalog), max_body_bytes=1000), catalog.name)
    _create(client)
    before = _location(catalog, "db.t")
    big = commit_request_to_json([], [SetProperties({"k": "v" * 2000})])
    r = client("POST", "namespaces/db/tables/t", big)
    assert _error(r) == (413, "RequestTooLargeException") and "1000 bytes" in r.body.decode()
    assert _location(catalog, "db.t") == before


class _Racing:
    """Wraps a catalog's commit_updates: the first call first lets another writer change the
    same table (``interfere``, through a second catalog object on the same store), so the
    pointer has moved when the server's check-and-put runs."""

    def __init__(self, catalog: Catalog, other: Catalog, interfere: Callable[[Any], Any]
                 ) -> None:
        self.other, self.interfere = other, interfere
        self.calls = 0
        self.original = catalog.commit_updates

    def __call__(self, ident: TableIdentifier, *args: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.interfere(self.other.load_table(ident))
        return self.original(ident, *args)


def _second(catalog: Catalog) -> Catalog:
    if isinstance(catalog, SqlCatalog):
        return SqlCatalog(catalog.name, catalog.uri, catalog.warehouse)
    assert isinstance(catalog, FileSystemCatalog)
    return FileSystemCatalog(catalog.name, catalog.warehouse)


def test_a_pointer_moved_underneath_is_retried_on_the_fresh_metadata(
        client: Client, catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    md = _create(client).json()["metadata"]
    with _second(catalog) as other:
        racing = _Racing(catalog, other, lambda t: t.set_properties({"other": "writer"}))
        monkeypatch.setattr(catalog, "commit_updates", racing)
        r = _commit(client, "namespaces/db/tables/t",
                    [AssertTableUUID(md["table-uuid"]), AssertCurrentSchemaId(0)],
                    [SetProperties({"mine": "1"})])
    assert r.status == 200, r.body
    assert racing.calls == 2 and r.changes[0].detail["attempts"] == 2
    props = catalog.load_table("db.t").properties
    assert props["mine"] == "1" and props["other"] == "writer"  # both commits kept


def test_a_requirement_broken_by_the_writer_that_moved_the_pointer_is_409(
        client: Client, catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    _create(client)
    with _second(catalog) as other:
        racing = _Racing(catalog, other,
                         lambda t: t.update_schema().add_column("x", LONG).commit())
        monkeypatch.setattr(catalog, "commit_updates", racing)
        r = _commit(client, "namespaces/db/tables/t", [AssertCurrentSchemaId(0)],
                    [SetProperties({"mine": "1"})])
    assert _error(r) == (409, "CommitFailedException") and racing.calls == 1
    assert "mine" not in catalog.load_table("db.t").properties


def test_a_commit_whose_outcome_is_unknown_is_500_and_recorded(
        sql_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(RestServer(_lookup(sql_catalog)), sql_catalog.name)
    _create(client)
    before = _location(sql_catalog, "db.t")
    swap = SqlPointers.swap

    def swap_then_lose_the_answer(self: SqlPointers, *args: Any) -> None:
        swap(self, *args)  # the database took it; the answer never came back
        raise CommitStateUnknown("the connection dropped during COMMIT")

    monkeypatch.setattr(SqlPointers, "swap", swap_then_lose_the_answer)
    r = _commit(client, "namespaces/db/tables/t", [], [SetProperties({"a": "b"})])
    assert _error(r) == (500, "CommitStateUnknownException")
    change = r.changes[0]
    assert (change.outcome, change.metadata_before, change.metadata_after) == (
        "unknown", before, None)
    after = _location(sql_catalog, "db.t")
    assert after != before and Path(after).exists()  # nothing written was deleted


def test_a_staged_create_is_committed_with_assert_create(client: Client,
                                                         catalog: Catalog) -> None:
    client("POST", "namespaces", {"namespace": ["db"]})
    staged = client("POST", "namespaces/db/tables",
                    {"name": "s", "schema": SCHEMA_JSON, "stage-create": True,
                     "properties": {"p": "1"}})
    assert staged.status == 200 and staged.json()["metadata-location"] is None
    assert not catalog.table_exists("db.s") and staged.changes == []
    md = staged.json()["metadata"]
    # what PyIceberg's create transaction sends (the staged metadata as updates)
    updates = [
        {"action": "assign-uuid", "uuid": md["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": md["format-version"]},
        {"action": "add-schema", "schema": md["schemas"][0],
         "last-column-id": md["last-column-id"]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": md["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": md["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": md["location"]},
        {"action": "set-properties", "updates": md["properties"]},
    ]
    body = {"requirements": [{"type": "assert-create"}], "updates": updates}
    r = client("POST", "namespaces/db/tables/s", body)
    assert r.status == 200, r.body
    table = catalog.load_table("db.s")
    assert table.metadata.table_uuid == md["table-uuid"] and table.properties["p"] == "1"
    assert r.changes[0].action == "create_table" and r.changes[0].detail["staged"]
    again = client("POST", "namespaces/db/tables/s", body)
    assert _error(again)[0] == 409
    mixed = {"requirements": [{"type": "assert-create"},
                              {"type": "assert-current-schema-id", "current-schema-id": 0}],
             "updates": updates}
    assert _error(client("POST", "namespaces/db/tables/s2", mixed))[0] == 400
    no_schema = {"requirements": [{"type": "assert-create"}], "updates": updates[8:]}
    assert _error(client("POST", "namespaces/db/tables/s3", no_schema))[0] == 400
    assert not catalog.table_exists("db.s2") and not catalog.table_exists("db.s3")


def test_a_staged_create_makes_its_local_metadata_directory_and_none_elsewhere(
        client: Client, catalog: Catalog, tmp_path: Path) -> None:
    # DuckDB 1.5 writes the first snapshot's manifests under <location>/metadata/ before it
    # commits a staged create (CREATE TABLE AS) and makes no directory on a local disk
    client("POST", "namespaces", {"namespace": ["db"]})
    staged = client("POST", "namespaces/db/tables",
                    {"name": "s", "schema": SCHEMA_JSON, "stage-create": True})
    assert staged.status == 200
    location = staged.json()["metadata"]["location"]
    assert Path(location, "metadata").is_dir() and staged.changes == []
    # still no table, and its directory is no namespace either
    assert not catalog.table_exists("db.s")
    assert catalog.list_tables("db") == [] and catalog.list_namespaces("db") == []
    elsewhere = tmp_path / "elsewhere"
    client("POST", "namespaces/db/tables", {"name": "o", "schema": SCHEMA_JSON,
                                             "stage-create": True, "location": str(elsewhere)})
    assert not elsewhere.exists()


# -- rename and register ---------------------------------------------------------------------


def test_rename_moves_a_sql_table_and_a_file_system_catalog_refuses(
        client: Client, catalog: Catalog) -> None:
    _create(client)
    _create(client, name="taken")
    client("POST", "namespaces", {"namespace": ["other"]})

    def rename(src: str, dst: list[str]) -> Response:
        return client("POST", "tables/rename", {
            "source": {"namespace": ["db"], "name": src},
            "destination": {"namespace": dst[:-1], "name": dst[-1]}})

    if isinstance(catalog, FileSystemCatalog):
        assert _error(rename("t", ["other", "t2"])) == (406, "UnsupportedOperationException")
        return
    assert _error(rename("t", ["db", "taken"])) == (409, "AlreadyExistsException")
    assert _error(rename("nope", ["db", "x"])) == (404, "NoSuchTableException")
    assert _error(rename("t", ["nowhere", "x"])) == (404, "NoSuchNamespaceException")
    before = _location(catalog, "db.t")
    r = rename("t", ["other", "t2"])
    assert r.status == 204 and r.changes[0].detail == {"to": "other.t2"}
    assert not catalog.table_exists("db.t") and _location(catalog, "other.t2") == before


def test_register_names_an_existing_metadata_file(client: Client, catalog: Catalog) -> None:
    location = _create(client).json()["metadata-location"]
    r = client("POST", "namespaces/db/register", {"name": "again", "metadata-location": location})
    assert r.status == 200, r.body
    assert r.json()["metadata"]["table-uuid"] == catalog.load_table("db.t").metadata.table_uuid
    assert r.changes[0].action == "register_table"
    assert _error(client("POST", "namespaces/db/register",
                         {"name": "again", "metadata-location": location})) == (
        409, "AlreadyExistsException")
    missing = client("POST", "namespaces/db/register",
                     {"name": "x", "metadata-location": location + ".missing"})
    assert _error(missing) == (400, "BadRequestException")
    assert _error(client("POST", "namespaces/db/register",
                         {"name": "y", "metadata-location": location, "overwrite": True})
                  )[0] == 406
    assert not catalog.table_exists("db.x") and not catalog.table_exists("db.y")


# -- transactions ----------------------------------------------------------------------------


def _change(ns: str, name: str, requirements: list[TableRequirement],
            updates: list[TableUpdate]) -> dict[str, Any]:
    return commit_request_to_json(requirements, updates, ((ns,), name))


def test_a_transaction_commits_tables_of_a_sql_catalog_together(
        sql_catalog: SqlCatalog) -> None:
    client = Client(RestServer(_lookup(sql_catalog)), sql_catalog.name)
    _create(client, name="a")
    _create(client, name="b")
    before = {n: _location(sql_catalog, f"db.{n}") for n in "ab"}
    both = {"table-changes": [_change("db", "a", [AssertCurrentSchemaId(0)],
                                      [SetProperties({"tx": "1"})]),
                              _change("db", "b", [], [SetProperties({"tx": "1"})])]}
    r = client("POST", "transactions/commit", both)
    assert r.status == 204, r.body
    assert {c.table for c in r.changes} == {"a", "b"}
    assert all(c.detail["transaction"] == 2 for c in r.changes)
    for n in "ab":
        assert sql_catalog.load_table(f"db.{n}").properties["tx"] == "1"
    # one failed requirement: neither table changes
    moved = {n: _location(sql_catalog, f"db.{n}") for n in "ab"}
    assert moved != before
    stale = {"table-changes": [_change("db", "a", [], [SetProperties({"tx": "2"})]),
                               _change("db", "b", [AssertCurrentSchemaId(9)],
                                       [SetProperties({"tx": "2"})])]}
    assert _error(client("POST", "transactions/commit", stale)) == (409, "CommitFailedException")
    assert {n: _location(sql_catalog, f"db.{n}") for n in "ab"} == moved
    # a table named twice, no identifier, a missing table
    twice = {"table-changes": [_change("db", "a", [], []), _change("db", "a", [], [])]}
    assert _error(client("POST", "transactions/commit", twice))[0] == 400
    anonymous = {"table-changes": [commit_request_to_json([], [])]}
    assert _error(client("POST", "transactions/commit", anonymous))[0] == 400
    ghost = {"table-changes": [_change("db", "a", [], [SetProperties({"tx": "3"})]),
                               _change("db", "ghost", [], [SetProperties({"tx": "3"})])]}
    assert _error(client("POST", "transactions/commit", ghost)) == (404, "NoSuchTableException")
    assert {n: _location(sql_catalog, f"db.{n}") for n in "ab"} == moved


def test_a_transaction_whose_second_table_moved_changes_neither_then_retries(
        sql_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pointer of one table moves between the server reading it and the database
    transaction: the transaction takes neither table, and the retry commits both."""
    client = Client(RestServer(_lookup(sql_catalog)), sql_catalog.name)
    _create(client, name="a")
    _create(client, name="b")
    original = sql_catalog.commit_tables
    attempts: list[dict[str, str]] = []

    def race(commits: Any) -> list[str]:
        attempts.append({c.ident.name: _location(sql_catalog, str(c.ident)) for c in commits})
        if len(attempts) == 1:
            with _second(sql_catalog) as other:
                other.load_table("db.b").set_properties({"other": "writer"})
        return original(commits)

    monkeypatch.setattr(sql_catalog, "commit_tables", race)
    body = {"table-changes": [_change("db", n, [], [SetProperties({"tx": "1"})]) for n in "ab"]}
    r = client("POST", "transactions/commit", body)
    assert r.status == 204, r.body
    assert len(attempts) == 2 and attempts[0]["a"] == attempts[1]["a"]  # a did not move
    b = sql_catalog.load_table("db.b").properties
    assert b["tx"] == "1" and b["other"] == "writer"


def test_a_file_system_catalog_takes_one_table_per_transaction(tmp_path: Path) -> None:
    catalog = FileSystemCatalog("fs", str(tmp_path))
    client = Client(RestServer(_lookup(catalog)), "fs")
    _create(client, name="a")
    _create(client, name="b")
    before = _location(catalog, "db.a")
    two = {"table-changes": [_change("db", n, [], [SetProperties({"tx": "1"})]) for n in "ab"]}
    r = client("POST", "transactions/commit", two)
    assert _error(r) == (406, "UnsupportedOperationException")
    assert "atomically" in r.json()["error"]["message"] and _location(catalog, "db.a") == before
    one = {"table-changes": [_change("db", "a", [AssertCurrentSchemaId(0)],
                                     [SetProperties({"tx": "1"})])]}
    assert client("POST", "transactions/commit", one).status == 204
    assert catalog.load_table("db.a").properties["tx"] == "1"


# -- idempotency -----------------------------------------------------------------------------


def test_an_idempotency_key_replays_the_answer_and_never_commits_twice(
        client: Client, catalog: Catalog) -> None:
    _create(client)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = commit_request_to_json([], [SetProperties({"n": "1"})])
    first = client("POST", "namespaces/db/tables/t", body, headers=key)
    log_length = len(catalog.load_table("db.t").metadata.metadata_log)
    again = client("POST", "namespaces/db/tables/t", body, headers=key)
    assert (again.status, again.body) == (first.status, first.body)
    assert again.replayed and again.changes == [] and first.changes
    assert len(catalog.load_table("db.t").metadata.metadata_log) == log_length
    other = client("POST", "namespaces/db/tables/t",
                   commit_request_to_json([], [SetProperties({"n": "2"})]), headers=key)
    assert _error(other) == (422, "UnprocessableEntityException")
    # the key is the user's: another user's request with it runs
    bob = client("POST", "namespaces/db/tables/t", body, headers=key, principal="bob")
    assert bob.status == 200 and not bob.replayed
    # a refusal is final too: replayed, not run again
    refused_key = {"Idempotency-Key": str(uuid.uuid4())}
    stale = commit_request_to_json([AssertCurrentSchemaId(5)], [SetProperties({"z": "1"})])
    assert client("POST", "namespaces/db/tables/t", stale, headers=refused_key).status == 409
    assert client("POST", "namespaces/db/tables/t", stale, headers=refused_key).replayed


# -- floe's own REST client through the core, over real HTTP ---------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "floe-test"
    core: RestServer

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        r = self.core.handle(Request(
            self.command, path, dict(urllib.parse.parse_qsl(query, keep_blank_values=True)),
            {k.lower(): v for k, v in self.headers.items()}, body, "test"))
        self.send_response(r.status)
        for k, v in r.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(r.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(r.body)

    do_GET = do_POST = do_DELETE = do_HEAD = _serve

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def served(sql_catalog: SqlCatalog) -> Iterator[str]:
    handler = type("H", (_Handler,), {"core": RestServer(_lookup(sql_catalog))})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _rows(start: int, n: int, note: bool = True) -> pa.Table:
    rows = pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": [f"c{i % 3}" for i in range(start, start + n)]})
    return rows.append_column("note", pa.array([f"n{start}"] * n)) if note else rows


def test_floes_rest_client_creates_appends_and_evolves_through_the_core(
        served: str, sql_catalog: SqlCatalog) -> None:
    remote = RestCatalog("remote", {"uri": served, "warehouse": sql_catalog.name,
                                    "header.X-Iceberg-Access-Delegation": ""})
    remote.create_namespace("db")
    table = remote.create_table("db.events", SCHEMA)
    table.append(_rows(0, 5, note=False))
    table.update_schema().add_column("note", STRING).commit()
    table.append(_rows(5, 5))
    local = sql_catalog.load_table("db.events")
    assert local.metadata_location == remote.load_table("db.events").metadata_location
    data = plan_to_table(local.io, plan_files(local.io, local.metadata))
    assert sorted(data.column("id").to_pylist()) == list(range(10))
    assert [f.name for f in local.schema().fields] == ["id", "cat", "note"]
    # another writer appends while the server commits: the server answers 409 (main moved)
    # and floe's commit loop retries on the fresh table
    with _second(sql_catalog) as other:
        racing = _Racing(sql_catalog, other, lambda t: t.append(_rows(10, 5)))
        sql_catalog.commit_updates = racing  # type: ignore[method-assign]
        tx = table.new_transaction().append(_rows(15, 5))
        tx.commit()
    assert racing.calls == 2 and tx.attempts == 2
    local = sql_catalog.load_table("db.events")
    data = plan_to_table(local.io, plan_files(local.io, local.metadata))
    assert sorted(data.column("id").to_pylist()) == list(range(20))
    remote.close()


def test_a_request_with_a_key_in_flight_waits_for_the_first_and_a_5xx_is_not_kept() -> None:
    from floe.rest_server import IdempotencyStore

    store = IdempotencyStore()
    started, release, runs = threading.Event(), threading.Event(), []

    def slow() -> Response:
        runs.append("slow")
        started.set()
        release.wait(10)
        return Response(200, b"first")

    def never() -> Response:
        raise AssertionError("must not run")

    def make(key: str, action: Callable[[], Response]) -> Callable[[], Response]:
        return lambda: store.run("p", key, "f", action, conflict=lambda: Response(422),
                                 replayed=lambda r: Response(r.status, r.body, replayed=True),
                                 running=lambda: Response(500, b"running"))

    answers: list[Response] = []
    first = threading.Thread(target=lambda: answers.append(make("k", slow)()))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: answers.append(make("k", never)()))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert runs == ["slow"] and sorted(a.body for a in answers) == [b"first", b"first"]
    assert [a.replayed for a in answers].count(True) == 1
    # a 5xx is not finalized: the same key runs again
    failing = [Response(503), Response(200, b"ok")]
    assert make("k2", lambda: failing.pop(0))().status == 503
    assert make("k2", lambda: failing.pop(0))().body == b"ok"
    # a first request still running after wait_s: the second is told, without running
    store.wait_s = 0.05
    hold = threading.Event()
    blocked = threading.Thread(target=make("k3", lambda: (hold.wait(10), Response(200))[1]))
    blocked.start()
    time.sleep(0.05)
    assert make("k3", never)().body == b"running"
    hold.set()
    blocked.join(10)
