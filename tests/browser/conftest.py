"""Fixtures of the browser tests: a page of the session's Chromium (``browser`` in
tests/conftest.py) and the live server serving the demo warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


@pytest.fixture
def site(live_server: Any, demo: Path) -> str:
    """The live server's URL, serving the demo warehouse (tests/conftest.py) to anonymous
    readers."""
    return str(live_server.url)
