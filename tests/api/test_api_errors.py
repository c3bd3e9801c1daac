"""API errors are one JSON shape (issue 19, point 12): ``error`` names what went wrong, ``detail``
says it. An unknown /api/ URL is a JSON 404 whatever the method (POST, PUT, PATCH and DELETE
were Django's CSRF 403 page: the catch-all was a plain Django view, so CsrfViewMiddleware
asked token clients for a CSRF token); an oversized body is a JSON 413 naming the limit (a
400 HTML page); a grant's bad field is not a "TaskParamsInvalid"; DRF's own errors have the
shape too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from explorer.models import AuditEntry, CatalogGrant, TaskRun
from floe.expressions import MAX_DEPTH

pytestmark = pytest.mark.django_db

T = "/api/catalogs/local/namespaces/web/tables/events/"


def _token(name: str, role: str | None) -> dict[str, str]:
    user = User.objects.create_user(name)
    if role is not None:
        CatalogGrant.objects.create(user=user, catalog="local", role=role)
    return {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=user).key}"}


def _shape(response: Any, status: int, error: str) -> dict[str, Any]:
    """The body, checked to be the one shape with this status and error type."""
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json", response.content[:300]
    body: dict[str, Any] = json.loads(response.content)
    assert body["error"] == error, body
    assert isinstance(body["detail"], str) and body["detail"], body
    return body


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
@pytest.mark.parametrize("who", ["token", "anonymous"])
def test_an_unknown_api_url_is_a_json_404_for_every_method(demo: Path, method: str,
                                                           who: str) -> None:
    headers = _token("ada", "maintainer") if who == "token" else {}
    client = Client(enforce_csrf_checks=True)
    for url in ("/api/nope/", T + "nope/", "/api/tasks/1/nope/"):
        response = (client.get(url, **headers) if method == "get" else getattr(client, method)(
            url, "{}", content_type="application/json", **headers))
        body = _shape(response, 404, "NotFound")
        assert body["detail"] == f"no API endpoint at {url}; the entry points are listed at /api/"


def test_the_schema_describes_errors_and_leaves_out_the_catch_all(demo: Path) -> None:
    schema = Client().get("/api/schema/", {"format": "json"}).json()
    assert "`error` names what went wrong" in schema["info"]["description"]
    assert "RequestTooLarge" in schema["info"]["description"]
    paths = schema["paths"]
    assert paths and [p for p in paths if not p.endswith("/")] == []  # "/api/." if it were


@pytest.mark.parametrize("url", ["/api/tasks/", "/api/tasks/preview/", "/api/grants/"])
def test_an_oversized_body_is_a_json_413_naming_the_limit(demo: Path, settings: Any,
                                                          url: str) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"kind": "export", "params": {"namespace": "web", "table": "events",
                                                    "filter": "x" * 20_000}})
    response = Client().post(url, body, content_type="application/json",
                             **_token("ada", "admin"))
    error = _shape(response, 413, "RequestTooLarge")
    assert error["detail"] == ("the request body is larger than the 9.8 KiB (10,000 bytes) "
                               "the API accepts")
    assert error["limit"] == 10_000
    assert not TaskRun.objects.exists() and not AuditEntry.objects.exists()


def test_the_default_limit_is_stated_in_bytes_and_binary_units(demo: Path) -> None:
    body = json.dumps({"kind": "refresh_table_stats", "params": {"x": "a" * 3_000_000}})
    response = Client().post("/api/tasks/", body, content_type="application/json",
                             **_token("ada", "maintainer"))
    assert "2.5 MiB (2,621,440 bytes)" in _shape(response, 413, "RequestTooLarge")["detail"]


@pytest.mark.parametrize(("fields", "param", "needle"), [
    ({"user": "nobody", "catalog": "local", "role": "viewer"}, "user", "does not exist"),
    ({"user": "bob", "catalog": "nope", "role": "viewer"}, "catalog", "nope"),
])
def test_a_bad_grant_names_the_grant_field_not_a_task_parameter(
        demo: Path, fields: dict[str, str], param: str, needle: str) -> None:
    User.objects.create_user("bob")
    root = User.objects.create_superuser("root", "root@example.com", None)
    response = Client().post("/api/grants/", json.dumps(fields), content_type="application/json",
                             HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=root).key}")
    body = _shape(response, 400, "AccessInvalid")
    assert body["param"] == param and needle in body["detail"] and "params" not in body


def _deep() -> str:
    return "(" * (MAX_DEPTH + 1) + "event_id = 1" + ")" * (MAX_DEPTH + 1)


#: (method, url, body or None, status, error type, param or None): one of each kind of error
#: the API answers.
CASES: list[tuple[str, str, Any, int, str, str | None]] = [
    ("get", T + "plan/?filter=event_id+%3D", None, 400, "FilterInvalid", None),
    ("get", T + "preview/?filter=nope+%3D+1", None, 400, "FilterInvalid", None),
    ("get", T + "preview/?filter=" + _deep(), None, 400, "FilterTooDeep", None),
    ("get", T + "preview/?limit=5000", None, 400, "InvalidArgument", "limit"),
    ("get", T + "preview/?columns=nope", None, 400, "InvalidArgument", "columns"),
    ("get", T + "preview/?as_of=yesterday", None, 400, "InvalidArgument", "as_of"),
    ("get", T + "preview/?ref=nope", None, 400, "InvalidArgument", "ref"),
    ("get", T + "preview/?snapshot=1&ref=main", None, 400, "InvalidArgument", "snapshot"),
    ("get", T + "export/?format=xlsx", None, 400, "InvalidArgument", "format"),
    ("get", T + "snapshots/?page=abc", None, 400, "InvalidArgument", "page"),
    ("get", T + "snapshots/?page=99", None, 400, "InvalidArgument", "page"),
    ("get", "/api/catalogs/local/namespaces/web/tables/nope/", None, 404, "NotFound", None),
    ("get", "/api/tasks/999/", None, 404, "NotFound", None),
    ("put", "/api/tasks/", {}, 405, "MethodNotAllowed", None),
    ("post", "/api/tasks/", "{", 400, "ParseError", None),
    ("post", "/api/tasks/", {}, 400, "ValidationError", None),
    ("post", "/api/tasks/", {"kind": "export", "params": {"namespace": "web", "table": "events",
                                                          "format": "xls"}},
     400, "TaskParamsInvalid", "format"),
    ("post", "/api/tasks/", {"kind": "export", "params": {"namespace": "web", "table": "events",
                                                          "filter": _deep()}},
     400, "TaskParamsInvalid", "filter"),
]


@pytest.mark.parametrize(("method", "url", "body", "status", "error", "param"), CASES,
                         ids=[f"{c[4]}-{c[1].split('?')[-1][:30]}" for c in CASES])
def test_every_error_is_one_json_shape(demo: Path, method: str, url: str, body: Any,
                                       status: int, error: str, param: str | None) -> None:
    headers = _token("ada", "maintainer")
    client = Client()
    if method == "get":
        response = client.get(url, **headers)
    else:
        data = body if isinstance(body, str) else json.dumps(body)
        response = getattr(client, method)(url, data, content_type="application/json",
                                           **headers)
    got = _shape(response, status, error)
    assert got.get("param") == param


def test_drf_refusals_have_the_shape_and_the_api_names(demo: Path, settings: Any) -> None:
    client = Client()
    _shape(client.get(T, HTTP_AUTHORIZATION="Token nope"), 401, "AuthenticationFailed")
    _shape(client.post("/api/tasks/", "{}", content_type="application/json"), 401,
           "NotAuthenticated")
    _shape(client.get(T, HTTP_ACCEPT="application/xml"), 406, "NotAcceptable")
    _shape(client.post("/api/tasks/", "a=b", content_type="text/plain",
                       **_token("ada", "maintainer")), 415, "UnsupportedMediaType")
    settings.FLOE_DEFAULT_ROLE = "none"
    # the API's permission class refuses (DRF's PermissionDenied): named as the services name it
    _shape(client.get(T, **_token("bob", None)), 403, "Forbidden")
    missing = _shape(client.post("/api/tasks/", json.dumps({"params": {}}),
                                 content_type="application/json",
                                 **_token("cy", "maintainer")), 400, "ValidationError")
    assert missing["detail"] == "kind: This field is required."
    assert missing["kind"] == ["This field is required."]  # the serializer's fields stay


def test_a_bug_is_a_json_500_that_names_nothing_of_the_server(
        demo: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """An exception no mapping knows (a bug) is logged with its traceback and answered in the
    one shape, without the exception's text."""
    from explorer.tables import selectors

    def broken() -> None:
        raise RuntimeError("secret detail /etc/floe/settings.toml")

    monkeypatch.setattr(selectors, "catalog_list", broken)
    response = Client(raise_request_exception=False).get("/api/catalogs/",
                                                         HTTP_ACCEPT="application/json")
    body = _shape(response, 500, "InternalError")
    assert "secret" not in response.content.decode()
    assert set(body) == {"error", "detail"}
    assert any("secret detail" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_an_unknown_task_run_is_named(demo: Path) -> None:
    for url in ("/api/tasks/999999/", "/api/tasks/nope/"):
        body = _shape(Client().get(url), 404, "NotFound")
        assert body["detail"] == f"task run {url.split('/')[3]} does not exist"
