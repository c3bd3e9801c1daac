"""The pages that act (without a browser): a table's Actions page (forms for every kind,
previews, errors next to the form), the task list and a run's page, the table's audit page
with its CSV / JSON export, CSRF on the forms, and what viewers see (no action links or
buttons) and get (403 on every POST). Runs execute in this process (Celery's eager mode) when
the request's transaction commits; tests/browser drives the same pages with a real worker.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from explorer.models import AuditEntry, TaskRun
from explorer.tasks.kinds import action_forms
from tests.explorer.tasks_support import load, make_table, user_with

pytestmark = pytest.mark.django_db

T = "/catalogs/local/namespaces/ns/tables/events/"


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "warehouse"
    make_table(root, "ns")
    settings.FLOE_WAREHOUSE = str(root)
    settings.FLOE_ALLOW_ANONYMOUS = True
    return root


def signed_in(role: str | None, name: str | None = None, catalog: str = "local") -> Client:
    client = Client()
    client.force_login(user_with(name or f"u-{role}", role, catalog))
    return client


def test_a_maintainer_sees_a_form_for_every_table_kind(lake: Path) -> None:
    client = signed_in("maintainer")
    overview = client.get(T).content.decode()
    assert 'id="tab-actions"' in overview
    page = client.get(T + "actions/").content.decode()
    forms = action_forms()
    for form in forms:
        assert f'id="form-{form.kind}"' in page
    assert page.count("csrfmiddlewaretoken") >= len(forms)
    table_kinds = {k for k in TaskRun.Kind.values if k not in (
        "refresh_table_stats", "expire_snapshots", "remove_orphan_files")}
    assert {f.kind for f in forms} == table_kinds  # confirms come from the dry run


@pytest.mark.parametrize("who", ["anonymous", "viewer"])
def test_viewers_see_no_action_links_and_cannot_open_the_actions_page(lake: Path,
                                                                      who: str) -> None:
    client = Client() if who == "anonymous" else signed_in("viewer")
    overview = client.get(T)
    assert overview.status_code == 200
    assert b'id="tab-actions"' not in overview.content and b'id="tab-audit"' in overview.content
    assert client.get(T + "actions/").status_code == 403


def test_rollback_from_the_form_runs_and_lands_in_the_audit_page(lake: Path, eager: Any
                                                                 ) -> None:
    first = load(lake, "ns").snapshots()[0].snapshot_id
    client = signed_in("maintainer", "mia")
    response = eager(lambda: client.post(T + "actions/run/", {
        "kind": "rollback", "op": "queue", "snapshot_id": str(first)}))
    assert response.status_code == 302
    run = TaskRun.objects.get()
    assert response["Location"] == f"/tasks/{run.pk}/"
    assert run.state == "SUCCEEDED" and run.created_via == "session"
    assert load(lake, "ns").current_snapshot().snapshot_id == first
    detail = client.get(f"/tasks/{run.pk}/").content.decode()
    assert "SUCCEEDED" in detail and str(first) in detail and 'id="cancel-form"' not in detail
    assert f'id="current-snapshot"><a href="{T}snapshots/{first}/"' \
        in client.get(T).content.decode()
    audit = client.get(T + "audit/").content.decode()
    assert 'data-source="floe" data-action="rollback" data-actor="mia"' in audit
    # the table's creation and its three appends, by floe directly (not through the explorer)
    assert audit.count('data-source="external"') == 4
    rows = list(csv.DictReader(io.StringIO(b"".join(
        client.get(T + "audit/?format=csv").streaming_content).decode())))
    assert [(r["source"], r["action"], r["actor"]) for r in rows][0] == ("floe", "rollback", "mia")
    assert rows[0]["current_snapshot_id"] == str(first)
    doc = json.loads(client.get(T + "audit/?source=floe&format=json").content)
    assert [(d["action"], d["actor"], d["outcome"]) for d in doc] == [
        ("rollback", "mia", "succeeded")]
    assert client.get(T + "audit/?user=nobody").content.decode().count("data-source=") == 0


def test_expire_dry_run_then_confirm_from_the_run_page(lake: Path, eager: Any) -> None:
    table = load(lake, "ns")
    keep = table.current_snapshot().snapshot_id
    client = signed_in("maintainer", "mia")
    eager(lambda: client.post(T + "actions/run/", {
        "kind": "expire_snapshots_dry_run", "op": "queue", "retain_last": "1",
        "older_than_ms": str(table.current_snapshot().timestamp_ms + 1)}))
    dry = TaskRun.objects.get()
    assert dry.state == "SUCCEEDED", dry.error
    page = client.get(f"/tasks/{dry.pk}/").content.decode()
    assert 'id="confirm-form"' in page
    listed = dry.result["files"]["items"]
    assert listed and all(f in page for f in listed)
    assert all(Path(f.removeprefix("file://")).exists() for f in listed)
    response = eager(lambda: client.post(f"/tasks/{dry.pk}/confirm/"))
    confirm = TaskRun.objects.exclude(pk=dry.pk).get()
    assert response["Location"] == f"/tasks/{confirm.pk}/"
    assert confirm.state == "SUCCEEDED", confirm.error
    assert not any(Path(f.removeprefix("file://")).exists() for f in listed)
    assert [s.snapshot_id for s in load(lake, "ns").snapshots()] == [keep]
    page = client.get(f"/tasks/{dry.pk}/").content.decode()
    assert 'id="confirm-form"' not in page and 'id="confirmation-link"' in page
    # a second confirm of the same plan is refused, nothing queued
    assert client.post(f"/tasks/{dry.pk}/confirm/").status_code == 400
    assert TaskRun.objects.count() == 2


@pytest.mark.parametrize(("kind", "fields", "shown"), [
    ("evolve", {"changes-json": '[{"op": "add-column", "path": "note", "type": "string"}]'},
     'id="preview-verdict">compatible<'),
    ("evolve", {"changes-json": '[{"op": "require-column", "path": "kind"}]',
                "allow_incompatible": "on"}, 'id="preview-verdict">INCOMPATIBLE<'),
    ("delete_rows", {"filter": "kind = 'click'"}, 'id="preview-removed">3<'),
    ("compact", {"options": "min-input-files=2\nrewrite-all=true"}, 'id="preview-files">9<'),
])
def test_previews_show_what_would_happen_and_queue_nothing(lake: Path, kind: str,
                                                           fields: dict[str, str],
                                                           shown: str) -> None:
    client = signed_in("maintainer")
    response = client.post(T + "actions/run/", {"kind": kind, "op": "preview", **fields})
    assert response.status_code == 200
    page = response.content.decode()
    assert f'id="preview" data-kind="{kind}"' in page and shown in page
    assert not TaskRun.objects.exists()


def _rows(*rows: dict[str, str]) -> dict[str, str]:
    """The evolve form's change rows as a browser posts them (``changes-<row>-<input>``;
    the inputs a row's operation does not use are disabled, so not posted)."""
    return {f"changes-{i}-{name}": value for i, r in enumerate(rows)
            for name, value in r.items()}


