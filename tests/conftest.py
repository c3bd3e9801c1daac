"""Fixtures shared by the explorer, API and browser tests: warehouses the ``local`` catalog
points at, and explorer state that never leaks from one test into the next.

Nothing here imports the explorer unless a test uses it, so the floe tests stay free of it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

# The persistent manifest cache (floe.scan.manifest_store) stays off in tests, and so in the
# processes they start: many tests rewrite a manifest in place to check what a reader makes
# of it, which a cache keyed by path and length would answer from an earlier read. Its own
# tests (tests/floe/test_manifest_store.py) turn it on in directories of their own.
os.environ.setdefault("FLOE_MANIFEST_CACHE", "off")

from tests.factories import (
    HistoryTable,
    SnapshotSpec,
    write_broken_table,
    write_history_table,
    write_table,
)
# Real object stores (S3: SeaweedFS with its Iceberg REST catalog, moto; Azure Blob: Azurite;
# GCS: fake-gcs-server), started by the session when a test asks for them; their facts and the
# DuckDB / PyIceberg helpers are in that module.
from tests.object_store import azurite, fake_gcs, moto_s3, seaweedfs  # noqa: F401 - fixtures
from tests.postgres import fresh_postgres_database


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_catalog_file(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The explorer reads ``~/.floe/catalogs.toml`` by default; tests see only the catalogs
    they configure (an empty catalog file unless FLOE_CATALOGS is set)."""
    from django.conf import settings

    if not settings.FLOE_CATALOGS:
        empty = tmp_path_factory.mktemp("catalogs") / "none.toml"
        empty.write_text("")
        settings.FLOE_CATALOGS = str(empty)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Before any fixture's teardown (a test database emptied, a server stopped): the health
    rows of the test's REST commits are written (explorer.rest.services.HEALTH)."""
    services = sys.modules.get("explorer.rest.services")
    if services is not None:
        assert services.HEALTH.flush(60), "REST commits' health rows still unwritten after 60 s"
    yield


@pytest.fixture(autouse=True)
def _fresh_explorer_state() -> Iterator[None]:
    """Each test starts with the explorer's cache empty and ends with its catalogs closed
    (a SQL catalog holds database connections)."""
    if "explorer.cache" in sys.modules:
        sys.modules["explorer.cache"].clear()
    yield
    if "explorer.catalogs" in sys.modules:
        sys.modules["explorer.catalogs"].close_catalogs()
    if "explorer.cache" in sys.modules:
        sys.modules["explorer.cache"].clear()


@pytest.fixture
def warehouse(tmp_path: Path, settings: Any) -> Path:
    """A warehouse with three readable tables (one v1, one empty, one nested namespace) and a
    broken one; the ``local`` catalog points at it."""
    root = tmp_path / "warehouse"
    write_table(root, "sales", "orders", [SnapshotSpec(2, 100, 2048), SnapshotSpec(1, 50, 1000, 1)])
    write_table(root, "sales", "refunds", [SnapshotSpec(1, 7, 512)], format_version=1)
    write_table(root, "staging", "empty_table")
    write_table(root, "lake.raw", "events", [SnapshotSpec(3, 3000, 90_000)])
    write_broken_table(root, "staging", "broken")
    settings.FLOE_WAREHOUSE = str(root)
    return root


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo warehouse `make run` serves (explorer.demo), built once per session; tests
    only read it (one that changes a demo table builds its own)."""
    from explorer.demo import create_demo

    root = tmp_path_factory.mktemp("demo") / "warehouse"
    create_demo(str(root))
    return root


@pytest.fixture
def demo(demo_warehouse: Path, settings: Any) -> Path:
    """The ``local`` catalog at the demo warehouse, readable anonymously (as `make run`)."""
    settings.FLOE_WAREHOUSE = str(demo_warehouse)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return demo_warehouse


@pytest.fixture(scope="module")
def _history_built(tmp_path_factory: pytest.TempPathFactory) -> HistoryTable:
    """Written once per module: the tests that change files use ``fresh_history``."""
    return write_history_table(tmp_path_factory.mktemp("warehouse"))


@pytest.fixture
def history(_history_built: HistoryTable, settings: Any) -> HistoryTable:
    """``shop.orders`` with a history (tests.factories.write_history_table), read-only, in
    the warehouse of the ``local`` catalog."""
    settings.FLOE_WAREHOUSE = str(Path(_history_built.location).parent.parent)
    return _history_built


@pytest.fixture
def fresh_history(tmp_path: Path, settings: Any) -> HistoryTable:
    """Like ``history``, written for this test alone (it may damage it)."""
    root = tmp_path / "warehouse"
    root.mkdir()
    settings.FLOE_WAREHOUSE = str(root)
    return write_history_table(root)


# -- PostgreSQL ---------------------------------------------------------------------------
# Found at ``FLOE_TEST_POSTGRES_URL`` (an SQLAlchemy URL of a database we may ``CREATE DATABASE``
# from), by default postgresql+psycopg://postgres@127.0.0.1:5432/postgres (scripts/test.sh makes
# sure it runs there). With ``FLOE_REQUIRE_POSTGRES=1`` an unreachable server fails the tests
# that need it; otherwise they skip.

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a fresh, empty database (``floe_test_<random>``), dropped at the end."""
    admin_url = make_url(os.environ.get("FLOE_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL))
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as e:  # noqa: BLE001 - any reason PostgreSQL is unusable is the same here
        why = f"PostgreSQL at {admin_url.render_as_string(hide_password=True)}: {e}"
        if os.environ.get("FLOE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"FLOE_REQUIRE_POSTGRES=1 but {why}", pytrace=False)
        pytest.skip(why)
    admin.dispose()
    with fresh_postgres_database(admin_url) as url:
        yield url.render_as_string(hide_password=False)


# -- Headless Chromium ----------------------------------------------------------------------
# Debian's ``chromium`` driven by Playwright, one per test session, for every browser test
# (tests/browser, tests/explorer, tests/interop): Playwright's sync API allows one instance
# per thread. ``FLOE_REQUIRE_BROWSER=1`` (``make test`` sets it) turns "Chromium cannot
# start" from a skip into a failure. Screenshots go to ``test-artifacts/``.

CHROMIUM = os.environ.get("FLOE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def browser_unavailable(reason: str) -> None:
    if os.environ.get("FLOE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"FLOE_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """The session's headless Chromium (a Playwright ``Browser``)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("the playwright package is not installed")
    if not os.path.exists(CHROMIUM):
        browser_unavailable(f"{CHROMIUM} does not exist (apt-get install chromium)")
    # Playwright's sync API runs an event loop in the test thread; the test thread itself
    # only sets settings and rows, the pages are served by the live server's thread.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except Exception as exc:  # noqa: BLE001 - any launch failure means "no browser"
            browser_unavailable(f"Chromium did not start: {exc}")
        yield b
        b.close()


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save the page as ``test-artifacts/browser-<name>.png``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"browser-{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
