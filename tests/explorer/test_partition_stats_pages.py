"""The partitions page and API read a snapshot's partition statistics file when it has one,
say where their numbers come from and whether the statistics are current, stale or missing;
the ``compute_partition_stats`` task (queued from the Actions page) writes the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client

from explorer.demo import add_demo_changes, session_rows
from explorer.models import TaskRun
from floe.catalog.filesystem import FileSystemCatalog
from floe.maintenance.partition_stats import compute_partition_stats
from tests.explorer.tasks_support import make_table, user_with

pytestmark = pytest.mark.django_db

PAGE = "/catalogs/local/namespaces/web/tables/sessions/partitions/"
API = "/api" + PAGE


@pytest.fixture
def sessions(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    root.mkdir()
    add_demo_changes(str(root))
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return root


def _source(html: str) -> tuple[str, str]:
    m = re.search(r'id="partitions-source" data-source="([^"]+)" data-stats-file="([^"]+)"', html)
    assert m, html[:3000]
    return m.group(1), m.group(2)


def _table(root: Path) -> Any:
    return FileSystemCatalog("local", str(root)).load_table("web.sessions")


def test_numbers_come_from_the_statistics_file_when_the_snapshot_has_one(sessions: Path) -> None:
    client = Client()
    assert _source(client.get(PAGE).content.decode()) == ("manifests", "missing")
    from_manifests = client.get(API).json()
    assert from_manifests["source"] == "manifests"
    assert from_manifests["statistics_file"]["state"] == "missing"

    result = compute_partition_stats(_table(sessions))
    page = client.get(PAGE).content.decode()
    assert _source(page) == ("statistics-file", "current")
    assert result.statistics_file is not None and result.statistics_file.statistics_path in page
    assert 'id="chart-table-histogram"' not in page  # no file sizes in a statistics file
    from_file = client.get(API).json()
    assert from_file["source"] == "statistics_file"
    assert from_file["statistics_file"]["path"] == result.statistics_file.statistics_path

    def numbers(body: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
        return {p["label"]: (p["record_count"], p["file_count"], p["total_size"],
                             p["delete_file_count"]) for p in body["results"]}

    assert numbers(from_file) == numbers(from_manifests)  # the same numbers, labels and all
    assert from_file["totals"] == from_manifests["totals"]
    forced = client.get(API + "?source=manifests").json()
    assert forced["source"] == "manifests" and numbers(forced) == numbers(from_manifests)
    assert _source(client.get(PAGE + "?source=manifests").content.decode()) == (
        "manifests", "current")

    # A new snapshot: the file is an older snapshot's now.
    table = _table(sessions)
    table.append(session_rows(500, 3).append_column("referrer", pa.array(["x"] * 3)))
    page = client.get(PAGE).content.decode()
    assert _source(page) == ("manifests", "stale")
    assert "stale statistics" in page
    old = client.get(API + f"?snapshot={result.snapshot_id}").json()
    assert old["source"] == "statistics_file"  # the older snapshot still reads its file


def test_the_task_is_queued_from_the_actions_page_and_the_page_then_reads_the_file(
        sessions: Path, eager: Any) -> None:
    client = Client()
    client.force_login(user_with("mia", "maintainer"))
    actions = client.get("/catalogs/local/namespaces/web/tables/sessions/actions/")
    assert 'id="form-compute_partition_stats"' in actions.content.decode()
    response = eager(lambda: client.post(
        "/catalogs/local/namespaces/web/tables/sessions/actions/run/",
        {"kind": "compute_partition_stats", "op": "queue"}))
    assert response.status_code == 302
    run = TaskRun.objects.get()
    assert run.state == "SUCCEEDED", run.error
    assert run.result["partitions"] == 4 and run.result["committed"] is True
    assert _table(sessions).metadata.partition_statistics[0].statistics_path == \
        run.result["statistics_file"]
    assert _source(client.get(PAGE).content.decode()) == ("statistics-file", "current")


def test_an_unpartitioned_table_is_refused_before_anything_is_queued(tmp_path: Path,
                                                                    settings: Any) -> None:
    root = tmp_path / "warehouse"
    make_table(root, "ns", partition_by="")
    settings.FLOE_WAREHOUSE = str(root)
    client = Client()
    client.force_login(user_with("mia", "maintainer"))
    response = client.post("/catalogs/local/namespaces/ns/tables/events/actions/run/",
                           {"kind": "compute_partition_stats", "op": "queue"})
    assert response.status_code == 400
    assert "not partitioned" in response.content.decode()
    assert not TaskRun.objects.exists()
