"""The fleet view (``/fleet/``): every table ranked by what needs attention, from the stored
health (explorer.maintenance.selectors), filterable by catalog and namespace, paged."""

from __future__ import annotations

import time

from django.core.paginator import Paginator
from django.db.models import Max, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from explorer.access.auth import read_access_required
from explorer.maintenance.policies import policies_preview
from explorer.maintenance.selectors import WARNING_LABELS, fleet, fleet_alerts, fleet_catalogs
from explorer.models import MaintenancePolicy, TaskRun
from explorer.tasks.outcomes import progress_text

PAGE_SIZE = 100


@read_access_required
def fleet_page(request: HttpRequest) -> HttpResponse:
    catalogs = fleet_catalogs(user=request.user)
    catalog = request.GET.get("catalog", "").strip()
    namespace = request.GET.get("namespace", "").strip()[:255]
    rows = fleet(user=request.user, catalog=catalog or None, namespace=namespace or None)
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    now_ms = int(time.time() * 1000)
    for row in page.object_list:
        row.warning_labels = [WARNING_LABELS.get(w, w) for w in row.warnings]
        row.age_s = max(0, (now_ms - row.last_commit_ms) // 1000) if row.last_commit_ms \
            else None
    return render(request, "explorer/fleet.html", {
        "page": page, "catalogs": catalogs, "catalog": catalog, "namespace": namespace,
        "alerts": fleet_alerts(user=request.user, catalog=catalog or None,
                               namespace=namespace or None),
        "unknown_catalog": bool(catalog) and catalog not in catalogs})


@read_access_required
def policies_page(request: HttpRequest) -> HttpResponse:
    """Every policy, what each would do now (table by table, from the recorded health) and
    its history: the runs it made, newest first, with how each ended."""
    readable = fleet_catalogs(user=request.user)
    # its last run on a table the user may read (once per period is decided from its runs)
    policies = list(MaintenancePolicy.objects.annotate(last_run_at=Max(
        "runs__created_at", filter=Q(runs__catalog__in=readable))))
    decisions = policies_preview(user=request.user)
    runs = list(TaskRun.objects.filter(policy__isnull=False, catalog__in=readable)
                .select_related("policy").order_by("-created_at", "-id")[:100])
    for run in runs:
        run.said = progress_text(run)
    return render(request, "explorer/policies.html", {
        "policies": policies, "decisions": decisions, "runs": runs})
