"""floe.inspect.moved_from: a table whose metadata file is not where its metadata's location
keeps it was moved or copied without rewriting its metadata (issue 19, point 14)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog, directory_table
from floe.inspect import moved_from
from floe.schema import Schema
from floe.types import LONG, NestedField


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    catalog = FileSystemCatalog("c", str(tmp_path / "a"))
    t = catalog.create_table("db.t", Schema(NestedField(1, "id", LONG, required=True)))
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    return tmp_path / "a" / "db" / "t"


def test_a_table_where_its_metadata_says_it_is(table_dir: Path) -> None:
    t = directory_table(str(table_dir))
    assert moved_from(t.metadata, t.metadata_location) is None
    assert moved_from(t.metadata, "file://" + t.metadata_location) is None
    spark_style = dataclasses.replace(t.metadata, location="file:" + str(table_dir))
    assert moved_from(spark_style, t.metadata_location) is None


def test_a_copied_or_moved_table_names_where_it_was(table_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "b" / "db" / "t"
    shutil.copytree(table_dir, copy)
    t = directory_table(str(copy))
    assert moved_from(t.metadata, t.metadata_location) == str(table_dir)


def test_metadata_kept_where_write_metadata_path_says(table_dir: Path, tmp_path: Path) -> None:
    t = directory_table(str(table_dir))
    elsewhere = tmp_path / "meta"
    md = dataclasses.replace(t.metadata, properties={
        **t.metadata.properties, "write.metadata.path": f"file:{elsewhere}"})
    assert moved_from(md, f"{elsewhere}/v3.metadata.json") is None
    assert moved_from(md, t.metadata_location) == str(table_dir)
