"""Finding tables through the catalog, and caching their parsed metadata by file path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import floe.catalog.base
from explorer.cache import CACHE
from explorer.tables import selectors
from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import MetadataError, NotFound, ValidationError
from floe.schema import Schema
from floe.types import LONG, NestedField
from tests.factories import SnapshotSpec, write_broken_table, write_table


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    """An empty directory the ``local`` catalog points at."""
    settings.FLOE_WAREHOUSE = str(tmp_path)
    return tmp_path


def _identifiers(namespace: str | None = None) -> list[str]:
    refs = selectors.catalog_table_refs(catalog="local", namespace=namespace)
    return [r.identifier for r in refs]


def _rows() -> list[selectors.TableRow]:
    return selectors.table_rows(refs=selectors.catalog_table_refs(catalog="local"))


def test_walks_one_level_and_nested_namespaces_skipping_hidden_dirs(root: Path) -> None:
    write_table(root, "a", "t1")
    write_table(root, "a.b.c", "t2")
    (root / ".trash" / "x" / "metadata").mkdir(parents=True)
    (root / ".trash" / "x" / "metadata" / "v1.metadata.json").write_text("{}")
    (root / "not_a_table_at_top" / "metadata").mkdir(parents=True)
    # A table needs a namespace: a metadata/ directory right under the warehouse is no table.
    assert _identifiers() == ["a.t1", "a.b.c.t2"]


def test_a_table_directory_is_not_walked_into(root: Path) -> None:
    location = write_table(root, "ns", "outer")
    write_table(location, "data", "inner")  # looks like a table inside a table's directory
    assert _identifiers() == ["ns.outer"]


def test_namespace_filter_includes_children_and_unknown_namespace_is_not_found(root: Path) -> None:
    write_table(root, "a", "t1")
    write_table(root, "a.b", "t2")
    write_table(root, "ab", "t3")
    assert _identifiers("a") == ["a.t1", "a.b.t2"]
    with pytest.raises(NotFound, match="namespace 'zz' does not exist in catalog 'local'"):
        _identifiers("zz")
    with pytest.raises(ValidationError, match="invalid namespace"):
        _identifiers("a..b")


def test_namespaces_are_the_catalogs_nested_ones_too_with_their_own_tables(root: Path) -> None:
    write_table(root, "a", "t1")
    write_table(root, "a", "t0")
    write_table(root, "a.b", "t2")
    write_table(root, "x.y", "t3")  # x holds no table itself: still a namespace
    rows = selectors.catalog_namespaces(catalog="local")
    assert [(n.name, n.table_count) for n in rows] == [("a", 2), ("a.b", 1), ("x", 0), ("x.y", 1)]


def test_metadata_is_parsed_once_per_file_and_a_new_commit_is_seen(root: Path) -> None:
    write_table(root, "ns", "t", [SnapshotSpec(1, 10, 100)])
    for _ in range(3):
        (row,) = _rows()
    assert row.records == 10
    assert CACHE.metadata.misses == 1
    assert [k[0] for k in CACHE.metadata.keys()] == [row.metadata_location]
    assert Path(row.metadata_location or "").name == "v2.metadata.json"

    # A commit writes a new metadata file: a new key, read once, the old entry stays valid.
    shutil.rmtree(root / "ns" / "t")
    write_table(root, "ns", "t", [SnapshotSpec(1, 10, 100), SnapshotSpec(1, 5, 50)])
    (row,) = _rows()
    assert row.records == 15
    assert [Path(k[0]).name for k in CACHE.metadata.keys()] == ["v2.metadata.json",
                                                              "v3.metadata.json"]
    assert CACHE.metadata.misses == 2


def test_a_commit_by_floe_shows_on_the_next_load(root: Path) -> None:
    schema = Schema(NestedField(1, "id", LONG, required=True))
    floe_catalog = FileSystemCatalog("writer", str(root))
    floe_catalog.create_namespace("ns")
    floe_catalog.create_table("ns.t", schema)
    before = selectors.table_load(catalog="local", namespace="ns", name="t")
    assert before.current_snapshot() is None
    floe_catalog.load_table("ns.t").append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    after = selectors.table_load(catalog="local", namespace="ns", name="t")
    assert after.metadata_location != before.metadata_location
    assert after.current_snapshot() is not None
    assert after.current_snapshot().summary["total-records"] == "2"  # type: ignore[union-attr]
    # the same metadata file is parsed once; each load is a handle of its own (a commit
    # refreshes the handle it was made on)
    again = selectors.table_load(catalog="local", namespace="ns", name="t")
    assert again is not after and again.metadata is after.metadata


def test_the_cache_is_bounded(root: Path, settings: Any) -> None:
    settings.FLOE_METADATA_CACHE_SIZE = 2
    for i in range(4):
        write_table(root, "ns", f"t{i}")
    assert all(r.error is None for r in _rows())
    assert len(CACHE.metadata) == 2


def test_an_unexpected_exception_becomes_an_error_row(root: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_table(root, "ns", "t")

    def boom(data: bytes, location: str) -> None:
        raise KeyError("schemas")

    monkeypatch.setattr(floe.catalog.base, "parse_metadata", boom)
    (row,) = _rows()
    assert row.error is not None and "v1.metadata.json: KeyError" in row.error


def test_table_load_raises_the_domain_errors(root: Path) -> None:
    write_broken_table(root, "ns", "bad")
    with pytest.raises(NotFound, match="table ns.absent does not exist in catalog 'local'"):
        selectors.table_load(catalog="local", namespace="ns", name="absent")
    with pytest.raises(NotFound, match="namespace 'nope' does not exist in catalog 'local'"):
        selectors.table_load(catalog="local", namespace="nope", name="t")
    with pytest.raises(NotFound, match="catalog 'hive' does not exist"):
        selectors.table_load(catalog="hive", namespace="ns", name="bad")
    with pytest.raises(ValidationError, match="invalid table name"):
        selectors.table_load(catalog="local", namespace="ns", name="..")
    with pytest.raises(MetadataError) as info:
        selectors.table_load(catalog="local", namespace="ns", name="bad")
    assert info.value.location.endswith("ns/bad/metadata/v1.metadata.json")


def test_rows_load_every_listed_table(root: Path) -> None:
    write_table(root, "ns", "t", [SnapshotSpec(2, 20, 200)])
    (row,) = _rows()
    assert (row.catalog, row.identifier, row.format_version, row.current_snapshot_id) == \
        ("local", "ns.t", 2, 1001)
    assert (row.data_files, row.records, row.files_size, row.delete_files) == (2, 20, 200, 0)
    assert row.location == str(root / "ns" / "t")
