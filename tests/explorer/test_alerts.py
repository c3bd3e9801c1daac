"""Alerts (issue 22, part 4): a threshold on a table's recorded health fires once while it
holds, is posted to a webhook (received here by an HTTP server on loopback: JSON with a
Slack-compatible ``text``) and shown on the fleet view with a link to the form of the task that
fixes it, and resolves when the health no longer passes it; a failed policy run fires too; a
webhook that does not answer is recorded; bad rules are a 400 naming the field, nothing
stored."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client

from explorer.maintenance.alerts import alerts_check
from explorer.maintenance.metrics import metrics_sweep
from explorer.models import Alert, AlertRule, MaintenancePolicy, TaskRun
from floe.maintenance.partition_stats import compute_partition_stats
from tests.explorer.tasks_support import client_for, load, make_table, rows, user_with

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "web", "events")  # nine small files
    make_table(root, "sales", "orders", appends=1, partition_by="")
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_TASK_HEARTBEAT_SECONDS = 0
    assert metrics_sweep().recorded == 2
    return root


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            size = int(self.headers["Content-Length"])
            received.append({"content_type": self.headers["Content-Type"],
                             "body": json.loads(self.rfile.read(size))})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks/floe", received
    server.shutdown()
    server.server_close()


def test_an_alert_fires_once_is_posted_shown_and_resolves(
        lake: Path, webhook: tuple[str, list[dict[str, Any]]], eager: Any) -> None:
    url, received = webhook
    api = client_for(user_with("ann", "admin"))
    rule = api.post("/api/alert-rules/", {"name": "many-files", "metric": "data_files",
                                          "op": ">", "threshold": 5, "tables": "web.*",
                                          "catalog": "local", "webhook_url": url},
                    format="json")
    assert rule.status_code == 201, rule.content
    done = alerts_check()
    assert (done.fired, done.delivered) == (1, 1)
    (posted,) = received
    assert posted["content_type"] == "application/json"
    assert posted["body"]["text"] == "[many-files] local:web.events: data files 9 (> 5)"
    assert posted["body"]["alert"]["value"] == 9.0
    assert posted["body"]["alert"]["fix"] == (
        "/catalogs/local/namespaces/web/tables/events/actions/#form-compact")
    assert alerts_check().fired == 0 and len(received) == 1  # open: not again
    page = Client()
    page.force_login(user_with("vic", "viewer"))
    doc = page.get("/fleet/").content.decode()
    assert 'data-alert="many-files"' in doc
    assert 'href="/catalogs/local/namespaces/web/tables/events/actions/#form-compact"' in doc
    assert api.get("/api/alerts/?open=true").json()["results"][0]["table"] == "events"
    # compacted (nine files into three): below the threshold, the alert resolves
    compacted = eager(lambda: api.post("/api/tasks/", {"kind": "compact", "params": {
        "namespace": "web", "table": "events", "options": {"min-input-files": "2"}}},
        format="json"))
    assert TaskRun.objects.get(pk=compacted.json()["id"]).state == "SUCCEEDED"
    assert alerts_check().resolved == 1
    assert not Alert.objects.filter(resolved_at__isnull=True).exists()
    assert 'data-alert="many-files"' not in page.get("/fleet/").content.decode()


def test_a_failed_policy_run_fires_and_an_unanswered_webhook_is_recorded(lake: Path) -> None:
    AlertRule.objects.create(name="policy-failures", metric="policy_run_failed",
                             webhook_url="http://127.0.0.1:9/nobody-listens")
    policy = MaintenancePolicy.objects.create(name="p", action="compact", tables="*",
                                              params={"small_file_ratio": 0.5})
    run = TaskRun.objects.create(kind="compact", catalog="local", namespace="web",
                                 table="events", state="FAILED", policy=policy,
                                 error="the table changed")
    run.finished_at = run.created_at
    run.save()
    done = alerts_check()
    assert (done.fired, done.undelivered) == (1, 1)
    (alert,) = Alert.objects.all()
    assert alert.task_run_id == run.pk and "policy p's compact" in alert.message
    assert alert.delivered_at is None and alert.delivery_error
    assert alerts_check().fired == 0  # once per failed run
    assert load(lake, "web").metadata_location  # nothing of the table was touched


def test_a_rule_on_partition_skew_reads_the_partition_statistics(lake: Path) -> None:
    """Skew is known only where the current snapshot has partition statistics: no alert
    before they are computed, one after (partitions of 1,100, 100 and 100 rows: 2.5×)."""
    table = load(lake, "web")
    more = rows(1000, 1000)
    table.append(more.set_column(1, "kind", pa.array(["click"] * 1000)))
    AlertRule.objects.create(name="skewed", metric="partition_skew", op=">", threshold=2,
                             catalog="local", tables="web.*")
    metrics_sweep()
    assert alerts_check().fired == 0  # unknown: no statistics file yet
    compute_partition_stats(load(lake, "web"))
    assert metrics_sweep().recorded == 1
    assert alerts_check().fired == 1
    (alert,) = Alert.objects.all()
    assert alert.message.endswith("partition skew 2.5× (> 2.0×)"), alert.message


@pytest.mark.parametrize(("change", "field"), [
    ({"name": "No Spaces"}, "name"),
    ({"metric": "temperature"}, "metric"),
    ({"op": "=="}, "op"),
    ({"threshold": 2}, "threshold"),  # a ratio is at most 1
    ({"threshold": "high"}, "threshold"),
    ({"metric": "partition_skew", "threshold": 0.5}, "threshold"),  # skew is at least 1
    ({"catalog": "elsewhere"}, "catalog"),
    ({"tables": "nothing.*"}, "tables"),
    ({"webhook_url": "file:///etc/passwd"}, "webhook_url"),
    ({"webhook_url": "http://"}, "webhook_url"),
])
def test_a_bad_rule_is_a_400_naming_the_field(lake: Path, change: dict[str, Any],
                                               field: str) -> None:
    api = client_for(user_with("ann", "admin"))
    good = {"name": "r", "metric": "small_file_ratio", "threshold": 0.5, "catalog": "local"}
    answer = api.post("/api/alert-rules/", {**good, **change}, format="json")
    assert answer.status_code == 400 and answer.json()["param"] == field, answer.content
    assert not AlertRule.objects.exists()
