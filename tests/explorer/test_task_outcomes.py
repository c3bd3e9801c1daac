"""A finished run's progress reads as what happened, one sentence per kind ("Compacted 9 files
(… KiB) into 3 … in 0.2 s", "Cancelled after rewriting 3 of 8 groups", "Failed: …"), the
same on the run's page, the task lists and the API's task representation; while it runs,
its stage and counts with sizes in binary units. Runs execute in this process: through the
API in Celery's eager mode, or with explorer.tasks.runtime.execute where the test needs to act
mid-run."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from explorer.models import TaskRun
from explorer.tasks import services
from explorer.tasks.kinds import KINDS
from explorer.tasks.runtime import RunContext, execute
from floe.maintenance import Progress
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db

SECONDS = r"in \d+(\.\d)? s"
KIB = r"\d+(\.\d)? KiB"


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "ns")  # three appends of three partitions (kind)
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_EXPORT_DIR = tmp_path / "exports"
    settings.FLOE_TASK_HEARTBEAT_SECONDS = 0  # in-process runs write every report
    return root


@pytest.fixture
def api() -> APIClient:
    return client_for(user_with("mia", "maintainer"))


def stage_text(page: bytes, run: TaskRun) -> str:
    """The text beside the run's progress bar, on a task page."""
    doc = page.decode()
    start = doc.index(f'data-task-id="{run.pk}"')
    found = re.search(r'data-field="stage">(.*?)</span>', doc[start:], re.S)
    assert found, doc[start:start + 500]
    return html.unescape(found.group(1)).strip()


def submit(api: APIClient, eager: Any, kind: str, **params: Any) -> TaskRun:
    response = eager(lambda: api.post("/api/tasks/", {"kind": kind, "params": {
        "namespace": "ns", "table": "events", **params}}, format="json"))
    assert response.status_code == 201, response.content
    run = TaskRun.objects.get(pk=response.json()["id"])
    assert run.state == "SUCCEEDED", run.error
    return run


def test_a_compaction_ends_saying_what_it_did_everywhere(lake: Path, api: APIClient,
                                                        eager: Any) -> None:
    run = submit(api, eager, "compact", options={"min-input-files": "2"})
    said = api.get(f"/api/tasks/{run.pk}/").json()
    assert re.fullmatch(rf"Compacted 9 files \({KIB}\) into 3 on the local engine {SECONDS}",
                        said["outcome"]), said["outcome"]
    assert said["progress_text"] == said["outcome"] and said["progress"] == 100
    listed = api.get("/api/tasks/").json()["results"][0]
    assert listed["outcome"] == said["outcome"]
    client = Client()
    client.force_login(user_with("ann", "viewer"))
    for url in (f"/tasks/{run.pk}/", "/tasks/"):
        page = client.get(url).content
        assert stage_text(page, run) == said["outcome"], url
        assert b"committing" not in page and b"starting" not in page


def test_a_result_reads_in_human_units_field_by_field(lake: Path, api: APIClient,
                                                      eager: Any) -> None:
    """The run page lists the result field by field (sizes in binary units with the exact
    count beside), and keeps the exact JSON, folded, under it."""
    run = submit(api, eager, "compact", options={"min-input-files": "2"})
    client = Client()
    client.force_login(user_with("ann", "viewer"))
    doc = html.unescape(client.get(f"/tasks/{run.pk}/").content.decode())
    facts = doc[doc.index('id="result-facts"'):doc.index("</dl>", doc.index('id="result-facts"'))]
    rewritten = run.result["rewritten_bytes_count"]
    assert rewritten > 1024
    assert re.search(r"<dt>Rewritten bytes count</dt><dd>" + KIB + rf" \({rewritten:,} bytes\)"
                     r"</dd>", facts), facts
    assert "<dt>Rewritten data files count</dt><dd>9</dd>" in facts
    snapshot = run.result["snapshot_id"]
    assert f"<dt>Snapshot id</dt><dd>{snapshot}</dd>" in facts  # an id, not a quantity
    assert f"<dt>Snapshot ids</dt><dd>{snapshot}</dd>" in facts
    assert "<dt>Failures › count</dt><dd>0</dd>" in facts
    raw = doc[doc.index('id="result-json"'):]
    assert f'"rewritten_bytes_count": {rewritten}' in raw  # the exact JSON stays, folded
    assert doc.index("<details>") < doc.index('id="result-json"')


