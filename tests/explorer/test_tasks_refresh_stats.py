"""The refresh_table_stats task: claims its TaskRun, reports progress, records the outcome."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser, User

from explorer import celery_app
from explorer.errors import Forbidden
from explorer.models import CatalogGrant, TaskRun
from explorer.tasks import lifecycle, services
from explorer.tasks.jobs import refresh_table_stats
from floe.maintenance import Progress

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager_celery() -> Iterator[None]:
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


def test_submit_enqueues_after_commit_and_the_task_totals_the_warehouse(
    warehouse: Path, eager_celery: None, django_capture_on_commit_callbacks  # type: ignore[no-untyped-def]
) -> None:
    user = User.objects.create_user("ada")
    CatalogGrant.objects.create(user=user, catalog="local", role="maintainer")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = services.task_submit(kind="refresh_table_stats", params={}, user=user)
    assert TaskRun.objects.get(pk=run.pk).state == TaskRun.State.QUEUED  # nothing ran yet
    assert len(callbacks) == 1
    callbacks[0]()
    run.refresh_from_db()
    assert run.state == TaskRun.State.SUCCEEDED and run.progress == 100
    assert run.created_by == user and run.started_at and run.finished_at
    assert run.result["tables"] == 5 and run.result["broken_tables"] == 1
    assert run.result["totals"] == {
        "data_files": 3 + 1 + 3, "delete_files": 1, "records": 150 + 7 + 3000,
        "files_size": 3048 + 512 + 90_000,
    }
    assert run.result["errors"][0]["table"] == "staging.broken"


def test_a_namespace_param_limits_the_work(warehouse: Path, eager_celery: None, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    user = User.objects.create_superuser("root", "root@example.com", "pw")
    with django_capture_on_commit_callbacks(execute=True):
        run = services.task_submit(kind="refresh_table_stats", params={"namespace": "sales"}, user=user)
    run.refresh_from_db()
    assert run.created_by == user and run.namespace == "sales"
    assert (run.state, run.result["tables"], run.result["totals"]["records"]) == ("SUCCEEDED", 2, 157)


def test_anonymous_visitors_and_viewers_cannot_submit(warehouse: Path) -> None:
    viewer = User.objects.create_user("vic")
    for who in (AnonymousUser(), viewer):
        with pytest.raises(Forbidden, match="maintainer"):
            services.task_submit(kind="refresh_table_stats", params={}, user=who)
    assert not TaskRun.objects.exists()


def test_progress_is_written_while_running(warehouse: Path, monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    settings.FLOE_TASK_HEARTBEAT_SECONDS = 0  # in-process: every report beats
    run = TaskRun.objects.create(kind="refresh_table_stats", catalog="local")
    seen: list[tuple[int, str, int, int | None]] = []
    real = lifecycle.task_run_beat

    def spy(*, task_run_id: int, progress: Progress | None = None) -> bool:
        wanted = real(task_run_id=task_run_id, progress=progress)
        row = TaskRun.objects.get(pk=task_run_id)
        if progress is not None:
            seen.append((row.progress, row.stage, row.progress_done, row.progress_total))
        assert row.heartbeat_at is not None
        return wanted

    monkeypatch.setattr(lifecycle, "task_run_beat", spy)
    refresh_table_stats(run.pk)
    assert [s[0] for s in seen] == [20, 40, 60, 80, 99]  # 100 only together with SUCCEEDED
    assert seen[-1][1:] == ("reading tables", 5, 5)
    run.refresh_from_db()
    assert (run.state, run.progress) == ("SUCCEEDED", 100)


def test_a_claimed_or_finished_run_is_not_run_again(warehouse: Path) -> None:
    run = TaskRun.objects.create(kind="refresh_table_stats", state=TaskRun.State.RUNNING)
    refresh_table_stats(run.pk)
    run.refresh_from_db()
    assert (run.state, run.result) == ("RUNNING", None)
    done = TaskRun.objects.create(kind="refresh_table_stats", state=TaskRun.State.SUCCEEDED, result={"x": 1})
    refresh_table_stats(done.pk)
    done.refresh_from_db()
    assert done.result == {"x": 1}


def test_a_missing_row_is_ignored() -> None:
    refresh_table_stats(987654)  # no exception, nothing to do


def test_a_failure_is_recorded_on_the_row(warehouse: Path) -> None:
    run = TaskRun.objects.create(kind="refresh_table_stats", catalog="local", params={"namespace": "nope"})
    refresh_table_stats(run.pk)
    run.refresh_from_db()
    assert run.state == "FAILED" and run.finished_at is not None
    assert run.error == "NotFound: namespace 'nope' does not exist in catalog 'local'"
