"""Routes of one table's pages (namespace ``table``), included by explorer.urls."""

from django.urls import path

from explorer.tables import views_reports as vr
from explorer.tables import views_table as v
from explorer.tasks import views as vt

app_name = "table"

_t = "catalogs/<str:catalog>/namespaces/<str:ns>/tables/<str:table>/"
_s = _t + "snapshots/<int:snapshot_id>/"

urlpatterns = [
    path(_t, v.table_overview, name="overview"),
    path(_t + "snapshots/", v.table_snapshots, name="snapshots"),
    path(_s, v.snapshot_detail, name="snapshot"),
    path(_s + "manifests/<int:index>/", v.manifest_detail, name="manifest"),
    path(_s + "manifests/<int:index>/files/<int:position>/", v.file_detail, name="file"),
    path(_t + "history/", v.table_history, name="history"),
    path(_t + "metadata/", v.table_metadata, name="metadata"),
    path(_t + "diff/", v.table_diff, name="diff"),
    path(_t + "reports/", vr.table_reports_page, name="reports"),
]

# Pages that act on the table, and its audit trail (explorer.tasks.views).

urlpatterns += [
    path(_t + "actions/", vt.table_actions, name="actions"),
    path(_t + "actions/run/", vt.table_action, name="action"),
    path(_t + "audit/", vt.table_audit_page, name="audit"),
    path(_t + "tasks/", vt.table_tasks, name="tasks"),
]