def test_evolve_takes_a_change_per_row_and_previews_the_new_schema(lake: Path,
                                                                   eager: Any) -> None:
    client = signed_in("maintainer")
    rows = _rows({"op": "add-column", "target": "note", "value": "string", "doc": "free text",
                  "position": "after id"},
                 {"op": "rename-column", "target": "kind", "value": "event_kind"},
                 {"op": "add-partition-field", "target": "bucket(4, id)", "value": "id_b"},
                 {}, {})  # blank rows are ignored
    response = client.post(T + "actions/run/", {"kind": "evolve", "op": "preview", **rows})
    page = response.content.decode()
    assert response.status_code == 200, page
    assert 'id="preview-verdict">compatible<' in page
    tree = page.split('id="preview-schema"', 1)[1].split("</table>", 1)[0]
    marks = dict(re.findall(r'data-mark="(\w+)"><td[^>]*><code>(\w+)</code>', tree))
    assert marks == {"added": "note", "changed": "event_kind"}
    # the new column sits where the row put it
    assert re.findall(r"<code>(\w+)</code>", tree)[:3] == ["id", "note", "event_kind"]
    assert "id_b (bucket[4])" in page
    # the rows are shown again as posted, to edit or queue
    form = page.split('id="form-evolve"', 1)[1].split("</form>", 1)[0]
    assert 'value="free text"' in form and 'value="event_kind"' in form
    assert '<option value="rename-column" ' in form and "selected>rename-column<" in form
    assert not TaskRun.objects.exists()

    eager(lambda: client.post(T + "actions/run/", {"kind": "evolve", "op": "queue", **rows}))
    run = TaskRun.objects.get()
    assert run.state == "SUCCEEDED", run.error
    assert run.params["changes"] == [
        {"op": "add-column", "path": "note", "type": "string", "doc": "free text",
         "after": "id"},
        {"op": "rename-column", "path": "kind", "new_name": "event_kind"},
        {"op": "add-partition-field", "term": "bucket(4, id)", "name": "id_b"}]
    table = load(lake, "ns")
    assert [f.name for f in table.schema().fields][:3] == ["id", "note", "event_kind"]
    assert table.schema().find_field("note").doc == "free text"
    assert [f.name for f in table.spec().fields] == ["kind", "id_b"]


