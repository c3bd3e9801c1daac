"""In headless Chromium, against the live server and a real Celery worker (SQLite broker):
a maintainer rolls a table back from its Actions page, watches the run's progress bar reach
100 %, sees the new current snapshot on the overview and its timeline, and the audit entry;
runs an expire dry run, confirms it, and the listed files are gone; a viewer sees no action
links or buttons, and a direct POST (with a valid CSRF token) is 403.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from explorer.models import TaskRun
from tests.conftest import screenshot
from tests.explorer.tasks_support import Worker, load, make_table, unique, user_with

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def site(live_server: Any, on_worker: Worker, settings: Any) -> str:
    settings.FLOE_ALLOW_ANONYMOUS = True
    return str(live_server.url)


def _session(browser: Any, site: str, username: str, role: str) -> Iterator[Any]:
    """A page signed in as a new user with ``role`` on ``local``."""
    client = Client()
    client.force_login(user_with(username, role))
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                          "url": site}])
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


@pytest.fixture
def maintainer(browser: Any, site: str) -> Iterator[Any]:
    yield from _session(browser, site, "mia", "maintainer")


@pytest.fixture
def viewer(browser: Any, site: str) -> Iterator[Any]:
    yield from _session(browser, site, "vic", "viewer")


def _table(on_worker: Worker) -> tuple[str, str]:
    ns = unique("browser")
    make_table(on_worker.warehouse, ns)
    return ns, f"/catalogs/local/namespaces/{ns}/tables/events/"


def _watch_to_the_end(page: Any) -> None:
    """On a run's page: its state badge and progress bar update live until the run finishes
    (the page then reloads with the result): wait for SUCCEEDED and the bar at 100 %."""
    from playwright.sync_api import expect

    expect(page.locator("#run-state")).to_have_text(
        re.compile("SUCCEEDED|FAILED|CANCELLED"), timeout=90_000)
    expect(page.locator("#run-state")).to_have_text("SUCCEEDED")
    expect(page.locator('#run [data-field="progress"]')).to_have_attribute("aria-valuenow",
                                                                         "100")
    expect(page.locator('#run [data-field="percent"]')).to_have_text("100%")


def test_a_maintainer_rolls_back_and_sees_progress_snapshot_and_audit(
        maintainer: Any, site: str, on_worker: Worker) -> None:
    from playwright.sync_api import expect

    page = maintainer
    ns, url = _table(on_worker)
    first = load(on_worker.warehouse, ns).snapshots()[0].snapshot_id
    page.goto(site + url)
    page.click("#tab-actions")
    page.fill("#rollback-snapshot_id", str(first))
    with page.expect_navigation(url=re.compile(r"/tasks/\d+/$")):
        page.click("#form-rollback button[value=queue]")
    expect(page.locator('#run [data-field="progress"]')).to_have_count(1)  # the live bar
    _watch_to_the_end(page)
    expect(page.locator("#result-snapshot")).to_have_text(str(first))
    screenshot(page, "task-rollback")
    page.click("#table-link")
    assert page.locator("#current-snapshot").inner_text() == str(first)
    page.wait_for_function("() => { const gd = document.getElementById('timeline');"
                           " return gd && gd._fullData; }")
    current = page.evaluate("() => document.getElementById('timeline')._fullData"
                            ".find(t => t.name === 'current').customdata[0]")
    assert current == str(first)  # the current point carries its snapshot id
    page.click("#tab-audit")
    row = page.locator('#audit tr[data-action="rollback"]')
    assert row.count() == 1 and row.get_attribute("data-actor") == "mia"
    assert row.locator('[data-col="current"]').inner_text() == str(first)
    screenshot(page, "task-audit")


def test_a_maintainer_runs_an_expire_dry_run_confirms_and_the_files_are_gone(
        maintainer: Any, site: str, on_worker: Worker) -> None:
    from playwright.sync_api import expect

    page = maintainer
    ns, url = _table(on_worker)
    table = load(on_worker.warehouse, ns)
    newest = table.current_snapshot()
    page.goto(site + url + "actions/")
    page.fill("#expire_snapshots_dry_run-older_than_ms", str(newest.timestamp_ms + 1))
    page.fill("#expire_snapshots_dry_run-retain_last", "1")
    with page.expect_navigation(url=re.compile(r"/tasks/\d+/$")):
        page.click("#form-expire_snapshots_dry_run button[value=queue]")
    _watch_to_the_end(page)
    page.wait_for_selector("#confirm-form")
    listed = page.locator("#plan-file-list li").all_inner_texts()
    assert listed and int(page.locator("#plan-files").inner_text()) == len(listed)
    assert int(page.locator("#plan-snapshots").inner_text()) == 2
    paths = [Path(f.removeprefix("file://")) for f in listed]
    assert all(p.exists() for p in paths)
    screenshot(page, "task-expire-dry-run")
    with page.expect_navigation(url=re.compile(r"/tasks/\d+/$")):
        page.click("#confirm-form button[type=submit]")
    _watch_to_the_end(page)
    expect(page.locator("#deleted-files")).to_have_text(str(len(listed)))
    assert not any(p.exists() for p in paths)
    assert [s.snapshot_id for s in load(on_worker.warehouse, ns).snapshots()] == \
        [newest.snapshot_id]
    screenshot(page, "task-expire-confirmed")


def test_a_maintainer_evolves_a_schema_a_change_per_row(
        maintainer: Any, site: str, on_worker: Worker) -> None:
    """No JSON typed: an operation per row, the row's inputs follow the operation picked,
    "Add a change" adds a row, the preview shows the new schema, then the change runs."""
    from playwright.sync_api import expect

    page = maintainer
    ns, url = _table(on_worker)
    page.goto(site + url + "actions/")
    rows = page.locator("#evolve-change-rows tbody tr")
    expect(rows).to_have_count(3)
    first, second = rows.nth(0), rows.nth(1)
    first.locator('[data-input="op"]').select_option("add-column")
    assert first.locator('[data-input="target"]').get_attribute("placeholder") \
        .startswith("column path")
    assert first.locator('[data-input="value"]').get_attribute("placeholder") \
        .startswith("type")
    first.locator('[data-input="target"]').fill("note")
    first.locator('[data-input="value"]').fill("string")
    first.locator('[data-input="position"]').fill("first")
    second.locator('[data-input="op"]').select_option("drop-column")
    expect(second.locator('[data-input="value"]')).to_be_disabled()
    expect(second.locator('[data-input="position"]')).to_be_disabled()
    expect(second.locator('[data-input="required"]')).to_be_disabled()
    second.locator('[data-input="target"]').fill("amount")
    page.click(".add-change-row")
    expect(rows).to_have_count(4)
    expect(rows.nth(3).locator(".row-number")).to_have_text("4")
    rows.nth(3).locator('[data-input="op"]').select_option("rename-column")
    rows.nth(3).locator('[data-input="target"]').fill("kind")
    rows.nth(3).locator('[data-input="value"]').fill("event_kind")
    with page.expect_navigation():
        page.click("#form-evolve button[value=preview]")
    expect(page.locator("#preview-verdict")).to_have_text("compatible")
    tree = page.locator("#preview-schema tbody tr")
    expect(tree.nth(0)).to_have_attribute("data-mark", "added")
    assert tree.all_inner_texts()[0].split()[0] == "note"
    assert "amount" not in page.locator("#preview-schema").inner_text()
    screenshot(page, "task-evolve-preview")
    # the form comes back as sent: queue it as it is
    with page.expect_navigation(url=re.compile(r"/tasks/\d+/$")):
        page.click("#form-evolve button[value=queue]")
    _watch_to_the_end(page)
    names = [f.name for f in load(on_worker.warehouse, ns).schema().fields]
    assert names == ["note", "id", "event_kind"]


def test_the_task_list_turns_a_run_into_what_happened_without_a_reload(
        maintainer: Any, site: str, on_worker: Worker) -> None:
    """tasks.js polls a queued run on a task list and, once the worker finished it, shows
    the run's outcome in words (the API's progress_text): no reload, no raw stage."""
    from playwright.sync_api import expect

    from explorer.tasks import kinds
    from explorer.tasks.jobs import run_task

    page = maintainer
    ns, url = _table(on_worker)
    valid = kinds.params_validate(kind="compact", params={
        "namespace": ns, "table": "events", "options": {"min-input-files": "2"}})
    run = TaskRun.objects.create(kind="compact", params=valid.params, catalog="local",
                                 namespace=ns, table="events")  # not sent to the worker yet
    try:
        page.goto(site + f"/tasks/?catalog=local&namespace={ns}&table=events")
        row = page.locator(f'tr[data-task-id="{run.pk}"]')
        expect(row.locator('[data-field="stage"]')).to_have_text("queued")
        page.evaluate("() => { window.stillThisPage = true; }")
    finally:
        run_task.apply_async((run.pk,))  # whatever happened: no run is left waiting
    expect(row.locator('[data-field="state"]')).to_have_text("SUCCEEDED", timeout=90_000)
    expect(row.locator('[data-field="stage"]')).to_have_text(re.compile(
        r"^Compacted 9 files \(\d+(\.\d)? KiB\) into 3 on the local engine in \d+(\.\d)? s$"))
    expect(row.locator('[data-field="percent"]')).to_have_text("100%")
    assert page.evaluate("() => window.stillThisPage === true")  # updated in place
    screenshot(page, "task-list-outcome")


def test_a_viewer_sees_no_action_buttons_and_a_direct_post_is_403(
        viewer: Any, site: str, on_worker: Worker) -> None:
    page = viewer
    ns, url = _table(on_worker)
    first = load(on_worker.warehouse, ns).snapshots()[0].snapshot_id
    # a run no worker has (the reaper fails it once its heartbeat is 4 s old)
    now = timezone.now()
    running = TaskRun.objects.create(kind="compact", catalog="local", namespace=ns,
                                     table="events", state="RUNNING", started_at=now,
                                     heartbeat_at=now,
                                     params={"namespace": ns, "table": "events"})
    page.goto(site + url)
    assert page.locator("#tab-audit").count() == 1
    assert page.locator("#tab-actions").count() == 0
    assert page.locator("form[method=post] button").count() == 1  # only "Log out"
    page.goto(site + f"/tasks/{running.pk}/")
    assert page.locator("#cancel-form").count() == 0
    assert page.goto(site + url + "actions/").status == 403
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    headers = {"X-CSRFToken": token, "Referer": site + url}
    form = page.request.post(site + url + "actions/run/", headers=headers, form={
        "kind": "rollback", "op": "queue", "snapshot_id": str(first)})
    assert form.status == 403 and "maintainer role" in form.text()
    cancel = page.request.post(site + f"/tasks/{running.pk}/cancel/", headers=headers)
    assert cancel.status == 403
    api = page.request.post(site + "/api/tasks/", headers=headers, data={
        "kind": "rollback", "params": {"namespace": ns, "table": "events",
                                       "snapshot_id": first}})
    assert api.status == 403
    assert TaskRun.objects.count() == 1
    assert TaskRun.objects.get().cancel_requested_at is None
