"""A plan with nothing to do says why, in floe's planner's words, and offers nothing to confirm:
a compaction preview of a table already compacted, an expire or orphan-removal dry run that
finds nothing. The confirm of an empty dry run is refused (400) from the page and the API, and
nothing is queued. Sizes in the reasons are in binary units. Runs execute in this process
(Celery's eager mode)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from explorer.models import TaskRun
from floe.maintenance.compaction import compact
from floe.maintenance.partition_stats import compute_partition_stats
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db

T = "/catalogs/local/namespaces/ns/tables/events/"


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "ns")  # three appends of three partitions, all of today
    settings.FLOE_WAREHOUSE = str(root)
    return root


@pytest.fixture
def mia() -> Client:
    client = Client()
    client.force_login(user_with("mia", "maintainer"))
    return client


def text(page: bytes, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</p>', page.decode(), re.S)
    assert found, f"no #{element_id}"
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


def test_a_compaction_preview_with_nothing_to_combine_says_why(lake: Path, mia: Client
                                                               ) -> None:
    compact(load(lake, "ns"), {"min-input-files": "2"})  # one file per partition now
    page = mia.post(T + "actions/run/", {"kind": "compact", "op": "preview",
                                          "options": "min-input-files=2"})
    assert page.status_code == 200
    assert text(page.content, "preview-note") == (
        "Nothing to compact: every partition has one data file (3 partitions); nothing to "
        "combine")
    assert 'id="preview-groups">0<' in page.content.decode()
    api = client_for(user_with("ann", "maintainer")).post("/api/tasks/preview/", {
        "kind": "compact", "params": {"namespace": "ns", "table": "events",
                                      "options": {"min-input-files": "2"}}}, format="json")
    assert api.json()["note"].endswith("nothing to combine") and api.json()["group_count"] == 0
    assert not TaskRun.objects.exists()


def test_the_reason_shows_sizes_in_binary_units(lake: Path, mia: Client) -> None:
    page = mia.post(T + "actions/run/", {
        "kind": "compact", "op": "preview",
        "options": "target-file-size-bytes=1000\nmin-file-size-bytes=1\n"
                   "max-file-size-bytes=104857600"})
    note = text(page.content, "preview-note")
    assert note.startswith("Nothing to compact: every one of the 9 data file(s) is already "
                           "between min-file-size-bytes (1 bytes) and max-file-size-bytes "
                           "(100.0 MiB)"), note
    assert "104857600" not in note
    assert "(0 B) is at most" in page.content.decode()  # the engine's reason, in units too


@pytest.mark.parametrize(("kind", "fields", "reason"), [
    ("expire_snapshots_dry_run", {}, "nothing to expire: every one of the 3 snapshot(s) is "
                                     "newer than the cutoff"),
    ("remove_orphan_files_dry_run", {}, "no orphan files: none of the"),
])
def test_an_empty_dry_run_says_why_and_cannot_be_confirmed(
        lake: Path, mia: Client, eager: Any, kind: str, fields: dict[str, str],
        reason: str) -> None:
    eager(lambda: mia.post(T + "actions/run/", {"kind": kind, "op": "queue", **fields}))
    dry = TaskRun.objects.get()
    assert dry.state == "SUCCEEDED", dry.error
    assert dry.result["nothing_to_do"] is True and dry.result["note"].startswith(reason)
    page = mia.get(f"/tasks/{dry.pk}/").content
    assert text(page, "plan-empty").startswith(f"Nothing to do: {reason}")
    assert b'id="confirm-form"' not in page and b'id="plan-file-list"' not in page
    # the confirm is refused on the server too, from the page and from the API
    assert mia.post(f"/tasks/{dry.pk}/confirm/").status_code == 400
    confirm = kind.removesuffix("_dry_run")
    response = client_for(user_with("ann", "maintainer")).post("/api/tasks/", {
        "kind": confirm, "params": {"dry_run_task_id": dry.pk}}, format="json")
    assert response.status_code == 400
    message = response.json()["params"]["dry_run_task_id"][0]
    assert message.startswith(f"dry run {dry.pk} found nothing to do ({reason}")
    assert message.endswith("there is nothing to confirm")
    assert TaskRun.objects.count() == 1


def test_a_dry_run_with_work_keeps_its_confirm(lake: Path, mia: Client, eager: Any) -> None:
    table = load(lake, "ns")
    eager(lambda: mia.post(T + "actions/run/", {
        "kind": "expire_snapshots_dry_run", "op": "queue", "retain_last": "1",
        "older_than_ms": str(table.current_snapshot().timestamp_ms + 1)}))
    dry = TaskRun.objects.get()
    assert dry.result["nothing_to_do"] is False
    page = mia.get(f"/tasks/{dry.pk}/").content
    assert b'id="confirm-form"' in page and b'id="plan-empty"' not in page


def test_manifest_rewrite_and_partition_stats_previews_say_what_the_run_will_do(
        lake: Path, mia: Client) -> None:
    """The Actions page previews a manifest rewrite (its dry run: three manifests of three
    appends into one) and a compute of partition statistics (the manifests it reads; once
    computed, that there is nothing to do); nothing is queued or written."""
    before = sorted(p.name for p in (lake / "ns" / "events" / "metadata").iterdir())
    page = mia.post(T + "actions/run/", {"kind": "rewrite_manifests", "op": "preview"})
    assert page.status_code == 200
    assert 'id="preview-manifests">3 → 1<' in page.content.decode()
    assert 'id="preview-rewritten">3<' in page.content.decode()
    stats = mia.post(T + "actions/run/", {"kind": "compute_partition_stats", "op": "preview"})
    assert 'id="preview-manifests">3<' in stats.content.decode()
    assert "listing 9 files (every manifest of the snapshot)" in html.unescape(
        re.sub(r"<[^>]+>", "", stats.content.decode()))
    assert sorted(p.name for p in (lake / "ns" / "events" / "metadata").iterdir()) == before
    assert not TaskRun.objects.exists()
    compute_partition_stats(load(lake, "ns"))
    again = mia.post(T + "actions/run/", {"kind": "compute_partition_stats", "op": "preview"})
    assert "has partition statistics already" in text(again.content, "preview-note")
