from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from api import views, views_scan

router = SimpleRouter()
router.register("tasks", views.TaskRunViewSet, basename="task")

_tables = "catalogs/<str:catalog>/namespaces/<str:ns>/tables/"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("catalogs/", views.CatalogViewSet.as_view({"get": "list"}), name="catalog-list"),
    path("catalogs/<str:catalog>/", views.CatalogViewSet.as_view({"get": "retrieve"}), name="catalog-detail"),
    path(
        "catalogs/<str:catalog>/namespaces/",
        views.NamespaceViewSet.as_view({"get": "list"}),
        name="namespace-list",
    ),
    path(_tables, views.TableViewSet.as_view({"get": "list"}), name="table-list"),
    path(_tables + "<str:table>/", include("api.urls_table")),  # detail, snapshots, files, refs, history, diff
    path(_tables + "<str:table>/plan/", views_scan.PlanView.as_view(), name="table-plan"),
    *router.urls,
]