@pytest.mark.parametrize(("row", "message"), [
    ({"op": "add-column", "target": "note"}, "Change 1 (add-column): give the type"),
    ({"op": "move-column", "target": "amount"}, "Change 1 (move-column): give the position"),
    ({"op": "move-column", "target": "amount", "position": "behind id"},
     "position &#x27;behind id&#x27; is not &#x27;first&#x27;"),
    ({"op": "drop-column", "target": "amount", "value": "long"}, "takes no type or name"),
    ({"op": "rename-column", "target": "kind", "value": "x", "required": "required"},
     "only an added column can be required"),
    ({"target": "amount"}, "Change 1: pick an operation"),
    ({"op": "drop-column", "target": "nope"}, "nope"),
])
def test_a_bad_change_row_is_named_next_to_the_form(lake: Path, row: dict[str, str],
                                                    message: str) -> None:
    client = signed_in("maintainer")
    before = load(lake, "ns").metadata_location
    response = client.post(T + "actions/run/", {"kind": "evolve", "op": "queue",
                                                 **_rows(row)})
    assert response.status_code == 400
    page = response.content.decode()
    error = page.split('id="form-evolve"', 1)[1].split('class="form-error"', 1)[1]
    assert error.startswith(' data-param="changes">') and message in error.split("</p>")[0]
    assert not TaskRun.objects.exists() and load(lake, "ns").metadata_location == before


def test_a_bad_parameter_is_shown_next_to_its_form_and_nothing_is_queued(lake: Path) -> None:
    client = signed_in("maintainer")
    response = client.post(T + "actions/run/", {"kind": "rollback", "op": "queue",
                                                 "snapshot_id": "12345"})
    assert response.status_code == 400
    assert b'data-param="snapshot_id">snapshot 12345 does not exist' in response.content
    response = client.post(T + "actions/run/", {"kind": "delete_rows", "op": "queue",
                                                 "filter": "nope = 1"})
    assert response.status_code == 400 and b'data-param="filter"' in response.content
    assert b"nope" in response.content
    assert not TaskRun.objects.exists()


def test_the_forms_need_the_csrf_token(lake: Path) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_with("mia", "maintainer"))
    first = str(load(lake, "ns").snapshots()[0].snapshot_id)
    body = {"kind": "rollback", "op": "queue", "snapshot_id": first}
    assert client.post(T + "actions/run/", body).status_code == 403
    assert not TaskRun.objects.exists()
    client.get(T + "actions/")  # sets the cookie the form's token goes with
    token = client.cookies["csrftoken"].value
    assert client.post(T + "actions/run/", {**body, "csrfmiddlewaretoken": token}
                       ).status_code == 302
    assert TaskRun.objects.count() == 1


