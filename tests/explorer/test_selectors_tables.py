"""Finding tables in a warehouse and caching their parsed metadata by file path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from explorer import selectors
from explorer.catalogs import Catalog
from explorer.testing import SnapshotSpec, write_broken_table, write_table
from floe.errors import MetadataError, NotFound


def _catalog(root: Path) -> Catalog:
    return Catalog(name="local", type="filesystem", warehouse=str(root))


def test_walks_one_level_and_nested_namespaces_skipping_hidden_dirs(tmp_path: Path) -> None:
    write_table(tmp_path, "a", "t1")
    write_table(tmp_path, "a.b.c", "t2")
    (tmp_path / ".trash" / "x" / "metadata").mkdir(parents=True)
    (tmp_path / "_temporary" / "y" / "metadata").mkdir(parents=True)
    (tmp_path / "not_a_table_at_top" / "metadata").mkdir(parents=True)
    refs = selectors.catalog_table_refs(catalog=_catalog(tmp_path))
    # A table needs a namespace: a metadata/ directory right under the warehouse is no table.
    assert [r.identifier for r in refs] == ["a.t1", "a.b.c.t2"]


def test_a_table_directory_is_not_walked_into(tmp_path: Path) -> None:
    location = write_table(tmp_path, "ns", "outer")
    write_table(location, "data", "inner")  # looks like a table inside a table's directory
    refs = selectors.catalog_table_refs(catalog=_catalog(tmp_path))
    assert [r.identifier for r in refs] == ["ns.outer"]


def test_namespace_filter_includes_children_and_unknown_namespace_is_not_found(tmp_path: Path) -> None:
    write_table(tmp_path, "a", "t1")
    write_table(tmp_path, "a.b", "t2")
    write_table(tmp_path, "ab", "t3")
    refs = selectors.catalog_table_refs(catalog=_catalog(tmp_path), namespace="a")
    assert [r.identifier for r in refs] == ["a.t1", "a.b.t2"]
    with pytest.raises(NotFound, match="namespace 'zz'"):
        selectors.catalog_table_refs(catalog=_catalog(tmp_path), namespace="zz")


def test_namespaces_count_their_own_tables(tmp_path: Path) -> None:
    write_table(tmp_path, "a", "t1")
    write_table(tmp_path, "a", "t0")
    write_table(tmp_path, "a.b", "t2")
    rows = selectors.catalog_namespaces(catalog=_catalog(tmp_path))
    assert [(n.name, n.table_count) for n in rows] == [("a", 2), ("a.b", 1)]


def test_metadata_is_parsed_once_per_file_and_a_new_commit_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_table(tmp_path, "ns", "t", [SnapshotSpec(1, 10, 100)])
    parsed: list[str] = []
    real = selectors._load_metadata
    monkeypatch.setattr(selectors, "_load_metadata", lambda loc: parsed.append(loc) or real(loc))
    catalog = _catalog(tmp_path)
    for _ in range(3):
        (row,) = selectors.table_rows(refs=selectors.catalog_table_refs(catalog=catalog))
    assert row.records == 10
    assert [Path(p).name for p in parsed] == ["v2.metadata.json"]

    # A commit writes a new metadata file: a new key, read once, the old entry stays valid.
    shutil.rmtree(tmp_path / "ns" / "t")
    write_table(tmp_path, "ns", "t", [SnapshotSpec(1, 10, 100), SnapshotSpec(1, 5, 50)])
    (row,) = selectors.table_rows(refs=selectors.catalog_table_refs(catalog=catalog))
    assert row.records == 15
    assert [Path(p).name for p in parsed] == ["v2.metadata.json", "v3.metadata.json"]


def test_the_cache_is_bounded(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_METADATA_CACHE_SIZE = 2
    for i in range(4):
        write_table(tmp_path, "ns", f"t{i}")
    selectors.table_rows(refs=selectors.catalog_table_refs(catalog=_catalog(tmp_path)))
    assert len(selectors._metadata_cache) == 2


def test_an_unexpected_exception_becomes_an_error_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_table(tmp_path, "ns", "t")

    def boom(location: str) -> None:
        raise KeyError("schemas")

    monkeypatch.setattr(selectors, "_load_metadata", boom)
    (row,) = selectors.table_rows(refs=selectors.catalog_table_refs(catalog=_catalog(tmp_path)))
    assert row.error is not None and "v1.metadata.json: KeyError" in row.error


def test_table_get_raises_the_domain_errors(tmp_path: Path) -> None:
    write_broken_table(tmp_path, "ns", "bad")
    catalog = _catalog(tmp_path)
    with pytest.raises(NotFound):
        selectors.table_get(catalog=catalog, namespace="ns", name="absent")
    with pytest.raises(MetadataError) as info:
        selectors.table_get(catalog=catalog, namespace="ns", name="bad")
    assert info.value.location.endswith("ns/bad/metadata/v1.metadata.json")


def test_warehouse_tables_loads_every_table(tmp_path: Path) -> None:
    write_table(tmp_path, "ns", "t", [SnapshotSpec(2, 20, 200)])
    (row,) = selectors.warehouse_tables(warehouse=str(tmp_path))
    assert (row.catalog, row.identifier, row.format_version, row.current_snapshot_id) == ("local", "ns.t", 2, 1001)
    assert (row.data_files, row.records, row.files_size, row.delete_files) == (2, 20, 200, 0)
