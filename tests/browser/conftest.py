"""Headless Chromium (Debian's ``chromium``) driven by Playwright against the live server.

``FLOE_REQUIRE_BROWSER=1`` (``make test`` sets it) turns "Chromium cannot start" from a skip
into a failure. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from floe.demo import create_demo_warehouse

CHROMIUM = os.environ.get("FLOE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Playwright's sync API runs an event loop in the test thread; the test thread itself only
# sets settings, the pages are served by the live server's thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.browser)


def _unavailable(reason: str) -> None:
    if os.environ.get("FLOE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"FLOE_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    if not os.path.exists(CHROMIUM):
        _unavailable(f"{CHROMIUM} does not exist (apt-get install chromium)")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except Exception as exc:  # noqa: BLE001 - any launch failure means "no browser"
            _unavailable(f"Chromium did not start: {exc}")
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


@pytest.fixture(scope="session")
def _demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser-demo") / "warehouse"
    create_demo_warehouse(str(root))
    return root


@pytest.fixture
def site(live_server: Any, _demo_warehouse: Path, settings: Any) -> str:
    """The live server's URL, serving the demo warehouse to anonymous readers."""
    settings.FLOE_WAREHOUSE = str(_demo_warehouse)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return str(live_server.url)


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"browser-{name}.png"), full_page=True)