def test_the_task_list_per_table_and_per_user_with_live_rows(lake: Path, settings: Any) -> None:
    mia, bob = user_with("mia", "maintainer"), user_with("bob", "maintainer")
    mine = TaskRun.objects.create(kind="compact", catalog="local", namespace="ns",
                                  table="events", state="RUNNING", progress=40,
                                  stage="rewriting", created_by=mia)
    TaskRun.objects.create(kind="rollback", catalog="local", namespace="ns", table="other",
                           state="SUCCEEDED", progress=100, created_by=bob)
    client = Client()
    client.force_login(mia)
    everything = client.get("/tasks/").content.decode()
    assert everything.count('class="task-run"') == 2
    per_table = client.get("/tasks/?catalog=local&namespace=ns&table=events").content.decode()
    assert per_table.count('class="task-run"') == 1
    assert f'data-task-id="{mine.pk}" data-state="RUNNING" data-api="/api/tasks/{mine.pk}/"' \
        in per_table and 'aria-valuenow="40"' in per_table
    assert client.get("/tasks/?user=bob").content.decode().count('class="task-run"') == 1
    # the table page shows its running tasks, with the cancel button on the run's page
    assert f'data-task-id="{mine.pk}"' in client.get(T).content.decode()
    assert 'id="cancel-form"' in client.get(f"/tasks/{mine.pk}/").content.decode()
    viewer = signed_in("viewer")
    assert 'id="cancel-form"' not in viewer.get(f"/tasks/{mine.pk}/").content.decode()


def test_a_tables_tasks_tab_lists_its_runs_under_the_tables_navigation(lake: Path) -> None:
    mia = user_with("mia", "maintainer")
    mine = TaskRun.objects.create(kind="compact", catalog="local", namespace="ns",
                                  table="events", state="SUCCEEDED", created_by=mia)
    TaskRun.objects.create(kind="rollback", catalog="local", namespace="ns", table="other",
                           state="QUEUED", created_by=mia)
    client = signed_in("viewer")
    overview = client.get(T).content.decode()
    assert f'href="{T}tasks/" id="tab-tasks"' in overview
    page = client.get(T + "tasks/").content.decode()
    assert 'id="table-tabs"' in page and 'id="tab-tasks" aria-current="page"' in page
    assert re.findall(r'data-task-id="(\d+)"', page) == [str(mine.pk)]
    assert "<th>Table</th>" not in page and 'name="table"' not in page
    # the query filters within the table; it cannot leave it
    assert client.get(T + "tasks/?state=queued").content.decode().count('class="task-run"') == 0
    assert re.findall(r'data-task-id="(\d+)"', client.get(T + "tasks/?table=other").content
                      .decode()) == [str(mine.pk)]
    assert client.get(T + "tasks/?state=sleeping").status_code == 400


def test_cancel_from_the_run_page(lake: Path) -> None:
    run = TaskRun.objects.create(kind="compact", catalog="local", namespace="ns",
                                 table="events", state="QUEUED")
    client = signed_in("maintainer")
    assert client.post(f"/tasks/{run.pk}/cancel/").status_code == 302
    run.refresh_from_db()
    assert run.state == "CANCELLED"


def test_audit_entries_stay_append_only_whatever_the_pages(lake: Path, eager: Any) -> None:
    first = load(lake, "ns").snapshots()[0].snapshot_id
    client = signed_in("admin", "ada")
    eager(lambda: client.post(T + "actions/run/", {"kind": "set_current", "op": "queue",
                                                   "snapshot_id": str(first)}))
    entry = AuditEntry.objects.get()
    for method in ("post", "put", "patch", "delete"):
        assert getattr(client, method)(T + "audit/").status_code == 405
    assert AuditEntry.objects.get().pk == entry.pk
