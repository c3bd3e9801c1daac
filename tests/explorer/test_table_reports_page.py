"""A table's "Scans & commits" tab: the engines that reported scans and commits of the table
(grouped by engine, user and source, with counts), each recent scan's filter, snapshot, data
files and manifests read vs skipped and planning time, and the commits reported. Viewers see
it; a user without a role does not."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from explorer.rest import services as services_rest
from floe.rest_server import Access, Operation
from tests.explorer.tasks_support import user_with
from tests.floe.test_rest_server_metrics import commit_report, scan_report

pytestmark = pytest.mark.django_db

URL = "/catalogs/local/namespaces/sales/tables/orders/reports/"
ORDERS = Operation("reportMetrics", "local", Access.READ, ("sales",), "orders")


def _report(user: Any, engine: str, report: dict[str, Any],
            source: str = "client") -> None:
    services_rest.record_report(user=user, engine=engine, operation=ORDERS, report=report,
                                source=source)


def _cells(html: str, table_id: str) -> list[dict[str, str]]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    rows = []
    for row in re.findall(r"<tr data-[^>]*>(.*?)</tr>", body, re.S):
        rows.append({k: re.sub(r"<[^>]+>", "", v).strip()
                     for k, v in re.findall(r'data-col="([^"]+)"[^>]*>(.*?)</td>', row, re.S)})
    return rows


def test_the_tab_shows_engines_and_scanned_vs_skipped(warehouse: Path, settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    vic, mia = user_with("vic", "viewer"), user_with("mia", "maintainer")
    for _ in range(2):
        _report(vic, "Apache Iceberg 1.10.2", scan_report())
    _report(mia, "PyIceberg 0.12.0", scan_report(**{
        "metadata": {}, "snapshot-id": 7,
        "filter": {"type": "eq", "term": "cat", "value": "(3-char-string)"},
        "metrics": {"result-data-files": {"unit": "count", "value": 9},
                    "skipped-data-files": {"unit": "count", "value": 0}}}))
    _report(vic, "Apache Iceberg 1.10.2", commit_report())
    _report(None, "Floe", scan_report(metadata={}), source="floe-planned")

    client = Client()
    client.force_login(vic)
    r = client.get(URL)
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="tab-reports"' in html and 'aria-current="page">Scans &amp; commits' in html
    engines = _cells(html, "report-engines")
    by_engine = set(re.findall(r'<tr data-engine="([^"]*)"', html))
    assert by_engine == {"spark 3.5.3 · Apache Iceberg 1.10.2", "PyIceberg 0.12.0", "Floe"}
    assert sorted((e["scans"], e["commits"]) for e in engines) == [
        ("1", "0"), ("1", "0"), ("2", "1")]
    scans = _cells(html, "report-scans")
    assert len(scans) == 4
    assert scans[0]["data-files-read"] == "3" and scans[0]["data-files-skipped"] == "5"
    assert scans[0]["manifests-read"].startswith("2") and "of 4" in scans[0]["manifests-read"]
    assert scans[0]["manifests-skipped"] == "2" and scans[0]["planning"] == "2644.2 ms"
    pyiceberg = next(s for s in scans if s["snapshot"] == "7")
    assert (pyiceberg["filter"], pyiceberg["data-files-read"],
            pyiceberg["data-files-skipped"], pyiceberg["planning"]) == (
        "cat = (3-char-string)", "9", "0", "—")
    assert "id &gt; (2-digit-int) AND cat IS NOT NULL" in html
    assert "(planned by Floe)" in html
    [commit] = _cells(html, "report-commits")
    assert (commit["operation"], commit["attempts"], commit["records-added"]) == (
        "append", "1", "10")

    other = Client()
    other.force_login(user_with("eve"))
    assert other.get(URL).status_code == 403


def test_an_empty_tab_and_an_unknown_table(warehouse: Path) -> None:
    client = Client()
    client.force_login(user_with("vic", "viewer"))
    html = client.get(URL).content.decode()
    assert "No engine has reported" in html and "No scan reported." in html
    assert client.get(URL.replace("orders", "nope")).status_code == 404
