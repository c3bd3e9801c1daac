"""``reportMetrics`` served by the REST protocol core (floe.rest_server, floe.rest_server.metrics):
a spec-shaped ScanReport or CommitReport (as Java's RESTMetricsReporter sends it) is checked,
handed to the sink the web layer gives and answered 204; a malformed one is 400 in the error
model and reaches no sink; an unknown table 404; the route is advertised in /v1/config and
needs only read access. Real catalogs (SQLite and file-system)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from floe.catalog.base import Catalog, Namespace, TableIdentifier
from floe.catalog.filesystem import FileSystemCatalog
from floe.catalog.sql import SqlCatalog
from floe.errors import NotFound
from floe.rest_server import (
    Access,
    Call,
    MetricsReport,
    Operation,
    Request,
    Response,
    RestServer,
    report_from_json,
)
from floe.rest_server.errors import BadRequest
from floe.rest_server.metrics import Counter, Timer, filter_text
from floe.schema import Schema
from floe.types import LONG, STRING, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING))
METRICS = "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics"


def scan_report(**extra: Any) -> dict[str, Any]:
    """A ScanReport as Iceberg Java 1.10 posts it (literals sanitized, durations in ns)."""
    return {
        "report-type": "scan-report", "table-name": "floe.db.t", "snapshot-id": 42,
        "filter": {"type": "and",
                   "left": {"type": "gt", "term": "id", "value": "(2-digit-int)"},
                   "right": {"type": "not-null", "term": "cat"}},
        "schema-id": 0, "projected-field-ids": [1, 2], "projected-field-names": ["id", "cat"],
        "metrics": {
            "total-planning-duration": {"count": 1, "time-unit": "nanoseconds",
                                        "total-duration": 2_644_235_116},
            "result-data-files": {"unit": "count", "value": 3},
            "result-delete-files": {"unit": "count", "value": 0},
            "total-data-manifests": {"unit": "count", "value": 4},
            "scanned-data-manifests": {"unit": "count", "value": 2},
            "skipped-data-manifests": {"unit": "count", "value": 2},
            "skipped-data-files": {"unit": "count", "value": 5},
            "total-file-size-in-bytes": {"unit": "bytes", "value": 4096}},
        "metadata": {"engine-name": "spark", "engine-version": "3.5.3"},
        **extra}


def commit_report(**extra: Any) -> dict[str, Any]:
    return {
        "report-type": "commit-report", "table-name": "floe.db.t", "snapshot-id": 43,
        "sequence-number": 2, "operation": "append",
        "metrics": {"total-duration": {"count": 1, "time-unit": "milliseconds",
                                       "total-duration": 120},
                    "attempts": {"unit": "count", "value": 1},
                    "added-data-files": {"unit": "count", "value": 2},
                    "added-records": {"unit": "count", "value": 10}},
        "metadata": {"engine-name": "spark", "engine-version": "3.5.3"},
        **extra}


@pytest.fixture(params=["sqlite", "filesystem"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    name = f"c{uuid.uuid4().hex[:10]}"
    warehouse = str(tmp_path / "warehouse")
    cat: Catalog = (FileSystemCatalog(name, warehouse) if request.param == "filesystem"
                    else SqlCatalog(name, f"sqlite:///{tmp_path / 'catalog.db'}", warehouse))
    with cat:
        ns: Namespace = ("db",)
        cat.create_namespace(ns, {})
        cat.create_table(TableIdentifier(ns, "t"), SCHEMA)
        yield cat


class Sink:
    """The web layer's sink: what it was handed."""

    def __init__(self) -> None:
        self.got: list[tuple[Operation, Request, MetricsReport, str]] = []

    def __call__(self, call: Call, report: MetricsReport, source: str) -> None:
        self.got.append((call.operation, call.request, report, source))


def _lookup(catalog: Catalog) -> Any:
    def get(name: str) -> Catalog:
        if name != catalog.name:
            raise NotFound(f"catalog {name!r} does not exist")
        return catalog
    return get


def _post(server: RestServer, catalog: Catalog, path: str, body: Any, *,
          raw: bytes | None = None, authorize: Any = None) -> Response:
    data = raw if raw is not None else json.dumps(body).encode()
    return server.handle(Request("POST", f"/v1/{catalog.name}/{path}", {},
                                 {"user-agent": "Java/17", "x-client-version": "Apache Iceberg "
                                  "1.10.2"}, data, "7"), authorize=authorize)


