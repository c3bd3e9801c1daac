"""No secret of a catalog's configuration is ever shown: catalogs configured with
recognisable secrets (S3 keys and session tokens, ADLS and GCS keys, a REST credential, a
password in a SQL URI, from ``${VAR}`` and literal) fail in every way they can (credentials
refused by the store, by the database and by the REST catalog, an endpoint that does not
answer, an unknown option), through the ``floe`` command and through the explorer (pages,
API, a task that fails, the audit entry it leaves), with every log record captured at DEBUG;
no secret appears in any of it, and each failure is one line naming its catalog."""

from __future__ import annotations

import html
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client
from sqlalchemy.engine import make_url

from explorer.tasks import services
from explorer.tasks.runtime import execute
from floe.catalog.config import load_catalogs
from floe.catalog.sql import SqlCatalog
from floe.cli import main as floe_cli
from floe.io import FileIO
from floe.schema import Schema
from floe.types import LONG, NestedField
from tests.explorer.tasks_support import client_for, user_with
from tests.factories import SnapshotSpec, write_table
from tests.object_store import SeaweedFS, unique_name

pytestmark = [pytest.mark.objectstore, pytest.mark.django_db]

SCHEMA = Schema(NestedField(1, "id", LONG, required=True))

S3_WRONG = "s3-WRONG-SECRET-5f2a9c17"
S3_UNREACHABLE = "s3-UNREACH-SECRET-0b7e44"
SESSION_TOKEN = "s3-SESSION-TOKEN-91c3aa"
ADLS_KEY = "adls-ACCOUNT-KEY-3e8d1f"
GCS_TOKEN = "gcs-OAUTH2-TOKEN-6a0c2d"
PG_PASSWORD = "pg-PASSWORD-SECRET-c4d5"
OPTION_TOKEN = "opt-TOKEN-SECRET-77aa01"
REST_SECRET = "rest-CLIENT-SECRET-2b9f"
YAML_PASSWORD = "yaml-PASSWORD-SECRET-e1f0"
GLUE_SECRET = "glue-CLIENT-SECRET-4d4d"
YAML_TOKEN = "yaml-TOKEN-SECRET-8c8c"
SECRETS = (S3_WRONG, S3_UNREACHABLE, SESSION_TOKEN, ADLS_KEY, GCS_TOKEN, PG_PASSWORD,
           OPTION_TOKEN, REST_SECRET, YAML_PASSWORD, GLUE_SECRET, YAML_TOKEN)
#: What goes wrong with each: from floe's catalog file, then from PyIceberg's .pyiceberg.yaml
#: and variables.
WHY = {"s3bad": "access denied", "unreach": "s3://floe-plain/nothing-here",
       "pgbad": 'role "floe_no_such_role" does not exist', "badopt": "unknown option 'token'",
       "restbad": "refused the credential", "yamlodd": "cannot infer the catalog type",
       "yamlglue": "does not support glue catalogs", "yamlrest": "Connection refused"}
BROKEN = tuple(WHY)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Setup:
    config: Path
    right: str  # the catalog file with the right S3 secret for s3bad
    wrong: str  # the same with S3_WRONG
    snapshot_id: int
    seen: list[str] = field(default_factory=list)  # every text shown anywhere

    def use(self, body: str) -> None:
        self.config.write_text(body)


