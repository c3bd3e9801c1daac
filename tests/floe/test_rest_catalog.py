"""floe's REST catalog client (floe.catalog.rest) against the real SeaweedFS Iceberg REST
catalog of tests/object_store.py: configuration and prefix from /v1/config, OAuth2 client
credentials (and a bad secret), nested and paged namespaces, tables created, listed, loaded,
renamed, registered and dropped, every kind of change committed as requirements + updates and
read back by floe and by PyIceberg, conflicts retried, and faults put between floe and the
catalog by tests/faulty_proxy.py (a throttled read, a commit whose answer is lost, a commit
answered 503). Token renewal, vended storage credentials and a loadTable config go through a
small forwarding server in front of the catalog (real HTTP both ways; only the parts SeaweedFS
cannot give are added: short token lifetimes, the /credentials endpoint)."""

from __future__ import annotations

import http.client
import http.server
import json
import logging
import socketserver
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.base import (
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    TableAlreadyExists,
    TableIdentifier,
)
from floe.catalog.config import load_catalog, load_catalogs
from floe.catalog.rest import RestCatalog
from floe.errors import CatalogUnavailable, CommitConflict, CommitStateUnknown, NotFound
from floe.maintenance.compaction import compact
from floe.maintenance.expire import expire_snapshots
from floe.partitioning import parse_partition_by
from floe.scan import plan_files
from floe.scan.readers import plan_to_table
from floe.schema import Schema
from floe.table import Table
from floe.table.updates import AssertRefSnapshotId, SetProperties
from floe.types import LONG, STRING, NestedField
from tests.faulty_proxy import FaultyProxy
from tests.object_store import SeaweedFS, pyiceberg_rest_catalog, unique_name

pytestmark = pytest.mark.objectstore

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "cat": [f"c{i % 3}" for i in range(start, start + n)]})


def _catalog(server: SeaweedFS, uri: str | None = None, **props: str) -> RestCatalog:
    return RestCatalog("lake", {
        "uri": uri or server.catalog_uri, "warehouse": server.warehouse,
        "credential": f"{server.access_key}:{server.secret_key}",
        "rest.client.socket-timeout-ms": "10000", **server.s3_properties(), **props})


def _floe_rows(table: Table) -> list[tuple[int, str]]:
    table.refresh()
    data = plan_to_table(table.io, plan_files(table.io, table.metadata))
    return sorted(zip(data.column("id").to_pylist(), data.column("cat").to_pylist(),
                      strict=True))


def _pyiceberg_rows(server: SeaweedFS, ident: TableIdentifier) -> list[tuple[int, str]]:
    data = pyiceberg_rest_catalog(server).load_table(str(ident)).scan().to_arrow()
    return sorted(zip(data.column("id").to_pylist(), data.column("cat").to_pylist(),
                      strict=True))


@pytest.fixture
def ns(seaweedfs: SeaweedFS) -> Iterator[tuple[str]]:
    """A namespace of its own for the test."""
    name = (unique_name("ns"),)
    with _catalog(seaweedfs) as catalog:
        catalog.create_namespace(name)
    yield name


# -- configuration and authentication --------------------------------------------------------


def test_the_prefix_comes_from_the_config_and_the_token_from_the_credential(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    catalog = _catalog(seaweedfs)
    assert catalog.properties.get("prefix") is None  # nothing asked yet
    assert catalog.namespace_exists(ns)
    assert catalog.prefix == seaweedfs.table_bucket
    assert catalog.properties["warehouse"] == seaweedfs.warehouse
    # the same catalog reached with the prefix given and no warehouse
    direct = RestCatalog("lake", {"uri": seaweedfs.catalog_uri,
                                  "prefix": seaweedfs.table_bucket,
                                  "credential": f"{seaweedfs.access_key}:{seaweedfs.secret_key}"})
    assert ns in direct.list_namespaces()
    assert "SECRET" not in repr(catalog) and seaweedfs.catalog_uri in repr(catalog)
    catalog.close()  # its kept-alive connections; a later call opens new ones
    assert catalog.namespace_exists(ns)


def test_a_wrong_secret_is_one_line_naming_the_catalog_without_the_secret(
        seaweedfs: SeaweedFS, caplog: pytest.LogCaptureFixture) -> None:
    wrong = "not-the-SECRET-4f2a91"
    catalog = _catalog(seaweedfs, credential=f"{seaweedfs.access_key}:{wrong}")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CatalogUnavailable) as e:
        catalog.list_namespaces()
    text = str(e.value)
    assert "\n" not in text and "catalog 'lake'" in text and "OAuth2" in text
    assert "401" in text and "invalid_client" in text
    assert wrong not in text and wrong not in caplog.text and wrong not in repr(catalog)
    # no credential at all: the catalog refuses, and says to check the credentials
    anonymous = RestCatalog("anon", {"uri": seaweedfs.catalog_uri,
                                     "warehouse": seaweedfs.warehouse})
    with pytest.raises(CatalogUnavailable, match=r"catalog 'anon'.*403.*credential"):
        anonymous.list_namespaces()


