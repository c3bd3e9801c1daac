from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path

from explorer.access import views as views_access
from explorer.maintenance import views as maintenance_views
from explorer.tables import views, views_scan
from explorer.tasks import views as views_tasks


def _favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    return HttpResponsePermanentRedirect(static("floe/favicon.svg"))


explorer_patterns = (
    [
        path("", views.table_list, name="tables"),
        path("catalogs/", views.catalogs_index, name="catalogs"),
        path("catalogs/<str:catalog>/", views.catalog_page, name="catalog"),
        path("catalogs/<str:catalog>/namespaces/", views.catalog_namespaces),
        path("catalogs/<str:catalog>/namespaces/<str:ns>/", views.namespace_page,
             name="namespace"),
        path("catalogs/<str:catalog>/namespaces/<str:ns>/tables/", views.namespace_tables),
    ],
    "explorer",
)

task_patterns = (
    [
        path("", views_tasks.task_list, name="list"),
        path("<int:pk>/", views_tasks.task_detail, name="detail"),
        path("<int:pk>/cancel/", views_tasks.task_cancel, name="cancel"),
        path("<int:pk>/confirm/", views_tasks.task_confirm, name="confirm"),
    ],
    "tasks",
)

handler404 = "explorer.tables.views.page_not_found"

urlpatterns = [
    # the Iceberg REST catalog protocol (a client's uri is http://HOST:PORT/iceberg); first:
    # engines call it on every load and commit, so it is resolved before the site's pages
    path("iceberg/", include("api.urls_iceberg")),
    path("", include(explorer_patterns)),
    path("", include(views_scan.scan_patterns)),  # partitions, scan plan, preview
    path("", include("explorer.tables.urls")),  # one table: overview, snapshots, history, diff
    path("tasks/", include(task_patterns)),
    path("access/", include(views_access.access_patterns)),  # roles, users, API tokens
    path("fleet/", maintenance_views.fleet_page, name="fleet"),  # every table, worst first
    path("policies/", maintenance_views.policies_page, name="policies"),  # maintenance
    path("api/", include("api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on pages without an icon link (the API's, the admin's).
    path("favicon.ico", _favicon),
]