@pytest.fixture
def setup(tmp_path: Path, seaweedfs: SeaweedFS, postgres_url: str, settings: Any,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    write_table(tmp_path / "local", "fs", "t", [SnapshotSpec(1, 5, 50)])
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    settings.FLOE_ALLOW_ANONYMOUS = True
    monkeypatch.setenv("FLOE_WAREHOUSE", str(tmp_path / "local"))
    # a table in a bucket, behind a SQL catalog, written with the right credentials
    uri = f"sqlite:///{tmp_path / 's3cat.db'}"
    warehouse = f"s3://{seaweedfs.bucket}/{unique_name('secrets')}"
    with SqlCatalog("s3bad", uri, warehouse, FileIO(seaweedfs.s3_properties())) as right:
        right.create_namespace("db")
        table = right.create_table("db.t", SCHEMA)
        table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
        snapshot_id = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    monkeypatch.setenv("FLOE_TEST_S3_SECRET", S3_WRONG)
    monkeypatch.setenv("FLOE_TEST_PG_PASSWORD", PG_PASSWORD)
    pg = make_url(postgres_url).set(username="floe_no_such_role", password="PW")
    pg_uri = pg.render_as_string(hide_password=False).replace(":PW@",
                                                              ":${FLOE_TEST_PG_PASSWORD}@")
    endpoint = seaweedfs.endpoint
    common = f"""
[catalogs.unreach]
type = "filesystem"
warehouse = "s3://{seaweedfs.bucket}/nothing-here"
"s3.endpoint" = "http://127.0.0.1:{closed_port()}"
"s3.access-key-id" = "{seaweedfs.access_key}"
"s3.secret-access-key" = "{S3_UNREACHABLE}"
"s3.session-token" = "{SESSION_TOKEN}"
"s3.connect-timeout" = "1"
"adls.account-key" = "{ADLS_KEY}"
"gcs.oauth2.token" = "{GCS_TOKEN}"

[catalogs.pgbad]
type = "sql"
uri = "{pg_uri}"
warehouse = "{tmp_path / 'pg-wh'}"

[catalogs.badopt]
type = "sql"
uri = "sqlite:///{tmp_path / 'opt.db'}"
token = "{OPTION_TOKEN}"

[catalogs.restbad]
type = "rest"
uri = "{seaweedfs.catalog_uri}"
warehouse = "{seaweedfs.warehouse}"
credential = "{seaweedfs.access_key}:{REST_SECRET}"
oauth2-server-uri = "{seaweedfs.token_url}"
"""
    s3bad = f"""
[catalogs.s3bad]
type = "sql"
uri = "{uri}"
warehouse = "{warehouse}"
"s3.endpoint" = "{endpoint}"
"s3.access-key-id" = "{seaweedfs.access_key}"
"s3.secret-access-key" = "{{secret}}"
"s3.region" = "{seaweedfs.region}"
"s3.path-style-access" = "true"
"""
    pyiceberg_home = tmp_path / "pyiceberg-home"
    pyiceberg_home.mkdir()
    (pyiceberg_home / ".pyiceberg.yaml").write_text(f"""catalog:
  yamlodd:
    uri: mysql://someone:{YAML_PASSWORD}@db.internal/iceberg
  yamlglue:
    type: glue
    client.secret-access-key: {GLUE_SECRET}
""")
    monkeypatch.setenv("PYICEBERG_HOME", str(pyiceberg_home))
    monkeypatch.setenv("PYICEBERG_CATALOG__YAMLREST__URI", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("PYICEBERG_CATALOG__YAMLREST__TOKEN", YAML_TOKEN)
    # rest.client.max-retries: fail at once (GETs to a closed port retry with backoff)
    monkeypatch.setenv("PYICEBERG_CATALOG__YAMLREST__REST__CLIENT__MAX_RETRIES", "0")
    config = tmp_path / "catalogs.toml"
    settings.FLOE_CATALOGS = str(config)
    monkeypatch.setenv("FLOE_CATALOGS", str(config))
    yield Setup(config, s3bad.replace("{secret}", seaweedfs.secret_key) + common,
                s3bad.replace("{secret}", "${FLOE_TEST_S3_SECRET}") + common, snapshot_id)


def _show(setup: Setup, client: Client, url: str) -> int:
    response = client.get(url)
    setup.seen.append(html.unescape(response.content.decode()))
    return int(response.status_code)


def test_no_secret_in_any_message_page_answer_audit_entry_or_log(
        setup: Setup, seaweedfs: SeaweedFS, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    # a task submitted while the credentials were right, run after they changed
    setup.use(setup.right)
    mia = user_with("mia", "maintainer", "s3bad")
    run = services.task_submit(kind="tag_create", params={
        "catalog": "s3bad", "namespace": "db", "table": "t", "name": "v1",
        "snapshot_id": setup.snapshot_id}, user=mia)
    setup.use(setup.wrong)
    configs = load_catalogs()
    setup.seen += [repr(configs), str(configs), repr(list(configs.values()))]

    # the command line: one line naming the catalog, exit != 0
    for name in BROKEN:
        for args in (["describe", f"{name}:db.t"], ["snapshots", f"{name}:db.t", "--json"]):
            assert floe_cli(args) != 0, args
            out, err = capsys.readouterr()
            setup.seen += [out, err]
            assert err.count("\n") == 1 and f"catalog '{name}'" in err, (args, err)
            assert WHY[name] in err, (args, err)
    assert floe_cli(["describe", "local:fs.t"]) == 0  # the others still work
    setup.seen += list(capsys.readouterr())

    execute(run.pk, threaded=False)
    run.refresh_from_db()
    assert run.state == "FAILED" and "catalog 's3bad'" in run.error, run.error

    client = Client()
    for name in BROKEN:
        for url in (f"/catalogs/{name}/", f"/catalogs/{name}/namespaces/db/",
                    f"/catalogs/{name}/namespaces/db/tables/t/",
                    f"/catalogs/{name}/namespaces/db/tables/t/snapshots/",
                    f"/api/catalogs/{name}/", f"/api/catalogs/{name}/namespaces/",
                    f"/api/catalogs/{name}/namespaces/db/tables/",
                    f"/api/catalogs/{name}/namespaces/db/tables/t/"):
            status = _show(setup, client, url)
            assert status < 500 or status == 503, (url, status, setup.seen[-1][:500])
        # the catalog's own pages say it is unavailable
        assert _show(setup, client, f"/api/catalogs/{name}/namespaces/db/tables/t/") == 503, \
            setup.seen[-1][:500]
    for url in ("/", "/api/catalogs/", f"/tasks/{run.pk}/", "/tasks/"):
        assert _show(setup, client, url) == 200, url
    # the table's audit page: its catalog is unavailable now (503), but not the whole site
    assert _show(setup, client, "/catalogs/s3bad/namespaces/db/tables/t/audit/") in (200, 503)
    api = client_for(mia)
    for url in (f"/api/tasks/{run.pk}/", "/api/tasks/", "/api/audit/",
                "/api/catalogs/s3bad/namespaces/db/tables/t/audit/"):
        response = api.get(url)
        setup.seen.append(response.content.decode())
    assert "catalog 's3bad'" in setup.seen[-2]  # the audit entry of the failed run
    assert _show(setup, client, "/catalogs/local/namespaces/fs/tables/t/") == 200

    setup.seen += [caplog.text] + [str(r.__dict__) for r in caplog.records]
    setup.seen += list(capsys.readouterr())
    everything = "\n".join(setup.seen)
    for secret in (*SECRETS, seaweedfs.secret_key):
        assert secret not in everything, (secret, _around(everything, secret))


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    return text[max(0, at - 300): at + 100]
