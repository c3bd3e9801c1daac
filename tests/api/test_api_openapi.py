"""Every response the API gives matches the OpenAPI schema drf-spectacular generates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from jsonschema import Draft7Validator
from rest_framework.test import APIClient

from explorer.models import CatalogGrant, MaintenancePolicy, TableMetrics, TaskRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> APIClient:
    client = APIClient()
    ada = User.objects.create_user("ada")
    CatalogGrant.objects.create(user=ada, catalog="*", role="admin")
    client.force_authenticate(ada)
    return client


@pytest.fixture
def openapi(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 'nullable' is not JSON Schema: turn it into a null alternative."""
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _operation(openapi: dict[str, Any], method: str, url: str) -> dict[str, Any]:
    path = url.split("?")[0]
    # literal segments win over parameters (/api/policies/preview/ is not policy "preview")
    for template, item in sorted(openapi["paths"].items(), key=lambda t: t[0].count("{")):
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path) and method in item:
            return item[method]  # type: ignore[no-any-return]
    raise AssertionError(f"{method.upper()} {path} is not in the schema")


def _assert_matches(openapi: dict[str, Any], method: str, url: str, status: int, body: Any) -> None:
    responses = _operation(openapi, method, url)["responses"]
    assert str(status) in responses, f"{method.upper()} {url}: status {status} is not documented"
    schema = responses[str(status)]["content"]["application/json"]["schema"]
    root = {**_to_json_schema(schema), "components": _to_json_schema(openapi["components"])}
    errors = sorted(Draft7Validator(root).iter_errors(body), key=str)
    assert not errors, f"{method.upper()} {url}: {errors[0].message} at {list(errors[0].path)}"


@pytest.mark.parametrize(
    "url",
    [
        "/api/catalogs/",
        "/api/catalogs/local/",
        "/api/catalogs/local/namespaces/",
        "/api/catalogs/local/namespaces/?page_size=1&page=2",
        "/api/catalogs/local/namespaces/sales/tables/",
        "/api/catalogs/local/namespaces/staging/tables/",  # with a broken table's error row
        "/api/catalogs/local/namespaces/staging/tables/?q=empty",
        "/api/catalogs/local/namespaces/sales/tables/orders/",
        "/api/tasks/",
    ],
)
def test_get_responses_match_the_schema(api: APIClient, openapi: dict[str, Any], warehouse: Path, url: str) -> None:
    TaskRun.objects.create(kind="refresh_table_stats", result={"tables": 1}, progress=100, state="SUCCEEDED")
    response = api.get(url)
    assert response.status_code == 200
    _assert_matches(openapi, "get", url, 200, response.json())


def test_task_create_and_detail_match_the_schema(
    api: APIClient, openapi: dict[str, Any], warehouse: Path, django_capture_on_commit_callbacks  # type: ignore[no-untyped-def]
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        response = api.post("/api/tasks/", {"kind": "refresh_table_stats"}, format="json")
    assert response.status_code == 201
    _assert_matches(openapi, "post", "/api/tasks/", 201, response.json())
    url = f"/api/tasks/{response.json()['id']}/"
    _assert_matches(openapi, "get", url, 200, api.get(url).json())


def test_policy_previews_and_table_pauses_match_the_schema(
        api: APIClient, openapi: dict[str, Any], warehouse: Path) -> None:
    """Found by the fuzzing (test_api_schema_fuzz): the previews were documented as one
    policy, the pauses as a policy too; they answer a list of decisions and the pause."""
    _assert_matches(openapi, "get", "/api/policies/preview/", 200,
                    api.get("/api/policies/preview/").json())
    policy = MaintenancePolicy.objects.create(name="p", action="compact", catalog="local")
    TableMetrics.objects.create(catalog="local", namespace="sales", table="orders",
                                metadata_location="m.json", source="sweep", current=True,
                                data_files=3)
    for url in ("/api/policies/preview/", f"/api/policies/{policy.pk}/preview/"):
        response = api.get(url)
        assert response.status_code == 200 and response.json(), url
        _assert_matches(openapi, "get", url, 200, response.json())
    table = {"catalog": "local", "namespace": "sales", "table": "orders"}
    for url in ("/api/policies/pause-table/", "/api/policies/resume-table/"):
        response = api.post(url, table, format="json")
        assert response.status_code == 200, response.content
        _assert_matches(openapi, "post", url, 200, response.json())


def test_errors_are_documented_on_every_operation(openapi: dict[str, Any]) -> None:
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            for status in ("400", "401", "403", "404"):
                assert operation["responses"][status]["content"]["application/json"][
                    "schema"] == {"$ref": "#/components/schemas/Error"}, (method, path)


def test_an_error_matches_the_schema(api: APIClient, openapi: dict[str, Any],
                                     warehouse: Path) -> None:
    url = "/api/catalogs/local/namespaces/sales/tables/nope/"
    response = api.get(url)
    assert response.status_code == 404
    _assert_matches(openapi, "get", url, 404, response.json())
    url = "/api/catalogs/local/namespaces/sales/tables/orders/plan/?filter=id%20%3E"
    response = api.get(url)
    assert response.status_code == 400
    _assert_matches(openapi, "get", url, 400, response.json())


def test_the_schema_keeps_the_resource_paths_of_the_architecture(openapi: dict[str, Any]) -> None:
    assert {
        "/api/catalogs/",
        "/api/catalogs/{catalog}/namespaces/",
        "/api/catalogs/{catalog}/namespaces/{ns}/tables/",
        "/api/tasks/",
        "/api/tasks/{id}/",
    } <= set(openapi["paths"])
    assert {"tokenAuth", "cookieAuth"} <= set(openapi["components"]["securitySchemes"])


def test_the_schema_is_valid_openapi(openapi: dict[str, Any]) -> None:
    from drf_spectacular.validation import validate_schema

    validate_schema(openapi)


def test_audit_grants_and_table_audit_match_the_schema(
    api: APIClient, openapi: dict[str, Any], tmp_path: Path, settings  # type: ignore[no-untyped-def]
) -> None:
    from explorer.models import AuditEntry
    from tests.explorer.tasks_support import make_table, user_with

    settings.FLOE_WAREHOUSE = str(tmp_path)
    make_table(tmp_path, "ns")
    AuditEntry.objects.create(actor_name="ada", action="rollback", catalog="local",
                              namespace="ns", table="events", outcome="failed", error="boom")
    CatalogGrant.objects.create(user=user_with("bob"), catalog="local", role="viewer")
    _assert_matches(openapi, "get", "/api/audit/", 200, api.get("/api/audit/").json())
    _assert_matches(openapi, "get", "/api/grants/", 200, api.get("/api/grants/").json())
    url = "/api/catalogs/local/namespaces/ns/tables/events/audit/"
    _assert_matches(openapi, "get", url, 200, api.get(url).json())
    created = api.post("/api/grants/", {"user": "bob", "catalog": "local", "role": "admin"},
                       format="json")
    _assert_matches(openapi, "post", "/api/grants/", 201, created.json())
