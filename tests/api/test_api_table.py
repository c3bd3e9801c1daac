"""One table's API over a real floe-written table: every response matches the OpenAPI
schema, the numbers are floe.inspect's / floe.diff's, bad input is 400/404."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from jsonschema import Draft7Validator
from rest_framework.test import APIClient

from explorer.tables import details
from floe import inspect
from floe.io import FileIO
from floe.manifest import read_manifest_list
from tests.factories import HistoryTable
from tests.factories import history_metadata as _md

pytestmark = pytest.mark.django_db

T = "/api/catalogs/local/namespaces/shop/tables/orders/"


@pytest.fixture
def api() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("ada"))
    return client


@pytest.fixture
def openapi(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 'nullable' is not JSON Schema: turn it into a null alternative."""
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _assert_matches(openapi: dict[str, Any], url: str, status: int, body: Any) -> None:
    path = url.split("?")[0]
    operation = None
    for template, item in openapi["paths"].items():
        if re.match("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$", path) and "get" in item:
            operation = item["get"]
            break
    assert operation is not None, f"GET {path} is not in the schema"
    assert str(status) in operation["responses"], f"GET {url}: status {status} is not documented"
    schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
    root = {**_to_json_schema(schema), "components": _to_json_schema(openapi["components"])}
    errors = sorted(Draft7Validator(root).iter_errors(body), key=str)
    assert not errors, f"GET {url}: {errors[0].message} at {list(errors[0].path)}"


def _urls(history: HistoryTable) -> list[str]:
    first, last = history.snapshot_ids[0], history.snapshot_ids[-1]
    return [
        T, T + "snapshots/", T + "snapshots/?page_size=2&page=2", T + f"snapshots/{last}/",
        T + f"snapshots/{last}/manifests/", T + f"snapshots/{last}/files/",
        T + f"snapshots/{last}/files/?page_size=4&page=2", T + "refs/", T + "history/",
        T + f"diff/?from={first}&to={last}",
    ]


def test_every_response_matches_the_schema(api: APIClient, openapi: dict[str, Any], history: HistoryTable) -> None:
    for url in _urls(history):
        response = api.get(url)
        assert response.status_code == 200, (url, response.content[:500])
        _assert_matches(openapi, url, 200, response.json())


def test_the_schema_keeps_the_resource_paths_of_the_architecture(openapi: dict[str, Any]) -> None:
    base = "/api/catalogs/{catalog}/namespaces/{ns}/tables/{table}/"
    assert {base, base + "snapshots/", base + "snapshots/{snapshot_id}/",
            base + "snapshots/{snapshot_id}/manifests/", base + "snapshots/{snapshot_id}/files/",
            base + "refs/", base + "history/", base + "diff/"} <= set(openapi["paths"])


def test_detail_is_the_table_row_plus_describe_and_health(api: APIClient, history: HistoryTable) -> None:
    md = _md(history)
    body = api.get(T).json()
    described = inspect.describe(md)
    assert body["table_uuid"] == described["table_uuid"]
    assert body["current_snapshot_id"] == md.current_snapshot_id
    assert body["records"] == int(md.current_snapshot().summary["total-records"])  # type: ignore[union-attr]
    assert [s["spec_id"] for s in body["partition_specs"]] == [0, 1]
    assert {m["key"] for m in body["health"]} >= {"small_file_ratio", "snapshots_not_expired"}


def test_snapshots_are_inspects_rows_newest_first(api: APIClient, history: HistoryTable) -> None:
    md = _md(history)
    body = api.get(T + "snapshots/?page_size=100").json()
    expected = list(reversed(inspect.snapshot_rows(md)))
    assert body["count"] == len(expected)
    for got, row in zip(body["results"], expected, strict=True):
        assert {k: got[k] for k in row} == row


def test_manifests_and_files_are_inspects_rows(api: APIClient, history: HistoryTable) -> None:
    md = _md(history)
    io = FileIO()
    for sid in history.snapshot_ids:
        snap = md.snapshot_by_id(sid)
        assert api.get(T + f"snapshots/{sid}/manifests/").json() == inspect.manifest_rows(io, md, snap)
        files = inspect.file_rows(io, md, snap)
        pages = []
        body = api.get(T + f"snapshots/{sid}/files/?page_size=4").json()
        assert body["count"] == len(files)
        while True:
            pages += body["results"]
            if not body["next"]:
                break
            body = api.get(body["next"]).json()
        assert pages == files


