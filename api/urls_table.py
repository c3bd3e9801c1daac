"""One table's API routes, included by api.urls under ``catalogs/<c>/namespaces/<ns>/tables/<t>/``."""

from django.urls import path

from api import views_table as v
from api.views_metrics import TableMetricsView
from api.views_reports import TableReportsView
from api.views_tasks import TableAuditView

urlpatterns = [
    path("", v.TableDetailView.as_view(), name="table-detail"),
    path("snapshots/", v.SnapshotListView.as_view(), name="table-snapshots"),
    path("snapshots/<int:snapshot_id>/", v.SnapshotDetailView.as_view(), name="table-snapshot"),
    path("snapshots/<int:snapshot_id>/manifests/", v.ManifestListView.as_view(), name="table-manifests"),
    path("snapshots/<int:snapshot_id>/files/", v.FileListView.as_view(), name="table-files"),
    path("refs/", v.RefListView.as_view(), name="table-refs"),
    path("history/", v.HistoryView.as_view(), name="table-history"),
    path("diff/", v.DiffView.as_view(), name="table-diff"),
    path("audit/", TableAuditView.as_view(), name="table-audit"),
    path("reports/", TableReportsView.as_view(), name="table-reports"),
    path("metrics/", TableMetricsView.as_view(), name="table-metrics"),
]
