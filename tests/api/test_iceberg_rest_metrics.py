"""Metrics reports posted to the Iceberg REST catalog the site serves (``POST
/iceberg/v1/{prefix}/namespaces/{ns}/tables/{t}/metrics``) over a live server, as Iceberg
Java's RESTMetricsReporter posts them: stored with the user and the engine (from the client's
headers and the report's metadata), bounded per table, listed by the table's API endpoint
(``/api/.../tables/{t}/reports/``) for viewers; malformed reports 400 and unknown tables 404
in the error model, storing nothing; a user without a role 403. Reports Floe's own planning
makes go through :func:`explorer.rest.services.record_report` as well."""

from __future__ import annotations

import copy
import http.client
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from explorer.models import CatalogGrant, EngineReport
from explorer.rest import services as services_rest
from floe.rest_server import Access, BadRequest, Operation
from tests.floe.test_rest_server_metrics import commit_report, scan_report

pytestmark = pytest.mark.django_db(transaction=True)

JAVA = {"User-Agent": "Java/17.0.12", "X-Client-Version": "Apache Iceberg 1.10.2 (commit "
        "abc)", "X-Client-Git-Commit-Short": "abc", "Content-Type": "application/json"}
PATH = "/v1/local/namespaces/sales/tables/orders/metrics"


def _token(name: str, role: str | None) -> str:
    user = User.objects.create_user(name)
    if role is not None:
        CatalogGrant.objects.create(user=user, catalog="local", role=role)
    return str(Token.objects.create(user=user).key)


def _post(server: Any, path: str, body: Any, token: str | None,
          headers: dict[str, str] | None = None) -> tuple[int, Any]:
    parsed = urllib.parse.urlsplit(str(server.url))
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("POST", "/iceberg" + path, body=data, headers={**(headers or JAVA),
                                                                      **auth})
        answer = conn.getresponse()
        raw = answer.read()
        return answer.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def _error(doc: Any) -> str:
    assert set(doc["error"]) == {"message", "type", "code"} and doc["error"]["message"]
    return str(doc["error"]["type"])


