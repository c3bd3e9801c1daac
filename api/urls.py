from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from api import views, views_policies, views_read, views_scan, views_tasks

router = SimpleRouter()
router.register("tasks", views_tasks.TaskRunViewSet, basename="task")
router.register("audit", views_tasks.AuditViewSet, basename="audit")
router.register("grants", views_tasks.GrantViewSet, basename="grant")
router.register("policies", views_policies.PolicyViewSet, basename="policy")
router.register("alert-rules", views_policies.AlertRuleViewSet, basename="alert-rule")
router.register("alerts", views_policies.AlertViewSet, basename="alert")

_tables = "catalogs/<str:catalog>/namespaces/<str:ns>/tables/"

urlpatterns = [
    path("", views.ApiRootView.as_view(), name="api-root"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # the interactive reference: Swagger UI (try every call) from the sidecar package (not
    # ReDoc: its page fetches fonts and a logo from the internet)
    path("reference/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-reference"),
    path("catalogs/", views.CatalogViewSet.as_view({"get": "list"}), name="catalog-list"),
    path("catalogs/<str:catalog>/", views.CatalogViewSet.as_view({"get": "retrieve"}), name="catalog-detail"),
    path(
        "catalogs/<str:catalog>/namespaces/",
        views.NamespaceViewSet.as_view({"get": "list"}),
        name="namespace-list",
    ),
    path(_tables, views.TableViewSet.as_view({"get": "list"}), name="table-list"),
    path(_tables + "<str:table>/", include("api.urls_table")),  # detail, snapshots, ..., audit
    path(_tables + "<str:table>/plan/", views_scan.PlanView.as_view(), name="table-plan"),
    path(_tables + "<str:table>/partitions/", views_read.PartitionsView.as_view(),
         name="table-partitions"),
    path(_tables + "<str:table>/preview/", views_read.PreviewView.as_view(), name="table-preview"),
    path(_tables + "<str:table>/export/", views_read.ExportView.as_view(), name="table-export"),
    *router.urls,
    re_path(r"^(?P<rest>.*)$", views.api_not_found),  # last: JSON 404s under /api/
]
