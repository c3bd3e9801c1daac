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

The Iceberg REST catalog under ``/iceberg/`` is not fuzzed here: the protocol's own OpenAPI
document (rest-catalog-open-api.yaml) is not in the repository.
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


@pytest.fixture
def server(_warehouse: tuple[Path, int], _written: dict[str, int], _broker: None, settings: Any,
           live_server: Any, tmp_path: Path) -> dict[str, Any]:
    """The live server's URL, an admin's token header and the snapshot to name."""
    root, first = _warehouse
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    settings.FLOE_ALLOW_ANONYMOUS = False
    admin = User.objects.create_superuser("root", "root@example.com", None)
    token = Token.objects.create(user=admin).key
    return {"url": live_server.url, "headers": {"Authorization": f"Token {token}"},
            "snapshot_id": first}


@schema.parametrize()
# the server, its user and token are the same for every generated request, on purpose
@hypothesis_settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
def test_every_answer_matches_the_schema(case: Any, server: dict[str, Any]) -> None:
    if "snapshot_id" in (case.path_parameters or {}):
        case.path_parameters["snapshot_id"] = server["snapshot_id"]
    case.call_and_validate(base_url=server["url"], headers=server["headers"], checks=CHECKS)


def test_the_fuzzed_schema_is_the_one_served(server: dict[str, Any]) -> None:
    served = requests.get(server["url"] + "/api/schema/?format=json", headers=server["headers"],
                          timeout=30)
    assert served.status_code == 200
    assert served.json() == json.loads(json.dumps(SCHEMA))


def test_nothing_the_fuzzing_sent_changed_the_warehouse(_warehouse: tuple[Path, int],
                                                        _written: dict[str, int]) -> None:
    assert _files(_warehouse[0]) == _written
