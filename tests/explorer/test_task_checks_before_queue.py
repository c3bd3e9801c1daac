"""Every check a task would make first that needs no heavy work is made before anything is
queued, by the same floe function the run makes it with: a rollback to a snapshot that is not
an ancestor, an expiry or orphan removal with a cutoff in the future, a compaction on a tag …
are a 400 naming the parameter, from the Actions page's form as from the API, with no TaskRun
row and no message in the broker (a real SQLite broker of this test's own)."""

from __future__ import annotations

import html
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from explorer import celery_app
from explorer.models import TaskRun
from floe.errors import FloeError
from floe.maintenance.compaction_plan import plan_compaction
from floe.maintenance.expire import expire_snapshots
from floe.table import Table
from tests.explorer.conftest import point_celery_at
from tests.explorer.tasks_support import client_for, load, make_table, user_with

pytestmark = pytest.mark.django_db

DAY = 86_400_000
#: where each table of the cases is
WHERE = {"events": ("ns", "events"), "nogc": ("other", "nogc")}


def url(table: str) -> str:
    return "/catalogs/local/namespaces/{}/tables/{}/".format(*WHERE[table])


@pytest.fixture
def lake(tmp_path: Path, settings: Any) -> dict[str, int]:
    """ns.events: three appends; main set back to the first (the other two are no longer
    its ancestors), tag v1 at the first, branch ahead at the third. other.nogc: gc.enabled
    is false. Returns the snapshot ids s1, s2, s3."""
    root = tmp_path / "warehouse"
    t = make_table(root, "ns")
    s1, s2, s3 = (s.snapshot_id for s in t.snapshots())
    (t.manage_snapshots().set_current(s1).create_tag("v1", s1).create_branch("ahead", s3)
     .commit())
    make_table(root, "other", "nogc", appends=1, properties={"gc.enabled": "false"})
    settings.FLOE_WAREHOUSE = str(root)
    return {"s1": s1, "s2": s2, "s3": s3}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Callable[[], int]]:
    """Tasks go to a SQLite broker of this test's own; returns the number of messages
    waiting in its queue."""
    conf = celery_app.conf
    before = (conf.broker_url, conf.task_default_queue)
    queue = f"floe-checks-{uuid.uuid4().hex[:8]}"
    point_celery_at(f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}", queue)

    def waiting() -> int:
        with celery_app.connection_for_write() as conn:
            return int(conn.default_channel.queue_declare(queue, passive=True).message_count)

    yield waiting
    point_celery_at(*before)


def now() -> int:
    return int(time.time() * 1000)


# (kind, table, params by snapshot names "s1".. resolved per test, the parameter, its message)
CASES: list[tuple[str, str, dict[str, Any], str, str]] = [
    ("rollback", "events", {"snapshot_id": "s3"}, "snapshot_id", "is not an ancestor"),
    ("rollback", "events", {"timestamp_ms": 1}, "timestamp_ms", "at or before 1"),
    ("cherry_pick", "events", {"snapshot_id": "s1"}, "snapshot_id", "already an ancestor"),
    ("branch_fast_forward", "events", {"name": "ahead", "to": "main"}, "to",
     "is not an ancestor"),
    ("expire_snapshots_dry_run", "events", {"older_than_ms": "+day"}, "older_than_ms",
     "in the future"),
    ("expire_snapshots_dry_run", "events", {"retain_last": 0}, "retain_last", "at least 1"),
    ("expire_snapshots_dry_run", "events", {"snapshot_ids": [12345]}, "snapshot_ids",
     "snapshot 12345 does not exist"),
    ("expire_snapshots_dry_run", "events", {"snapshot_ids": ["s1"]}, "snapshot_ids",
     "still referenced by 'main', 'v1'"),
    ("expire_snapshots_dry_run", "nogc", {}, "table", "gc.enabled is false"),
    ("remove_orphan_files_dry_run", "events", {"older_than_ms": "+day"}, "older_than_ms",
     "in the future"),
    ("remove_orphan_files_dry_run", "events", {"older_than_ms": "-hour"}, "older_than_ms",
     "newer than 24 hours"),
    ("remove_orphan_files_dry_run", "nogc", {}, "table", "gc.enabled is false"),
    ("compact", "events", {"strategy": "sort"}, "sort_order", "unsorted"),
    ("compact", "events", {"sort_order": "id"}, "sort_order", "needs strategy 'sort'"),
    ("compact", "events", {"branch": "v1"}, "branch", "tag, not a branch"),
    ("delete_rows", "events", {"filter": "id = 1", "branch": "v1"}, "branch",
     "tag, not a branch"),
    ("rewrite_manifests", "events", {"sort_by": "nope"}, "sort_by", "'nope'"),
    ("rewrite_manifests", "events", {"branch": "nope"}, "branch", "no snapshot on 'nope'"),
]
IDS = [f"{kind}-{table}-{field}-{i}" for i, (kind, table, _, field, _) in enumerate(CASES)]