def test_reports_are_stored_with_the_user_and_engine_and_listed(
        live_server: Any, warehouse: Path, settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    vic = _token("vic", "viewer")
    assert _post(live_server, PATH, scan_report(), vic) == (204, None)
    assert _post(live_server, PATH, commit_report(), vic) == (204, None)
    scan = EngineReport.objects.get(report_type="scan-report")
    assert (scan.catalog, scan.namespace, scan.table, scan.actor_name, scan.source) == (
        "local", "sales", "orders", "vic", "client")
    assert scan.engine.startswith("spark 3.5.3 · Apache Iceberg 1.10.2")
    assert "Java/17" in scan.engine
    assert (scan.snapshot_id, scan.result_data_files, scan.skipped_data_files,
            scan.scanned_data_manifests, scan.skipped_data_manifests,
            scan.total_data_manifests, scan.total_file_size_bytes) == (42, 3, 5, 2, 2, 4, 4096)
    assert scan.planning_ms == pytest.approx(2644.235116)
    assert scan.filter_text == "id > (2-digit-int) AND cat IS NOT NULL"
    assert scan.projected_fields == ["id", "cat"] and scan.raw == scan_report()
    commit = EngineReport.objects.get(report_type="commit-report")
    assert (commit.operation, commit.sequence_number, commit.attempts, commit.added_records,
            commit.added_data_files, commit.commit_ms) == ("append", 2, 1, 10, 2, 120.0)

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {vic}")
    base = "/api/catalogs/local/namespaces/sales/tables/orders/reports/"
    doc = api.get(base).json()
    assert doc["count"] == 2
    assert [r["type"] for r in doc["results"]] == ["commit", "scan"]  # newest first
    row = doc["results"][1]
    assert (row["user"], row["scanned_data_files"], row["skipped_data_files"],
            row["filter_text"]) == ("vic", 3, 5, "id > (2-digit-int) AND cat IS NOT NULL")
    assert [r["type"] for r in api.get(base + "?type=scan").json()["results"]] == ["scan"]
    assert api.get(base + "?type=plan").status_code == 400
    assert api.get("/api/catalogs/local/namespaces/sales/tables/nope/reports/"
                   ).status_code == 404
    outsider = APIClient()
    outsider.credentials(HTTP_AUTHORIZATION=f"Token {_token('eve', None)}")
    assert outsider.get(base).status_code == 403


def test_a_user_without_a_role_is_refused_and_nothing_is_stored(
        live_server: Any, warehouse: Path, settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    status, doc = _post(live_server, PATH, scan_report(), _token("eve", None))
    assert (status, _error(doc)) == (403, "ForbiddenException")
    status, doc = _post(live_server, PATH, scan_report(), None)
    assert (status, _error(doc)) == (401, "NotAuthorizedException")
    assert not EngineReport.objects.exists()


@pytest.mark.parametrize(("path", "body", "status", "kind"), [
    (PATH, b"{not json", 400, "BadRequestException"),
    (PATH, {"report-type": "scan-report", "table-name": "t"}, 400, "BadRequestException"),
    (PATH, scan_report(**{"report-type": "plan-report"}), 400, "BadRequestException"),
    (PATH.replace("orders", "nope"), scan_report(), 404, "NoSuchTableException"),
    (PATH.replace("sales", "nope"), scan_report(), 404, "NoSuchNamespaceException"),
])
def test_a_bad_report_is_refused_in_the_error_model_and_nothing_is_stored(
        live_server: Any, warehouse: Path, path: str, body: Any, status: int,
        kind: str) -> None:
    got, doc = _post(live_server, path, body, _token("vic", "viewer"))
    assert (got, _error(doc)) == (status, kind)
    assert not EngineReport.objects.exists()


def test_a_chatty_engine_keeps_only_the_newest_reports_per_table_and_type(
        live_server: Any, warehouse: Path, settings: Any) -> None:
    settings.FLOE_ICEBERG_REPORTS_PER_TABLE = 3
    vic = _token("vic", "viewer")
    for snapshot in range(6):
        assert _post(live_server, PATH, scan_report(**{"snapshot-id": snapshot}), vic)[0] == 204
    assert _post(live_server, PATH, commit_report(), vic)[0] == 204
    other = PATH.replace("orders", "refunds")
    assert _post(live_server, other, scan_report(), vic)[0] == 204
    scans = EngineReport.objects.filter(table="orders", report_type="scan-report")
    assert sorted(scans.values_list("snapshot_id", flat=True)) == [3, 4, 5]
    assert EngineReport.objects.filter(table="orders", report_type="commit-report").count() == 1
    assert EngineReport.objects.filter(table="refunds").count() == 1


def test_a_huge_report_is_kept_bounded(live_server: Any, warehouse: Path) -> None:
    names = [f"column_{i:05}" for i in range(20_000)]
    big = scan_report(**{"projected-field-names": names,
                         "projected-field-ids": list(range(20_000))})
    assert _post(live_server, PATH, big, _token("vic", "viewer"))[0] == 204
    row = EngineReport.objects.get()
    assert row.projected_fields == names[:services_rest.PROJECTED_FIELDS_LIMIT]
    assert row.raw["floe-omitted"] == ["projected-field-ids", "projected-field-names",
                                       "filter"]
    assert row.raw["metrics"] == big["metrics"] and row.skipped_data_files == 5
    assert row.filter_text == "id > (2-digit-int) AND cat IS NOT NULL"
    assert len(json.dumps(row.raw)) <= services_rest.RAW_REPORT_LIMIT


def test_the_config_advertises_the_route(live_server: Any, warehouse: Path) -> None:
    parsed = urllib.parse.urlsplit(str(live_server.url))
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    conn.request("GET", "/iceberg/v1/config?warehouse=local",
                 headers={"Authorization": f"Bearer {_token('vic', 'viewer')}"})
    doc = json.loads(conn.getresponse().read())
    conn.close()
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics" in doc["endpoints"]


def test_reports_floe_planned_go_through_the_same_function(warehouse: Path) -> None:
    """The hook server-side planning calls: a spec-shaped dict, no user, source
    floe-planned."""
    op = Operation("planTableScan", "local", Access.READ, ("sales",), "orders")
    row = services_rest.record_report(user=None, engine="Floe", operation=op,
                                      report=scan_report(metadata={}), source="floe-planned")
    assert (row.source, row.engine, row.actor_name, row.skipped_data_files) == (
        "floe-planned", "Floe", "", 5)
    bad = copy.deepcopy(scan_report())
    del bad["filter"]
    with pytest.raises(BadRequest):
        services_rest.record_report(user=None, engine="Floe", operation=op, report=bad,
                                    source="floe-planned")
    assert EngineReport.objects.count() == 1