def test_a_bearer_token_alone_works_until_it_is_refused(seaweedfs: SeaweedFS,
                                                        ns: tuple[str]) -> None:
    token = seaweedfs.catalog_token()
    catalog = RestCatalog("lake", {"uri": seaweedfs.catalog_uri,
                                   "warehouse": seaweedfs.warehouse, "token": token})
    assert catalog.namespace_exists(ns)
    broken = RestCatalog("lake", {"uri": seaweedfs.catalog_uri,
                                  "warehouse": seaweedfs.warehouse, "token": "x" + token})
    with pytest.raises(CatalogUnavailable) as e:
        broken.list_namespaces()
    assert "401" in str(e.value) and token not in str(e.value)


def test_a_rest_catalog_configured_in_the_toml_file(
        seaweedfs: SeaweedFS, ns: tuple[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEED_SECRET", seaweedfs.secret_key)
    path = tmp_path / "catalogs.toml"
    path.write_text(f"""
        [catalogs.weed]
        type = "rest"
        uri = "{seaweedfs.catalog_uri}"
        warehouse = "{seaweedfs.warehouse}"
        credential = "{seaweedfs.access_key}:${{WEED_SECRET}}"
        scope = "catalog"
        "rest-page-size" = "50"
        "header.X-Iceberg-Access-Delegation" = ""
        "s3.access-key-id" = "{seaweedfs.access_key}"
        "s3.secret-access-key" = "${{WEED_SECRET}}"

        [catalogs.typo]
        type = "rest"
        uri = "{seaweedfs.catalog_uri}"
        credentials = "x:y"
        """.replace("\n        ", "\n"))
    catalog = load_catalog("weed", path)
    assert isinstance(catalog, RestCatalog) and ns in catalog.list_namespaces()
    table = catalog.create_table((*ns, "t"), SCHEMA)
    table.append(_rows(0, 2))  # the endpoint came from the table's config
    assert table.io.properties["s3.endpoint"] == seaweedfs.endpoint
    assert seaweedfs.secret_key not in repr(load_catalogs(path)["weed"])
    problem = load_catalogs(path)["typo"].problem
    assert problem is not None and "unknown option 'credentials'" in problem


# -- namespaces ------------------------------------------------------------------------------


def test_nested_namespaces_and_paged_listings(seaweedfs: SeaweedFS) -> None:
    top = unique_name("nest")
    with FaultyProxy(seaweedfs.catalog_uri) as proxy:
        catalog = _catalog(seaweedfs, uri=proxy.url, **{"rest-page-size": "2"})
        catalog.create_namespace((top,), {"owner": "floe"})
        for child in ("a", "b", "c", "d", "e"):
            catalog.create_namespace((top, child))
        catalog.create_namespace((top, "a", "deep"))
        assert (top,) in catalog.list_namespaces()
        proxy.state.seen.clear()
        assert catalog.list_namespaces((top,)) == [(top, c) for c in "abcde"]
        pages = [p for m, p, _ in proxy.requests("GET") if "/namespaces?" in p]
        assert len(pages) >= 3 and all("pageSize=2" in p for p in pages)
        assert any("pageToken=" in p for p in pages)
        assert catalog.list_namespaces(f"{top}.a") == [(top, "a", "deep")]
        assert any(f"parent={top}%1Fa" in p for _, p, _ in proxy.requests("GET"))
        # levels joined by %1F in paths
        assert catalog.namespace_exists((top, "a", "deep"))
        assert any(f"/namespaces/{top}%1Fa%1Fdeep" in p for _, p, _ in proxy.requests("HEAD"))
    catalog = _catalog(seaweedfs)
    assert not catalog.namespace_exists((top, "zz"))
    assert catalog.load_namespace_properties((top,))["owner"] == "floe"
    assert catalog.update_namespace_properties((top,), ["owner"], {"team": "lake"}) == {
        "removed": ["owner"], "updated": ["team"], "missing": []}
    props = catalog.load_namespace_properties((top,))
    assert props["team"] == "lake" and "owner" not in props
    with pytest.raises(NamespaceAlreadyExists, match=f"namespace {top}"):
        catalog.create_namespace((top,))
    catalog.create_table((top, "a", "t"), SCHEMA)
    with pytest.raises(NamespaceNotEmpty, match=f"namespace {top}.a is not empty"):
        catalog.drop_namespace((top, "a"))
    catalog.drop_table((top, "a", "t"))
    catalog.drop_namespace((top, "a", "deep"))
    catalog.drop_namespace((top, "a"))
    assert (top, "a") not in catalog.list_namespaces((top,))
    with pytest.raises(NotFound, match=f"namespace {top}.a does not exist"):
        catalog.drop_namespace((top, "a"))
    with pytest.raises(NotFound, match=f"namespace {top}.zz does not exist"):
        catalog.load_namespace_properties((top, "zz"))


# -- tables ----------------------------------------------------------------------------------


def test_tables_are_created_listed_loaded_renamed_registered_and_dropped(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    catalog = _catalog(seaweedfs, **{"rest-page-size": "2"})
    n = ns[0]
    created = catalog.create_table(f"{n}.t", SCHEMA, parse_partition_by("cat", SCHEMA),
                                   properties={"owner": "floe"}, format_version=2)
    assert created.location.startswith(seaweedfs.warehouse)
    assert created.spec().fields[0].name == "cat" and created.properties["owner"] == "floe"
    assert created.format_version == 2
    with pytest.raises(TableAlreadyExists, match=f"table {n}.t already exists"):
        catalog.create_table(f"{n}.t", SCHEMA)
    for name in ("u", "v", "w"):
        catalog.create_table(f"{n}.{name}", SCHEMA)
    assert [i.name for i in catalog.list_tables(ns)] == ["t", "u", "v", "w"]  # 2 pages
    assert catalog.table_exists(f"{n}.t") and not catalog.table_exists(f"{n}.nope")
    with pytest.raises(NotFound, match=f"table {n}.nope does not exist"):
        catalog.load_table(f"{n}.nope")

    created.append(_rows(0, 10))
    rows = _floe_rows(created)
    renamed = catalog.rename_table(f"{n}.t", f"{n}.t2")
    assert renamed.identifier == TableIdentifier(ns, "t2")
    assert not catalog.table_exists(f"{n}.t") and _floe_rows(renamed) == rows
    with pytest.raises(NotFound, match=f"table {n}.t does not exist"):
        created.refresh()
    registered = catalog.register_table(f"{n}.again", renamed.metadata_location)
    assert registered.metadata.table_uuid == renamed.metadata.table_uuid
    assert _floe_rows(registered) == sorted((i, f"c{i % 3}") for i in range(10))
    with pytest.raises(TableAlreadyExists, match=f"table {n}.u already exists"):
        catalog.register_table(f"{n}.u", renamed.metadata_location)

    catalog.drop_table(f"{n}.again")
    assert not catalog.table_exists(f"{n}.again")
    with pytest.raises(NotFound, match=f"table {n}.again does not exist"):
        catalog.drop_table(f"{n}.again")
    catalog.drop_table(f"{n}.t2", purge=True)
    assert [i.name for i in catalog.list_tables(ns)] == ["u", "v", "w"]


def test_a_table_changed_through_rest_reads_the_same_in_floe_and_pyiceberg(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    catalog = _catalog(seaweedfs)
    ident = TableIdentifier(ns, "events")
    table = catalog.create_table(ident, SCHEMA, parse_partition_by("cat", SCHEMA),
                                 properties={"write.delete.mode": "merge-on-read"})
    for k in range(4):
        table.append(_rows(10 * k, 10))
    expected = sorted((i, f"c{i % 3}") for i in range(40))
    assert _floe_rows(table) == _pyiceberg_rows(seaweedfs, ident) == expected

    table.delete_where("id < 5")  # merge-on-read: position deletes
    current = table.current_snapshot()
    assert current is not None and int(current.summary["added-position-deletes"]) == 5
    expected = [r for r in expected if r[0] >= 5]
    assert _floe_rows(table) == _pyiceberg_rows(seaweedfs, ident) == expected

    table.update_schema().add_column("note", STRING).commit()
    table.update_spec().add_field("bucket(4, id)").commit()
    table.append(pa.table({"id": pa.array([100, 101], pa.int64()), "cat": ["c1", "c2"],
                           "note": ["x", None]}))
    expected = sorted([*expected, (100, "c1"), (101, "c2")])
    assert [f.name for f in table.schema().fields] == ["id", "cat", "note"]
    assert len(table.metadata.partition_specs) == 2
    theirs = pyiceberg_rest_catalog(seaweedfs).load_table(str(ident))
    assert [f.name for f in theirs.schema().fields] == ["id", "cat", "note"]
    assert theirs.spec().spec_id == table.spec().spec_id == 1
    assert _floe_rows(table) == _pyiceberg_rows(seaweedfs, ident) == expected

    result = compact(table, options={"min-input-files": "2"})
    assert result.rewritten_data_files_count > 1
    assert _floe_rows(table) == _pyiceberg_rows(seaweedfs, ident) == expected

    before = {s.snapshot_id for s in table.refresh().snapshots()}
    expired = expire_snapshots(table, older_than_ms=table.metadata.last_updated_ms + 1,
                               retain_last=1)
    assert expired.expired_snapshot_ids and expired.failed == ()
    left = {s.snapshot_id for s in table.refresh().snapshots()}
    assert len(left) == 1 and left < before
    theirs = pyiceberg_rest_catalog(seaweedfs).load_table(str(ident))
    assert {s.snapshot_id for s in theirs.snapshots()} == left
    assert _floe_rows(table) == _pyiceberg_rows(seaweedfs, ident) == expected
    assert expired.deleted_files > 0 and not table.io.exists(expired.files()[0])


def test_a_table_written_by_pyiceberg_is_read_and_changed_by_floe(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    theirs = pyiceberg_rest_catalog(seaweedfs)
    ident = TableIdentifier(ns, "from_pyiceberg")
    pt = theirs.create_table(str(ident), schema=_rows(0, 1).schema)
    pt.append(_rows(0, 6))
    catalog = _catalog(seaweedfs)
    table = catalog.load_table(ident)
    assert _floe_rows(table) == sorted((i, f"c{i % 3}") for i in range(6))
    table.append(_rows(6, 4))
    assert _pyiceberg_rows(seaweedfs, ident) == sorted((i, f"c{i % 3}") for i in range(10))


# -- commits ---------------------------------------------------------------------------------


def test_a_failed_requirement_is_a_conflict_and_the_commit_loop_retries(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    catalog = _catalog(seaweedfs)
    ident = TableIdentifier(ns, "raced")
    table = catalog.create_table(ident, SCHEMA)
    table.append(_rows(0, 3))
    # the server checks the requirement against its own state: 409, nothing changes
    with pytest.raises(CommitConflict, match=r"raced: the commit conflicts \(409"):
        catalog.commit_updates(ident, table.metadata_location, table.metadata,
                               [AssertRefSnapshotId("main", 12345)], [SetProperties({"x": "1"})])
    assert "x" not in catalog.load_table(ident).properties

    # another writer commits after floe refreshed and before its commit reaches the catalog:
    # the first attempt is refused (main moved), the loop refreshes and commits on top
    other = _catalog(seaweedfs)

    def another_writer_first(method: str, path: str) -> None:
        if method == "POST" and path.endswith("/tables/raced") and not raced:
            raced.append(path)
            other.load_table(ident).append(_rows(3, 3))

    raced: list[str] = []
    forwarder = _Forwarder(seaweedfs.catalog_uri, answer=lambda m, p: another_writer_first(m, p))
    try:
        txn = _catalog(seaweedfs, uri=forwarder.url).load_table(ident).new_transaction()
        txn.append(_rows(6, 3))
        txn.commit()
    finally:
        forwarder.close()
    assert raced and txn.attempts == 2
    assert [s for m, p, s in forwarder.seen if p.endswith("/tables/raced")
            and m == "POST"] == [409, 200]
    final = catalog.load_table(ident)
    assert _floe_rows(final) == sorted((i, f"c{i % 3}") for i in range(9))
    snapshot = final.current_snapshot()
    assert snapshot is not None
    assert len(list(final.metadata.ancestors_of(snapshot.snapshot_id))) == 3


# -- faults between floe and the catalog -----------------------------------------------------


def test_a_throttled_read_is_asked_again(seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    with FaultyProxy(seaweedfs.catalog_uri) as proxy:
        catalog = _catalog(seaweedfs, uri=proxy.url)
        catalog.create_table(f"{ns[0]}.t", SCHEMA)
        proxy.throttle(2, method="GET")
        assert catalog.load_table(f"{ns[0]}.t").schema().column_names() == ["id", "cat"]
        statuses = [s for m, p, s in proxy.requests("GET") if p.endswith("/tables/t?snapshots=all")]
        assert statuses == [503, 503, 200]


def _data_files(table: Table) -> list[str]:
    return [f for f in table.io.list(f"{table.location}/data") if f.endswith(".parquet")]


def test_a_commit_whose_answer_is_lost_is_unknown_deletes_nothing_and_is_found_on_refresh(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    with FaultyProxy(seaweedfs.catalog_uri) as proxy:
        catalog = _catalog(seaweedfs, uri=proxy.url)
        table = catalog.create_table(f"{ns[0]}.t", SCHEMA)
        table.append(_rows(0, 5))
        proxy.lose_answer(method="POST", path_contains="/tables/t")
        proxy.state.seen.clear()
        with pytest.raises(CommitStateUnknown) as e:
            table.append(_rows(5, 5))
        assert "refresh the table" in str(e.value) and "\n" not in str(e.value)
        assert [s for m, p, s in proxy.requests("POST") if p.endswith("/tables/t")] == [200]
    files = _data_files(table)
    assert len(files) == 2  # the second append's data file was kept
    again = _catalog(seaweedfs).load_table(f"{ns[0]}.t")  # the re-run sees the new state
    assert _floe_rows(again) == sorted((i, f"c{i % 3}") for i in range(10))
    assert len(again.snapshots()) == 2


def test_a_commit_answered_5xx_is_unknown_deletes_nothing_and_the_next_commit_goes_through(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    with FaultyProxy(seaweedfs.catalog_uri) as proxy:
        catalog = _catalog(seaweedfs, uri=proxy.url)
        table = catalog.create_table(f"{ns[0]}.t", SCHEMA)
        table.append(_rows(0, 5))
        proxy.throttle(1, method="POST", path_contains="/tables/t")
        with pytest.raises(CommitStateUnknown, match=r"may or may not have happened.*503"):
            table.append(_rows(5, 5))
        assert len(_data_files(table)) == 2  # kept: the outcome was unknown
        assert _floe_rows(catalog.load_table(f"{ns[0]}.t")) == \
            sorted((i, f"c{i % 3}") for i in range(5))  # (the 503 came from the proxy)
        table.refresh().append(_rows(10, 2))
    assert _floe_rows(_catalog(seaweedfs).load_table(f"{ns[0]}.t")) == sorted(
        (i, f"c{i % 3}") for i in [*range(5), 10, 11])


# -- a forwarding server for what SeaweedFS does not do ---------------------------------------


@dataclass
class _Forwarder:
    """A loopback HTTP server that forwards every request to ``target`` and lets the test
    change an answer (``rewrite(method, path, status, doc) -> (status, doc)``) or give one
    itself (``answer(method, path) -> (status, doc) | None``)."""

    target: str
    rewrite: Callable[[str, str, int, Any], tuple[int, Any]] = lambda m, p, s, d: (s, d)
    answer: Callable[[str, str], tuple[int, Any] | None] = lambda m, p: None
    seen: list[tuple[str, str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.target)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                given = outer.answer(self.command, self.path)
                if given is None:
                    conn = http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                      timeout=30)
                    conn.request(self.command, self.path, body=body,
                                 headers={k: v for k, v in self.headers.items()
                                          if k.lower() != "connection"})
                    response = conn.getresponse()
                    raw = response.read()
                    conn.close()
                    try:
                        doc = json.loads(raw) if raw else None
                    except ValueError:
                        doc = raw.decode()
                    status, doc = outer.rewrite(self.command, self.path, response.status, doc)
                else:
                    status, doc = given
                data = json.dumps(doc).encode() if doc is not None else b""
                outer.seen.append((self.command, self.path, status))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_HEAD = _any

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def count(self, path_part: str) -> int:
        return sum(1 for _, p, _ in self.seen if path_part in p)


def test_a_catalog_that_does_not_answer_in_time_gives_up_reads_and_commits_are_unknown(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    slow: set[str] = set()

    def late(method: str, path: str) -> None:
        if method in slow:
            time.sleep(1.5)  # then forwarded: the request is done, its answer comes too late
        return None

    forwarder = _Forwarder(seaweedfs.catalog_uri, answer=late)
    try:
        catalog = _catalog(seaweedfs, uri=forwarder.url, **{
            "rest.client.socket-timeout-ms": "500", "rest.client.max-retries": "1"})
        table = catalog.create_table(f"{ns[0]}.t", SCHEMA)
        table.append(_rows(0, 2))
        slow.add("GET")
        started = time.monotonic()
        with pytest.raises(CatalogUnavailable, match=r"loading table .*\.t: no answer after 2 "
                                                     r"attempts \(TimeoutError"):
            catalog.load_table(f"{ns[0]}.t")
        assert time.monotonic() - started < 3  # two timeouts of 0.5 s and a backoff
        slow.clear()
        table.refresh()
        slow.add("POST")
        with pytest.raises(CommitStateUnknown, match="answer was lost.*refresh the table"):
            table.append(_rows(2, 2))
        slow.clear()
        time.sleep(1.5)  # the forwarder delivers the commit
        assert _floe_rows(table) == sorted((i, f"c{i % 3}") for i in range(4))
        assert len(_data_files(table)) == 2
    finally:
        forwarder.close()


def test_a_token_is_renewed_before_it_expires_and_once_when_refused(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    issued: list[str] = []

    def short_lived(method: str, path: str, status: int, doc: Any) -> tuple[int, Any]:
        if path.startswith("/v1/oauth/tokens") and status == 200:
            issued.append(doc["access_token"])
            # the first token is one the catalog will refuse; all live for 2 seconds
            doc = {**doc, "expires_in": 2,
                   "access_token": "expired" if len(issued) == 1 else doc["access_token"]}
        return status, doc

    forwarder = _Forwarder(seaweedfs.catalog_uri, rewrite=short_lived)
    try:
        catalog = _catalog(seaweedfs, **{"oauth2-server-uri":
                                         f"{forwarder.url}/v1/oauth/tokens"})
        assert catalog.namespace_exists(ns)  # 401 with the first token, renewed, asked again
        assert len(issued) == 2
        assert catalog.namespace_exists(ns)  # the second token is still fresh
        assert len(issued) == 2
        time.sleep(1.9)  # in the last tenth of its life: renewed before it is used
        assert catalog.namespace_exists(ns)
        assert len(issued) == 3
    finally:
        forwarder.close()
    assert forwarder.count("/v1/oauth/tokens") == 3


def test_the_load_config_and_vended_credentials_configure_the_tables_fileio(
        seaweedfs: SeaweedFS, ns: tuple[str]) -> None:
    _catalog(seaweedfs).create_table(f"{ns[0]}.t", SCHEMA).append(_rows(0, 4))
    keys = {"s3.access-key-id": seaweedfs.access_key,
            "s3.secret-access-key": seaweedfs.secret_key}
    # the catalog's own storage properties name no endpoint: loadTable's config (asked for
    # with no access delegation) gives it, with region and path style
    plain = _catalog(seaweedfs, **{"s3.endpoint": "http://127.0.0.1:9", "s3.region": "",
                                   "header.X-Iceberg-Access-Delegation": ""})
    table = plain.load_table(f"{ns[0]}.t")
    assert table.io.properties["s3.endpoint"] == seaweedfs.endpoint
    assert _floe_rows(table) == sorted((i, f"c{i % 3}") for i in range(4))

    # no keys anywhere in the catalog's properties: /v1/config advertises /credentials and
    # the server vends the keys for the table bucket (the longest matching prefix wins)
    def with_endpoints(method: str, path: str, status: int, doc: Any) -> tuple[int, Any]:
        if path.startswith("/v1/config") and status == 200:
            doc = {**doc, "endpoints": [
                "GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}/tables"
                "/{table}", "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"]}
        return status, doc

    def credentials(method: str, path: str) -> tuple[int, Any] | None:
        if path.endswith("/credentials"):
            return 200, {"storage-credentials": [
                {"prefix": "s3://", "config": {"s3.access-key-id": "wrong",
                                               "s3.secret-access-key": "wrong"}},
                {"prefix": seaweedfs.warehouse, "config": keys}]}
        return None

    forwarder = _Forwarder(seaweedfs.catalog_uri, rewrite=with_endpoints, answer=credentials)
    try:
        vended = RestCatalog("lake", {
            "uri": forwarder.url, "warehouse": seaweedfs.warehouse,
            "credential": f"{seaweedfs.access_key}:{seaweedfs.secret_key}",
            "s3.endpoint": seaweedfs.endpoint, "s3.path-style-access": "true"})
        table = vended.load_table(f"{ns[0]}.t")
        assert forwarder.count("/credentials") == 1
        assert table.io.properties["s3.access-key-id"] == seaweedfs.access_key
        assert "s3.access-key-id" not in vended.io.properties
        assert _floe_rows(table) == sorted((i, f"c{i % 3}") for i in range(4))
    finally:
        forwarder.close()


@pytest.mark.parametrize("service", ["s3", "execute-api"])
def test_requests_signed_with_sigv4_pass_the_catalogs_check(seaweedfs: SeaweedFS,
                                                            ns: tuple[str], service: str) -> None:
    """Reads and writes: floe signs the body's hash too (PyIceberg's signed POSTs are refused
    by SeaweedFS, see tests/object_store.py)."""
    signed = RestCatalog("lake", {"uri": seaweedfs.catalog_uri,
                                  "warehouse": seaweedfs.warehouse,
                                  "rest.sigv4-enabled": "true", "rest.signing-name": service,
                                  **seaweedfs.s3_properties()})
    assert ns in signed.list_namespaces()
    nested = (*ns, f"signed_{service.replace('-', '_')}")
    signed.create_namespace(nested)
    assert signed.load_namespace_properties(nested)["location"].startswith(seaweedfs.warehouse)
    table = signed.create_table((*nested, "t"), SCHEMA)
    table.append(_rows(0, 3))
    assert _floe_rows(signed.load_table((*nested, "t"))) == [(0, "c0"), (1, "c1"), (2, "c2")]
    wrong = RestCatalog("lake", {"uri": seaweedfs.catalog_uri, "warehouse": seaweedfs.warehouse,
                                 "rest.sigv4-enabled": "true", "rest.signing-name": "s3",
                                 **seaweedfs.s3_properties(),
                                 "s3.secret-access-key": "wrong-SECRET-77"})
    with pytest.raises(CatalogUnavailable) as e:
        wrong.list_namespaces()
    assert "403" in str(e.value) and "wrong-SECRET-77" not in str(e.value)