def resolve(params: dict[str, Any], snaps: dict[str, int]) -> dict[str, Any]:
    def one(v: Any) -> Any:
        if isinstance(v, list):
            return [one(x) for x in v]
        if v == "+day":
            return now() + DAY
        if v == "-hour":
            return now() - DAY // 24
        return snaps.get(v, v) if isinstance(v, str) else v
    return {k: one(v) for k, v in params.items()}


def form_of(params: dict[str, Any]) -> dict[str, str]:
    """The Actions page's form fields for JSON parameters."""
    out = {}
    for k, v in params.items():
        out[k] = ",".join(map(str, v)) if isinstance(v, list) else str(v)
    return out


@pytest.mark.parametrize(("kind", "table", "params", "field", "needle"), CASES, ids=IDS)
def test_the_page_form_refuses_before_queueing(
        lake: dict[str, int], broker: Callable[[], int], django_capture_on_commit_callbacks: Any,
        kind: str, table: str, params: dict[str, Any], field: str, needle: str) -> None:
    client = Client()
    client.force_login(user_with("mia", "maintainer"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(table) + "actions/run/", {
            "kind": kind, "op": "queue", **form_of(resolve(params, lake))})
    assert response.status_code == 400, response.content[:300]
    page = response.content.decode()
    error = page.split(f'id="form-{kind}"', 1)[1].split('class="form-error"', 1)[1]
    assert error.startswith(f' data-param="{field}">'), error[:200]
    assert needle in html.unescape(error.split("</p>")[0])
    assert not TaskRun.objects.exists() and broker() == 0


@pytest.mark.parametrize(("kind", "table", "params", "field", "needle"), CASES, ids=IDS)
def test_the_api_refuses_before_queueing(
        lake: dict[str, int], broker: Callable[[], int], django_capture_on_commit_callbacks: Any,
        kind: str, table: str, params: dict[str, Any], field: str, needle: str) -> None:
    api = client_for(user_with("mia", "maintainer"))
    with django_capture_on_commit_callbacks(execute=True):
        namespace, name = WHERE[table]
        response = api.post("/api/tasks/", {"kind": kind, "params": {
            "namespace": namespace, "table": name, **resolve(params, lake)}}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()["params"]
    assert list(body) == [field] and needle in body[field][0], body
    assert not TaskRun.objects.exists() and broker() == 0


def test_a_valid_submission_reaches_the_broker(
        lake: dict[str, int], broker: Callable[[], int],
        django_capture_on_commit_callbacks: Any) -> None:
    """The control of the tests above: what passes the checks is queued, once."""
    client = Client()
    client.force_login(user_with("mia", "maintainer"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url("events") + "actions/run/", {
            "kind": "rollback", "op": "queue", "snapshot_id": str(lake["s1"])})
    assert response.status_code == 302
    assert TaskRun.objects.count() == 1 and broker() == 1


def _floe_refusal(operation: Callable[[], Any]) -> str:
    with pytest.raises(FloeError) as e:
        operation()
    return str(e.value)


@pytest.mark.parametrize(("kind", "params", "field", "operation"), [
    ("rollback", {"snapshot_id": "s3"}, "snapshot_id",
     lambda t, s: t.manage_snapshots().rollback_to(s["s3"])),
    ("compact", {"branch": "v1"}, "branch", lambda t, s: plan_compaction(t, branch="v1")),
    ("expire_snapshots_dry_run", {"snapshot_ids": ["s1"]}, "snapshot_ids",
     lambda t, s: expire_snapshots(t, snapshot_ids=[s["s1"]], dry_run=True)),
])
def test_the_refusal_is_the_one_the_run_would_fail_with(
        lake: dict[str, int], kind: str, params: dict[str, Any], field: str,
        operation: Callable[[Table, dict[str, int]], Any], settings: Any) -> None:
    api: APIClient = client_for(user_with("mia", "maintainer"))
    response = api.post("/api/tasks/", {"kind": kind, "params": {
        "namespace": "ns", "table": "events", **resolve(params, lake)}}, format="json")
    table = load(settings.FLOE_WAREHOUSE, "ns")
    assert response.json()["params"][field] == [_floe_refusal(lambda: operation(table, lake))]
