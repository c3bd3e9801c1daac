"""Issue 19, point 14: the scan plan's delete-file counts agree with the files it lists on a
v3 table whose deletes Spark wrote as deletion vectors (one Puffin file holding a vector for
each of several data files): ``floe plan``'s funnel and the explorer's plan page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from floe.catalog.filesystem import directory_table
from floe.scan import plan_files

pytestmark = pytest.mark.django_db

DELETED = (1, 3, 5, 7)


@pytest.fixture(scope="module")
def dv_table(oracle: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``db.t``, v3, partitioned by s, two appends, then a merge-on-read DELETE of four rows
    in three partitions (four deletion vectors in one Puffin file)."""
    warehouse = tmp_path_factory.mktemp("dv-warehouse")
    oracle.add_catalog("dv", warehouse)
    oracle.sql([
        "CREATE TABLE dv.db.t (id bigint, s string) USING iceberg PARTITIONED BY (s) "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')",
        "INSERT INTO dv.db.t VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, 'b'), (5, 'c'), (6, 'c')",
        "INSERT INTO dv.db.t VALUES (7, 'a'), (8, 'b'), (9, 'c')",
        f"DELETE FROM dv.db.t WHERE id IN {DELETED}",
    ])
    return warehouse


def _dvs(location: Path) -> tuple[Any, list[Any]]:
    table = directory_table(str(location))
    plan = plan_files(table.io, table.metadata, explain=True, cache=None)
    applied = [(t.file_path, d.path, d.data_file.content_offset)
               for t in plan.tasks for d in t.delete_files]
    return plan, applied


def test_the_funnel_counts_each_deletion_vector(dv_table: Path) -> None:
    plan, applied = _dvs(dv_table / "db" / "t")
    assert len(applied) == len(DELETED)  # one vector for each data file with a deleted row
    assert len({path for _, path, _ in applied}) == 1  # all in one Puffin file
    assert plan.funnel.delete_files_total == len(DELETED)
    assert plan.funnel.delete_files_matched == len(DELETED)


def test_the_plan_page_counts_the_delete_files_it_lists(dv_table: Path, settings: Any) -> None:
    settings.FLOE_WAREHOUSE = str(dv_table)
    settings.FLOE_ALLOW_ANONYMOUS = True
    page = Client().get("/catalogs/local/namespaces/db/tables/t/plan/?files=all")
    assert page.status_code == 200
    html = page.content.decode()
    matched = re.search(r'data-stage="delete files matched">([\d,]+)<', html)
    assert matched
    files = re.search(r'<table class="data" id="files">(.*?)</table>', html, re.S)
    assert files
    rows = re.findall(r"<tr data-kept.*?</tr>", files.group(1), re.S)
    listed_dvs = [r for r in rows if re.search(r"<td>position_deletes</td>", r)]
    applied = sum(len(re.findall(r'<div class="mono cut"', r)) for r in rows)
    assert int(matched.group(1)) == len(listed_dvs) == applied == len(DELETED)