def _error(r: Response) -> tuple[int, str]:
    doc = r.json()
    assert set(doc) == {"error"} and set(doc["error"]) == {"message", "type", "code"}
    assert doc["error"]["code"] == r.status and doc["error"]["message"]
    return r.status, doc["error"]["type"]


def test_a_scan_report_is_handed_to_the_sink_and_answered_204(catalog: Catalog) -> None:
    sink = Sink()
    server = RestServer(_lookup(catalog), reports=sink)
    seen: list[Operation] = []
    r = _post(server, catalog, "namespaces/db/tables/t/metrics", scan_report(),
              authorize=seen.append)
    assert (r.status, r.body) == (204, b"")
    assert [op.access for op in seen] == [Access.READ]  # a scan is a read: viewers report
    [(op, request, report, source)] = sink.got
    assert (op.name, op.catalog, op.namespace, op.table) == (
        "reportMetrics", catalog.name, ("db",), "t")
    assert request.principal == "7" and request.header("x-client-version").startswith("Apache")
    assert source == "client" and report.is_scan and report.snapshot_id == 42
    assert report.counter("result-data-files") == 3
    assert report.counter("skipped-data-files") == 5
    assert report.counter("skipped-data-manifests") == 2
    assert report.duration_ms("total-planning-duration") == pytest.approx(2644.235116)
    assert report.projected_field_names == ("id", "cat") and report.schema_id == 0
    assert report.filter_text == "id > (2-digit-int) AND cat IS NOT NULL"
    assert report.metadata == {"engine-name": "spark", "engine-version": "3.5.3"}
    assert report.raw == scan_report()


def test_a_commit_report_is_handed_to_the_sink(catalog: Catalog) -> None:
    sink = Sink()
    server = RestServer(_lookup(catalog), reports=sink)
    r = _post(server, catalog, "namespaces/db/tables/t/metrics", commit_report())
    assert r.status == 204
    [(_, _, report, _)] = sink.got
    assert not report.is_scan and report.operation == "append"
    assert report.sequence_number == 2 and report.counter("added-records") == 10
    assert report.duration_ms("total-duration") == 120.0
    assert report.filter_text == ""


def test_the_route_is_advertised_and_in_the_reference(catalog: Catalog) -> None:
    server = RestServer(_lookup(catalog))
    config = server.handle(Request("GET", "/v1/config", {"warehouse": catalog.name})).json()
    assert f"POST {METRICS}" in config["endpoints"]
    op = server.openapi()["paths"][METRICS]["post"]
    assert op["operationId"] == "reportMetrics" and "204" in op["responses"]


def test_without_a_sink_a_report_is_checked_and_dropped(catalog: Catalog) -> None:
    server = RestServer(_lookup(catalog))
    assert _post(server, catalog, "namespaces/db/tables/t/metrics", scan_report()).status == 204
    assert _error(_post(server, catalog, "namespaces/db/tables/t/metrics",
                        {"report-type": "scan-report"})) == (400, "BadRequestException")


