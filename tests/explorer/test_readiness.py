"""``/healthz`` and ``/readyz`` in the site (explorer.readiness): answered whatever the allowed
hosts, without a login; /readyz names each catalog, ``ok`` or why not, in bounded time and
without a secret. The production processes are in test_run_prod."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.explorer.test_run_supervisor import _free_port
from tests.factories import SnapshotSpec, write_table


@pytest.fixture
def probe(settings: Any) -> Client:
    settings.ALLOWED_HOSTS = ["floe.example.com"]  # not the probe's 127.0.0.1
    return Client(HTTP_HOST="127.0.0.1:8000")


def test_healthz_answers_without_the_database(probe: Client) -> None:
    # no django_db mark: pytest-django fails any query this test makes
    response = probe.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"
    assert probe.head("/healthz").status_code == 200


@pytest.mark.django_db
def test_readyz_names_each_catalog_and_hides_passwords(
        probe: Client, tmp_path: Path, settings: Any) -> None:
    write_table(tmp_path / "local", "fs", "t", [SnapshotSpec(1, 5, 50)])
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    down = f"postgresql+psycopg://floe:pg-s3cret@127.0.0.1:{_free_port()}/floe"
    config = tmp_path / "catalogs.toml"
    config.write_text(
        f'[catalogs.good]\ntype = "sql"\nuri = "sqlite:///{tmp_path / "good.db"}"\n'
        f'warehouse = "{tmp_path / "good-wh"}"\n'
        f'\n[catalogs.down]\ntype = "sql"\nuri = "{down}"\nwarehouse = "{tmp_path / "wh"}"\n'
        f'\n[catalogs.broken]\ntype = "sql"\n')
    settings.FLOE_CATALOGS = str(config)

    response = probe.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready" and body["database"] == "ok"
    catalogs = body["catalogs"]
    assert catalogs["local"] == "ok" and catalogs["good"] == "ok"
    assert catalogs["broken"].startswith("misconfigured: ")
    assert catalogs["down"].startswith("unreachable: ")
    assert "pg-s3cret" not in response.content.decode()
    assert response["Cache-Control"] == "no-store"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An address that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.django_db
def test_a_catalog_that_does_not_answer_is_reported_in_bounded_time(
        probe: Client, tmp_path: Path, settings: Any, silent_server: str) -> None:
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    config = tmp_path / "catalogs.toml"
    config.write_text(f'[catalogs.silent]\ntype = "rest"\nuri = "{silent_server}"\n')
    settings.FLOE_CATALOGS = str(config)
    settings.FLOE_READY_TIMEOUT = 0.5

    started = time.monotonic()
    response = probe.get("/readyz")
    assert time.monotonic() - started < 5  # the REST client alone would wait 10 s, 3 times
    assert response.status_code == 503
    assert response.json()["catalogs"] == {"local": "ok",
                                           "silent": "unreachable: no answer within 0.5 s"}

    # probes while that check still waits start no other: one thread per part at most
    for _ in range(3):
        again = probe.get("/readyz")
        assert again.json()["catalogs"]["silent"] == "unreachable: no answer within 0.5 s"
    checking = [t for t in threading.enumerate() if t.name == "floe-readyz-catalogs-silent"]
    assert len(checking) == 1, checking