def test_a_files_page_reads_only_the_manifests_it_shows(api: APIClient, history: HistoryTable, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    md = _md(history)
    sid = history.snapshot_ids[-1]
    manifests = read_manifest_list(FileIO(), md.snapshot_by_id(sid).manifest_list)  # type: ignore[union-attr, arg-type]
    read: list[str] = []
    real = details.read_entries
    monkeypatch.setattr(details, "read_entries", lambda io, m, **kw: read.append(m.manifest_path) or real(io, m, **kw))
    api.get(T + f"snapshots/{sid}/files/?page_size=1")
    assert read == [manifests[0].manifest_path]
    assert len(manifests) > 1


def test_refs_history_and_diff(api: APIClient, history: HistoryTable) -> None:
    md = _md(history)
    io = FileIO()
    refs = {r["name"]: r for r in api.get(T + "refs/").json()}
    assert refs["audit"]["type"] == "tag" and refs["audit"]["snapshot_id"] == history.snapshot_ids[1]
    assert refs["dev"]["snapshot_id"] == history.snapshot_ids[2]
    h = api.get(T + "history/").json()
    newest_first = [e.snapshot_id for e in reversed(md.snapshot_log)]
    assert [e["snapshot_id"] for e in h["snapshot_log"]] == newest_first
    assert h["snapshot_log_count"] == len(newest_first) and h["next"] is None
    # the snapshot log is paged like the snapshot list (a table keeps thousands of entries)
    pages, url = [], T + "history/?page_size=2"
    while url:
        got = api.get(url).json()
        assert got["snapshot_log_count"] == len(newest_first) and len(got["snapshot_log"]) <= 2
        assert got["metadata_log"] == h["metadata_log"] and got["schemas"] == h["schemas"]
        pages.append([e["snapshot_id"] for e in got["snapshot_log"]])
        url = got["next"]
    assert len(pages) == (len(newest_first) + 1) // 2 > 1
    assert [sid for page in pages for sid in page] == newest_first
    last = api.get(T + "history/?page_size=2&page=99")
    assert last.status_code == 400 and "page 99 does not exist" in last.json()["detail"]
    assert {c["change"] for c in h["schemas"][0]["changes"]} == {"renamed", "promoted", "dropped", "added"}
    a, b = history.snapshot_ids[0], history.snapshot_ids[-1]
    diff = api.get(T + f"diff/?from={a}&to={b}").json()
    before = {r["file_path"] for r in inspect.file_rows(io, md, md.snapshot_by_id(a))}
    after = {r["file_path"] for r in inspect.file_rows(io, md, md.snapshot_by_id(b))}
    assert {f["file_path"] for f in diff["added_files"]} == after - before
    assert {f["file_path"] for f in diff["removed_files"]} == before - after


@pytest.mark.parametrize(
    ("url", "status", "needle"),
    [
        ("/api/catalogs/nope/namespaces/shop/tables/orders/", 404, "catalog"),
        ("/api/catalogs/local/namespaces/nope/tables/orders/snapshots/", 404, "namespace"),
        ("/api/catalogs/local/namespaces/shop/tables/nope/history/", 404, "table shop.nope"),
        (T + "snapshots/42/", 404, "snapshot 42 does not exist"),
        (T + "snapshots/42/files/", 404, "snapshot 42 does not exist"),
        (T + "diff/?from=1", 400, "to"),
        (T + "diff/?from=x&to=1", 400, "from"),
        (T + "diff/?from=1&to=2", 404, "snapshot 1 does not exist"),
        ("/api/catalogs/local/namespaces/shop/tables/..orders/", 400, "invalid table name"),
    ],
)
def test_bad_input(api: APIClient, history: HistoryTable, url: str, status: int, needle: str) -> None:
    response = api.get(url)
    assert response.status_code == status, response.content
    assert needle in response.content.decode()
