"""The runner creates the demo warehouse once, and redoes an interrupted creation."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from explorer import run
from tests.factories import write_table


@pytest.fixture
def fake_demo(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def create_demo_warehouse(path: str) -> None:
        calls.append(path)
        write_table(path, "demo", "t")

    module = types.ModuleType("floe.demo")
    module.create_demo_warehouse = create_demo_warehouse  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "floe.demo", module)
    return calls


def test_created_once(tmp_path: Path, fake_demo: list[str]) -> None:
    target = tmp_path / "demo-warehouse"
    run.ensure_demo_warehouse(str(target))
    run.ensure_demo_warehouse(str(target))
    assert fake_demo == [str(target)]
    assert (target / "demo" / "t" / "metadata" / "v1.metadata.json").is_file()
    assert (target / run.DEMO_COMPLETE_MARKER).is_file()


def test_an_interrupted_creation_is_redone(tmp_path: Path, fake_demo: list[str]) -> None:
    target = tmp_path / "demo-warehouse"
    (target / "half" / "written").mkdir(parents=True)
    run.ensure_demo_warehouse(str(target))
    assert fake_demo == [str(target)]
    assert not (target / "half").exists()


def test_a_demo_of_an_older_version_is_written_again(tmp_path: Path,
                                                     fake_demo: list[str]) -> None:
    """Version 1 (no version in its marker) back-dated commits: Java refused its tables."""
    target = tmp_path / "demo-warehouse"
    (target / "old" / "t").mkdir(parents=True)
    (target / run.DEMO_COMPLETE_MARKER).write_text("")
    run.ensure_demo_warehouse(str(target))
    assert fake_demo == [str(target)]
    assert not (target / "old").exists()
    assert (target / run.DEMO_COMPLETE_MARKER).read_text() == run.DEMO_VERSION
    run.ensure_demo_warehouse(str(target))
    assert fake_demo == [str(target)]


def test_the_real_demo_warehouse_lists_without_errors(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    if importlib.util.find_spec("floe.demo") is None:
        pytest.skip("floe.demo has not landed yet")
    from explorer.tables import selectors

    target = tmp_path / "demo-warehouse"
    run.ensure_demo_warehouse(str(target))
    settings.FLOE_WAREHOUSE = str(target)
    rows = selectors.table_rows(refs=selectors.catalog_table_refs(catalog="local"))
    assert rows, "the demo warehouse has no tables"
    assert [r for r in rows if r.error] == []
    assert any(r.current_snapshot_id is not None for r in rows)
