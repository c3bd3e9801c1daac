"""Alerts (issue 22, part 4): :class:`AlertRule` thresholds on a table's recorded health, and
on failed policy runs, checked by :func:`alerts_check` (Celery beat, every
``FLOE_ALERT_CHECK_SECONDS``). A rule fires once per table while its condition holds (the
alert is open; it is resolved when the condition no longer holds) and once per failed policy
run. Each firing is posted to the rule's webhook as JSON whose ``text`` is the sentence (what
Slack's incoming webhooks show) and whose ``alert`` holds the details, including the link to
the preview of the task that fixes it; whether the webhook took it is kept. Open alerts show
on the fleet view.

Rules are stored only when every field holds (:func:`alert_rule_create`; a 400 naming the
field, nothing stored): a known metric and comparison, a threshold in the metric's range, a
pattern that matches a recorded table, an http(s) webhook.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import math
import operator
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse
from django.utils import timezone

from explorer.errors import PolicyInvalid
from explorer.maintenance.policies import check_covers, check_name, check_scope, covered_rows
from explorer.models import Alert, AlertRule, TableMetrics, TaskRun
from explorer.tables import selectors
from explorer.units import size_text

__all__ = ["METRICS", "AlertsResult", "alert_rule_create", "alerts_check", "fix_link"]

logger = logging.getLogger(__name__)

#: What a rule can watch: metric → (what it is called, lowest, highest threshold).
METRICS: dict[str, tuple[str, float, float]] = {
    "small_file_ratio": ("the share of small data files", 0.0, 1.0),
    "delete_file_ratio": ("the share of delete files", 0.0, 1.0),
    "deleted_row_ratio": ("the share of deleted rows", 0.0, 1.0),
    "data_files": ("data files", 0, 1e15),
    "delete_files": ("delete files", 0, 1e15),
    "equality_deletes": ("equality deletes", 0, 1e18),
    "position_deletes": ("position deletes", 0, 1e18),
    "records": ("records in data files", 0, 1e18),
    "small_files": ("small data files", 0, 1e15),
    "avg_data_file_bytes": ("bytes in an average data file", 0, 1e15),
    # from the current snapshot's partition statistics file, when it has one; skew is the
    # largest partition's rows over the mean rows per partition (floe.health.partition_skew)
    "partitions": ("partitions", 0, 1e12),
    "partition_skew": ("partition skew", 1, 1e12),
    "manifests": ("manifests in the current snapshot", 0, 1e9),
    "snapshots": ("snapshots", 0, 1e9),
    "snapshots_past_expiry": ("snapshots past expiry", 0, 1e9),
    "total_bytes": ("bytes in files", 0, 1e18),
    "metadata_bytes": ("bytes of metadata", 0, 1e15),
    "last_commit_age_s": ("seconds since the last commit", 0, 1e10),
    "policy_run_failed": ("a failed policy run", 0, 0),
}
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
WEBHOOK_TIMEOUT = 5.0
#: The task that fixes what a metric shows: the form on the table's Actions page.
_FIX = {"small_file_ratio": "compact", "delete_file_ratio": "compact",
        "deleted_row_ratio": "compact", "data_files": "compact", "delete_files": "compact",
        "equality_deletes": "compact", "position_deletes": "compact",
        "small_files": "compact", "avg_data_file_bytes": "compact",
        "manifests": "rewrite_manifests", "snapshots": "expire_snapshots_dry_run",
        "snapshots_past_expiry": "expire_snapshots_dry_run",
        "metadata_bytes": "expire_snapshots_dry_run"}


def alert_rule_create(*, user: Any, name: Any, metric: Any, op: Any = ">",
                      threshold: Any = 0, catalog: Any = "*", tables: Any = "*",
                      webhook_url: Any = "") -> AlertRule:
    """Store a rule, every field checked first (PolicyInvalid names the one at fault);
    needs the admin role on its catalog (every catalog for ``*``)."""
    check_name(name, AlertRule.objects.filter(name=name).exists(), "an alert")
    if metric not in METRICS:
        raise PolicyInvalid("metric", f"metric must be one of {', '.join(METRICS)}, not "
                            f"{metric!r}")
    if op not in _OPS:
        raise PolicyInvalid("op", f"op must be one of {', '.join(_OPS)}, not {op!r}")
    _, low, high = METRICS[metric]
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or \
            not math.isfinite(threshold) or not low <= threshold <= high:
        raise PolicyInvalid("threshold", f"the threshold of {metric} must be a number from "
                            f"{low:g} to {high:g}, not {threshold!r}")
    configured = check_scope(user=user, catalog=catalog, tables=tables)
    if not isinstance(webhook_url, str) or (webhook_url and urllib.parse.urlsplit(
            webhook_url).scheme not in ("http", "https")) or len(webhook_url) > 2048 or \
            (webhook_url and not urllib.parse.urlsplit(webhook_url).hostname):
        raise PolicyInvalid("webhook_url", "webhook_url must be an http:// or https:// URL "
                            "(or empty: the fleet view only)")
    check_covers(catalog, tables, configured)
    return AlertRule.objects.create(name=name, metric=metric, op=op, threshold=float(threshold),
                                    catalog=catalog, tables=tables, webhook_url=webhook_url,
                                    created_by=user if user.is_authenticated else None)


def fix_link(metric: str, catalog: str, namespace: str, table: str) -> str:
    """The path of the form (on the table's Actions page) of the task that fixes it; for a
    failed run, the table's Tasks page."""
    kwargs = {"catalog": catalog, "ns": namespace, "table": table}
    kind = _FIX.get(metric)
    if kind is None:
        return reverse("table:tasks", kwargs=kwargs)
    return reverse("table:actions", kwargs=kwargs) + f"#form-{kind}"


def _shown(metric: str, value: float) -> str:
    if metric.endswith("_ratio"):
        return f"{value:.0%}"
    if metric.endswith("_bytes"):
        return size_text(value)
    if metric == "partition_skew":
        return f"{value:.1f}×"
    return f"{value:,.0f}"


def _value(rule: AlertRule, row: TableMetrics, now_s: float) -> float | None:
    if rule.metric == "last_commit_age_s":
        return None if row.last_commit_ms is None else now_s - row.last_commit_ms / 1000
    value = getattr(row, rule.metric)
    return None if value is None else float(value)


@dataclass
class AlertsResult:
    fired: int = 0
    resolved: int = 0
    delivered: int = 0
    undelivered: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _deliver(alert: Alert, result: AlertsResult) -> None:
    url = alert.rule.webhook_url
    if not url:
        return
    body = json.dumps({"text": alert.message, "alert": {
        "rule": alert.rule.name, "metric": alert.rule.metric, "op": alert.rule.op,
        "threshold": alert.rule.threshold, "value": alert.value, "catalog": alert.catalog,
        "namespace": alert.namespace, "table": alert.table,
        "task_run": alert.task_run_id, "fix": fix_link(alert.rule.metric, alert.catalog,
                                                       alert.namespace, alert.table),
        "fired_at": alert.fired_at.isoformat()}}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT) as answer:
            answer.read(65536)
        alert.delivered_at = timezone.now()
        result.delivered += 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        alert.delivery_error = str(exc)[:1000]
        result.undelivered += 1
        logger.warning("alert %s: the webhook of rule %s did not take it: %s", alert.pk,
                       alert.rule.name, exc)
    alert.save(update_fields=["delivered_at", "delivery_error"])


def alerts_check() -> AlertsResult:
    """Every enabled rule against the current recorded states (and failed policy runs)."""
    result = AlertsResult()
    configured = [c.name for c in selectors.catalog_list()]
    now_s = time.time()
    for rule in AlertRule.objects.filter(enabled=True):
        if rule.metric == "policy_run_failed":
            runs = TaskRun.objects.filter(policy__isnull=False, state=TaskRun.State.FAILED,
                                          finished_at__gte=rule.created_at).exclude(
                pk__in=Alert.objects.filter(rule=rule, task_run__isnull=False).values(
                    "task_run_id")).select_related("policy")
            for run in runs:
                if (rule.catalog not in ("*", run.catalog)) or not fnmatch.fnmatchcase(
                        f"{run.namespace}.{run.table}", rule.tables):
                    continue
                alert = Alert.objects.create(
                    rule=rule, catalog=run.catalog, namespace=run.namespace, table=run.table,
                    task_run=run, message=f"[{rule.name}] policy "
                    f"{run.policy.name if run.policy else '?'}'s {run.kind} of "
                    f"{run.catalog}:{run.namespace}.{run.table} failed: {run.error[:300]}")
                result.fired += 1
                _deliver(alert, result)
            continue
        compare = _OPS[rule.op]
        open_alerts = {(a.catalog, a.namespace, a.table): a for a in Alert.objects.filter(
            rule=rule, resolved_at__isnull=True, task_run__isnull=True)}
        for row in covered_rows(rule.catalog, rule.tables, configured):
            key = (row.catalog, row.namespace, row.table)
            value = _value(rule, row, now_s)
            holds = value is not None and compare(value, rule.threshold)
            if holds and key not in open_alerts:
                name = METRICS[rule.metric][0]
                alert = Alert.objects.create(
                    rule=rule, catalog=row.catalog, namespace=row.namespace, table=row.table,
                    value=value, message=f"[{rule.name}] {row.catalog}:{row.namespace}."
                    f"{row.table}: {name} {_shown(rule.metric, value)} "  # type: ignore[arg-type]
                    f"({rule.op} {_shown(rule.metric, rule.threshold)})")
                result.fired += 1
                _deliver(alert, result)
            elif not holds and key in open_alerts:
                open_alerts[key].resolved_at = timezone.now()
                open_alerts[key].save(update_fields=["resolved_at"])
                result.resolved += 1
    return result