def _without(doc: dict[str, Any], key: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    del doc[key]
    return doc


def _with_metric(doc: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metrics"][name] = value
    return doc


MALFORMED = [
    pytest.param(None, b"{not json", id="malformed-json"),
    pytest.param([scan_report()], None, id="an-array"),
    pytest.param(_without(scan_report(), "report-type"), None, id="no-report-type"),
    pytest.param(scan_report(**{"report-type": "plan-report"}), None, id="unknown-type"),
    pytest.param(_without(scan_report(), "table-name"), None, id="no-table-name"),
    pytest.param(scan_report(**{"snapshot-id": "42"}), None, id="snapshot-id-a-string"),
    pytest.param(scan_report(**{"snapshot-id": True}), None, id="snapshot-id-a-bool"),
    pytest.param(scan_report(**{"snapshot-id": 2**63}), None, id="snapshot-id-too-large"),
    pytest.param(_without(scan_report(), "filter"), None, id="scan-without-filter"),
    pytest.param(scan_report(**{"projected-field-ids": ["id"]}), None, id="field-ids-names"),
    pytest.param(scan_report(**{"projected-field-names": [1]}), None, id="field-names-ids"),
    pytest.param(scan_report(metrics=[]), None, id="metrics-an-array"),
    pytest.param(_with_metric(scan_report(), "result-data-files", {"unit": "count"}), None,
                 id="counter-without-value"),
    pytest.param(_with_metric(scan_report(), "result-data-files", {"unit": "count",
                                                                   "value": 1.5}),
                 None, id="counter-value-a-float"),
    pytest.param(_with_metric(scan_report(), "total-planning-duration",
                              {"time-unit": "nanoseconds", "count": 1}), None,
                 id="timer-without-total"),
    pytest.param(_with_metric(scan_report(), "x", {"what": 1}), None, id="neither"),
    pytest.param(scan_report(metadata={"k": 1}), None, id="metadata-not-strings"),
    pytest.param(_without(commit_report(), "operation"), None, id="commit-without-operation"),
    pytest.param(_without(commit_report(), "sequence-number"), None,
                 id="commit-without-sequence-number"),
]


@pytest.mark.parametrize(("body", "raw"), MALFORMED)
def test_a_malformed_report_is_400_and_reaches_no_sink(catalog: Catalog, body: Any,
                                                       raw: bytes | None) -> None:
    sink = Sink()
    server = RestServer(_lookup(catalog), reports=sink)
    r = _post(server, catalog, "namespaces/db/tables/t/metrics", body, raw=raw)
    assert _error(r) == (400, "BadRequestException")
    assert sink.got == []


def test_an_unknown_table_or_namespace_is_404(catalog: Catalog) -> None:
    sink = Sink()
    server = RestServer(_lookup(catalog), reports=sink)
    assert _error(_post(server, catalog, "namespaces/db/tables/nope/metrics",
                        scan_report())) == (404, "NoSuchTableException")
    assert _error(_post(server, catalog, "namespaces/nope/tables/t/metrics",
                        scan_report())) == (404, "NoSuchNamespaceException")
    assert sink.got == []


def test_a_server_made_report_goes_to_the_same_sink(catalog: Catalog) -> None:
    """What the server's own scan planning calls (record_report with a spec-shaped dict)."""
    sink = Sink()
    server = RestServer(_lookup(catalog), reports=sink)
    request = Request("POST", f"/v1/{catalog.name}/namespaces/db/tables/t/plan", {}, {}, b"{}")
    op = Operation("planTableScan", catalog.name, Access.READ, ("db",), "t")
    call = Call(server, request, server.routes[0], {}, op)
    report = server.record_report(call, scan_report(), source="floe-planned")
    assert sink.got == [(op, request, report, "floe-planned")]
    with pytest.raises(BadRequest):
        server.record_report(call, {"report-type": "scan-report"}, source="floe-planned")


def test_metric_results_and_time_units() -> None:
    report = report_from_json(_with_metric(scan_report(), "total-planning-duration", {
        "count": 2, "time-unit": "microseconds", "total-duration": 1500}))
    assert report.metrics["total-planning-duration"] == Timer("microseconds", 2, 1500)
    assert report.duration_ms("total-planning-duration") == 1.5
    assert report.metrics["total-file-size-in-bytes"] == Counter("bytes", 4096)
    assert report.counter("total-planning-duration") is None  # a timer, not a counter
    assert report.counter("absent") is None and report.duration_ms("absent") is None


@pytest.mark.parametrize(("expr", "text"), [
    (True, "true"),
    ({"type": "true"}, "true"),
    ({"type": "eq", "term": "cat", "value": "it's"}, "cat = 'it''s'"),
    ({"type": "in", "term": "id", "values": ["(1-digit-int)", "(2-digit-int)"]},
     "id IN ((1-digit-int), (2-digit-int))"),
    ({"type": "not", "child": {"type": "is-null", "term": "cat"}}, "NOT cat IS NULL"),
    ({"type": "or", "left": {"type": "lt", "term": "id", "value": 3},
      "right": {"type": "starts-with", "term": "cat", "value": "c"}},
     "id < 3 OR cat STARTS WITH 'c'"),
    ({"type": "eq", "term": {"type": "transform", "transform": "bucket[16]", "term": "id"},
      "value": "(1-digit-int)"}, "bucket[16](id) = (1-digit-int)"),
])
def test_filters_in_words(expr: Any, text: str) -> None:
    assert filter_text(expr) == text
