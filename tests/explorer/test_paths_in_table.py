"""Issue 19, point 9: the ``in_table`` filter the file, manifest and plan tables show paths
with (the browser half is tests/browser/test_long_paths.py)."""

from __future__ import annotations

import pytest

from explorer.templatetags.formats import in_table


@pytest.mark.parametrize(("path", "location", "shown"), [
    ("/w/db/t/data/a.parquet", "/w/db/t", "data/a.parquet"),
    ("/w/db/t/data/a.parquet", "/w/db/t/", "data/a.parquet"),
    # Spark's Hadoop catalog: file:/ paths under a file:/ or plain location
    ("file:/w/db/t/metadata/m.avro", "file:/w/db/t", "metadata/m.avro"),
    ("file:///w/db/t/metadata/m.avro", "/w/db/t", "metadata/m.avro"),
    ("/w/db/t/metadata/m.avro", "file:/w/db/t", "metadata/m.avro"),
    # outside the table's location (a relocated or shared file): the whole path
    ("/w/db/t2/data/a.parquet", "/w/db/t", "/w/db/t2/data/a.parquet"),
    ("/w/db/t", "/w/db/t", "/w/db/t"),
    ("s3://b/db/t/data/a.parquet", "s3://b/db/t", "data/a.parquet"),
    ("s3://b/db/t/data/a.parquet", "/b/db/t", "s3://b/db/t/data/a.parquet"),
    (None, "/w", ""),
])
def test_a_path_is_shown_relative_to_the_table_only_inside_it(
        path: str | None, location: str, shown: str) -> None:
    assert in_table(path, location) == shown
