"""The Iceberg REST catalog's routes under ``/iceberg/`` (api/views_iceberg.py): the OAuth2
token endpoint, the reference, then every other path to the protocol core, which routes
it."""

from django.urls import path, re_path, reverse_lazy
from drf_spectacular.views import SpectacularSwaggerView

from api import views_iceberg

urlpatterns = [
    path("v1/oauth/tokens", views_iceberg.oauth_tokens, name="iceberg-oauth-tokens"),
    # the reference (Swagger UI, served by the site) of what is served here
    path("openapi.json", views_iceberg.openapi, name="iceberg-openapi"),
    path("reference/", SpectacularSwaggerView.as_view(
        url=reverse_lazy("iceberg-openapi"), title="Floe · Iceberg REST catalog"),
        name="iceberg-reference"),
    re_path(r"^(?P<rest>.*)$", views_iceberg.endpoint, name="iceberg"),
]
