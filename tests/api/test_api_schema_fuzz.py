"""The API fuzzed against its own OpenAPI schema (schemathesis over ``/api/schema/``), served by
a running server (pytest-django's ``live_server``) over a small real warehouse, as an admin
with an API token: no answer is a 5xx, every answer matches the schema (status documented,
body valid, content type declared).

Bounded to stay a test: derandomized, a few examples per operation. Path parameters that name
the warehouse's objects are fixed to its real catalog, namespace, table and snapshot, so the
generated query parameters and bodies reach the code behind them instead of stopping at a 404.

Every operation is fuzzed; none is excluded (the admin is a superuser, so deleting a grant
cannot take its rights away, and no operation deletes API tokens). Queued tasks are never run
(no worker), so nothing a generated request does changes the warehouse.

The Iceberg REST catalog under ``/iceberg/`` is fuzzed the same way against the document it
serves (``/iceberg/openapi.json``: its routes, parameters and error answers; bodies are only
"an object" there), as an admin with a bearer token, over a warehouse of its own (a valid
generated request may create a namespace). The protocol's own OpenAPI document
(rest-catalog-open-api.yaml, with the bodies' schemas) is not in the repository, so requests
and answers are not checked against the spec's models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from django.contrib.auth.models import User
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from explorer import celery_app
from tests.explorer.conftest import point_celery_at
from tests.explorer.tasks_support import make_table

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

EXAMPLES_PER_OPERATION = 3


#: What the answers must satisfy. Not schemathesis's checks of what a server should refuse
#: (negative_data_rejection...): lenient parameters (DRF ignores a page_size that is not a
#: number) are answered, not refused, by design.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, response_headers_conformance]


@pytest.fixture(scope="module")
def _warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """``local:ns.events`` (three snapshots), a branch and a tag; and the first snapshot id."""
    root = tmp_path_factory.mktemp("fuzz") / "local"
    table = make_table(root, "ns")
    first = table.snapshots()[0].snapshot_id
    table.manage_snapshots().create_branch("dev", first).create_tag("t1", first).commit()
    return root, first


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def _site_schema() -> dict[str, Any]:
    """The document ``/api/schema/`` serves (the test checks they are the same)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)  # type: ignore[no-any-return]


SCHEMA = _site_schema()
schema = schemathesis.openapi.from_dict(SCHEMA, config=SchemathesisConfig.from_dict({
    "seed": 23,
    "generation": {"max-examples": EXAMPLES_PER_OPERATION, "deterministic": True},
    "parameters": {"catalog": "local", "ns": "ns", "table": "events"},
    "phases": {"stateful": {"enabled": False}},
}))


@pytest.fixture(scope="module")
def _written(_warehouse: tuple[Path, int]) -> dict[str, int]:
    """The warehouse's files (path → size) before the first request."""
    return _files(_warehouse[0])


@pytest.fixture(scope="module")
def _broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Queued tasks go to a broker of this module's own, where no worker takes them."""
    conf = celery_app.conf
    before = (conf.broker_url, conf.task_default_queue)
    root = tmp_path_factory.mktemp("broker")
    point_celery_at(f"sqla+sqlite:///{root / 'broker.sqlite3'}", "floe-fuzz")
    yield
    point_celery_at(*before)


def _serve(root: Path, settings: Any, live_server: Any, tmp_path: Path) -> tuple[str, str]:
    """The live server's URL and an admin's API token, the ``local`` catalog at ``root``."""
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    settings.FLOE_ALLOW_ANONYMOUS = False
    admin = User.objects.create_superuser("root", "root@example.com", None)
    return live_server.url, Token.objects.create(user=admin).key


@pytest.fixture
def server(_warehouse: tuple[Path, int], _written: dict[str, int], _broker: None, settings: Any,
           live_server: Any, tmp_path: Path) -> dict[str, Any]:
    """The live server's URL, an admin's token header and the snapshot to name."""
    url, token = _serve(_warehouse[0], settings, live_server, tmp_path)
    return {"url": url, "headers": {"Authorization": f"Token {token}"},
            "snapshot_id": _warehouse[1]}


@pytest.fixture
def iceberg_server(tmp_path_factory: pytest.TempPathFactory, settings: Any, live_server: Any,
                   tmp_path: Path) -> dict[str, Any]:
    """The REST catalog's base URL and an admin's bearer header, over a warehouse of its own."""
    root = tmp_path_factory.getbasetemp() / "fuzz-iceberg" / "local"
    if not root.exists():
        make_table(root, "ns")
    url, token = _serve(root, settings, live_server, tmp_path)
    return {"url": url + "/iceberg", "headers": {"Authorization": f"Bearer {token}"}}


@schema.parametrize()
# the server, its user and token are the same for every generated request, on purpose
@hypothesis_settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
def test_every_answer_matches_the_schema(case: Any, server: dict[str, Any]) -> None:
    if "snapshot_id" in (case.path_parameters or {}):
        case.path_parameters["snapshot_id"] = server["snapshot_id"]
    case.call_and_validate(base_url=server["url"], headers=server["headers"], checks=CHECKS)


def _iceberg_document() -> dict[str, Any]:
    """What ``/iceberg/openapi.json`` serves, less the OAuth2 endpoint (form bodies, no token)
    and its security schemes (the test sends the token)."""
    from explorer.rest.services import rest_server

    return rest_server().openapi(server_url="")


ICEBERG = schemathesis.openapi.from_dict(_iceberg_document(), config=SchemathesisConfig.from_dict({
    "seed": 23,
    "generation": {"max-examples": EXAMPLES_PER_OPERATION, "deterministic": True},
    "parameters": {"prefix": "local", "namespace": "ns", "table": "events"},
    "phases": {"stateful": {"enabled": False}, "coverage": {"enabled": False}},
}))


@ICEBERG.parametrize()
@hypothesis_settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
def test_every_iceberg_answer_matches_what_it_serves(case: Any,
                                                     iceberg_server: dict[str, Any]) -> None:
    case.call_and_validate(base_url=iceberg_server["url"], headers=iceberg_server["headers"],
                           checks=CHECKS)


def test_unsupported_operations_are_documented(iceberg_server: dict[str, Any]) -> None:
    """Found by the fuzzing: a file-system catalog's 406 (it keeps no namespace properties)
    was not among the documented answers."""
    response = requests.post(iceberg_server["url"] + "/v1/local/namespaces/ns/properties",
                             json={}, headers=iceberg_server["headers"], timeout=30)
    assert response.status_code == 406
    doc = requests.get(iceberg_server["url"] + "/openapi.json", timeout=30).json()
    operation = doc["paths"]["/v1/{prefix}/namespaces/{namespace}/properties"]["post"]
    assert "406" in operation["responses"]


def test_the_fuzzed_schema_is_the_one_served(server: dict[str, Any]) -> None:
    served = requests.get(server["url"] + "/api/schema/?format=json", headers=server["headers"],
                          timeout=30)
    assert served.status_code == 200
    assert served.json() == json.loads(json.dumps(SCHEMA))


def test_nothing_the_fuzzing_sent_changed_the_warehouse(_warehouse: tuple[Path, int],
                                                        _written: dict[str, int]) -> None:
    assert _files(_warehouse[0]) == _written