@pytest.mark.parametrize(("kind", "params", "sentence"), [
    ("rollback", {"snapshot_id": "first"}, r"Rolled back main to snapshot {first} " + SECONDS),
    ("tag_create", {"name": "v1"}, r"Created tag v1 at snapshot {last} " + SECONDS),
    ("export", {"format": "parquet"},
     r"Exported 300 rows to ns\.events-\d+\.parquet \(" + KIB + r"\) " + SECONDS),
    ("delete_rows", {"filter": "kind = 'click'"},
     r"Deleted 100 rows from branch main \(3 data files removed\) " + SECONDS),
    ("evolve", {"changes": [{"op": "add-column", "path": "note", "type": "string"}]},
     r"Changed the schema \(now schema 1\) " + SECONDS),
    ("compute_partition_stats", {},
     r"Computed the partition statistics of snapshot {last}: 3 partitions \(\d+(\.\d)? "
     r"(B|KiB)\) " + SECONDS),
    ("expire_snapshots_dry_run", {}, r"Nothing to expire: every one of the 3 snapshot\(s\) is "
                                     r"newer than the cutoff .* " + SECONDS),
])
def test_each_kind_says_what_it_did(lake: Path, api: APIClient, eager: Any, kind: str,
                                    params: dict[str, Any], sentence: str) -> None:
    snaps = load(lake, "ns").snapshots()
    ids = {"first": snaps[0].snapshot_id, "last": snaps[-1].snapshot_id}
    run = submit(api, eager, kind, **{k: ids.get(v, v) if isinstance(v, str) else v
                                      for k, v in params.items()})
    outcome = api.get(f"/api/tasks/{run.pk}/").json()["outcome"]
    assert re.fullmatch(sentence.format(**ids), outcome), outcome


def test_a_cancelled_compaction_says_how_far_it_got(tmp_path: Path, settings: Any) -> None:
    """Cancelled (through the real cancel service) while its fourth group is rewritten: the
    run ends recorded with the groups it got through, not with the files of the group it was
    writing; while it ran, its detail showed sizes in binary units."""
    root = tmp_path / "warehouse"
    make_table(root, "ns", partition_by="bucket(8, id)")  # 8 partitions of 3 files
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_TASK_HEARTBEAT_SECONDS = 0
    mia = user_with("mia", "maintainer")
    run = services.task_submit(kind="compact", params={
        "namespace": "ns", "table": "events", "options": {"min-input-files": "2"}}, user=mia)
    seen: list[dict[str, Any]] = []

    def cancelling(ctx: RunContext) -> dict[str, Any]:
        report = ctx.on_progress

        def on_progress(progress: Progress) -> None:
            report(progress)  # written to the row (the heartbeat is due at every report)
            if progress.stage == "rewriting" and progress.done == 2:
                seen.append(client_for(mia).get(f"/api/tasks/{run.pk}/").json())
            if progress.stage == "rewriting" and progress.done == 3:  # the fourth starts
                services.task_cancel(task_run_id=run.pk, user=mia)

        ctx.on_progress = on_progress  # type: ignore[method-assign]
        return KINDS["compact"].runner(ctx)

    execute(run.pk, threaded=False, runner_for=lambda kind: cancelling)
    run.refresh_from_db()
    assert run.state == "CANCELLED"
    assert (run.stage, run.progress_done, run.progress_total) == ("rewriting", 3, 8)
    said = client_for(mia).get(f"/api/tasks/{run.pk}/").json()
    assert said["outcome"] == said["progress_text"] == "Cancelled after rewriting 3 of 8 groups"
    running = seen[0]["progress_text"]
    assert re.fullmatch(rf"rewriting 2/8 · file group 3: 3 files, {KIB}", running), running
    assert "bytes" not in running


def test_a_failed_run_says_why(lake: Path) -> None:
    table = load(lake, "ns")
    first, second, _ = (s.snapshot_id for s in table.snapshots())
    mia = user_with("mia", "maintainer")
    run = services.task_submit(kind="rollback", params={
        "namespace": "ns", "table": "events", "snapshot_id": second}, user=mia)
    table.manage_snapshots().set_current(first).commit()  # second: no longer an ancestor
    execute(run.pk, threaded=False)
    said = client_for(mia).get(f"/api/tasks/{run.pk}/").json()
    assert said["state"] == "FAILED"
    assert said["error"].startswith(f"ValidationError: cannot roll back to snapshot {second}")
    assert said["outcome"] == f"Failed: {said['error'].removeprefix('ValidationError: ')}"
    assert said["outcome"].startswith(f"Failed: cannot roll back to snapshot "
                                      f"{second}: it is not an ancestor")


def test_a_run_cancelled_in_the_queue_says_so(lake: Path) -> None:
    mia = user_with("mia", "maintainer")
    run = services.task_submit(kind="compact", params={"namespace": "ns", "table": "events"},
                               user=mia)
    services.task_cancel(task_run_id=run.pk, user=mia)
    said = client_for(mia).get(f"/api/tasks/{run.pk}/").json()
    assert said["outcome"] == "Cancelled before it started"
    page = client_for(mia).get(f"/tasks/{run.pk}/")
    assert stage_text(page.content, run) == "Cancelled before it started"


def test_a_running_run_shows_its_stage_with_sizes_for_people(lake: Path) -> None:
    run = TaskRun.objects.create(kind="compact", catalog="local", namespace="ns",
                                 table="events", state="RUNNING", stage="rewriting",
                                 progress_done=3, progress_total=36, progress=8,
                                 progress_detail="file group 4: 4 files, 536870912 bytes")
    said = client_for(user_with("mia", "viewer")).get(f"/api/tasks/{run.pk}/").json()
    assert said["outcome"] is None
    assert said["progress_text"] == "rewriting 3/36 · file group 4: 4 files, 512.0 MiB"
    client = Client()
    client.force_login(user_with("ann", "viewer"))
    assert stage_text(client.get("/tasks/").content, run) == said["progress_text"]
