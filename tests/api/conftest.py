from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer import selectors
from explorer.testing import SnapshotSpec, write_broken_table, write_table


@pytest.fixture(autouse=True)
def _fresh_metadata_cache() -> Iterator[None]:
    selectors.clear_metadata_cache()
    yield
    selectors.clear_metadata_cache()


@pytest.fixture
def warehouse(tmp_path: Path, settings) -> Path:  # type: ignore[no-untyped-def]
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
