"""The Iceberg REST catalog's routes under ``/iceberg/`` (api/views_iceberg.py): the OAuth2
token endpoint, then every other path to the protocol core, which routes it."""

from django.urls import path, re_path

from api import views_iceberg

urlpatterns = [
    path("v1/oauth/tokens", views_iceberg.oauth_tokens, name="iceberg-oauth-tokens"),
    re_path(r"^(?P<rest>.*)$", views_iceberg.endpoint, name="iceberg"),
]
