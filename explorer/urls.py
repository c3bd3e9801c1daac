from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from explorer import views, views_scan

explorer_patterns = (
    [path("", views.table_list, name="tables")],
    "explorer",
)

urlpatterns = [
    path("", include(explorer_patterns)),
    path("", include(views_scan.scan_patterns)),  # partitions, scan plan, preview
    path("", include("explorer.urls_table")),  # one table: overview, snapshots, history, diff
    path("api/", include("api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
