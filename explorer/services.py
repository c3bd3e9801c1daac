"""Writes: submitting tasks and the work they do. Keyword-only, named noun_verb."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone

from explorer import selectors
from explorer.catalogs import LOCAL_CATALOG
from explorer.models import TaskRun

logger = logging.getLogger(__name__)

# Broken tables named in a task result, at most (the result is a JSON column).
MAX_LISTED_ERRORS = 100


def task_run_submit(
    *, kind: str, params: dict[str, Any], user: AbstractBaseUser | AnonymousUser | None
) -> TaskRun:
    """Record a TaskRun and enqueue its Celery task once the row is committed."""
    from explorer import tasks  # tasks import this module

    task = tasks.TASKS_BY_KIND[kind]
    creator = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        run = TaskRun.objects.create(kind=kind, params=params, created_by=creator)
        transaction.on_commit(lambda: task.delay(run.pk))
    return run


def task_run_claim(*, task_run_id: int) -> TaskRun | None:
    """Move a queued run to RUNNING; None when it is gone or another worker has it."""
    claimed = TaskRun.objects.filter(pk=task_run_id, state=TaskRun.State.QUEUED).update(
        state=TaskRun.State.RUNNING, started_at=timezone.now(), progress=0
    )
    return TaskRun.objects.get(pk=task_run_id) if claimed else None


def task_run_progress(*, task_run_id: int, progress: int) -> None:
    TaskRun.objects.filter(pk=task_run_id, state=TaskRun.State.RUNNING).update(
        progress=max(0, min(progress, 99)), updated_at=timezone.now()
    )


def task_run_succeed(*, task_run_id: int, result: dict[str, Any]) -> None:
    TaskRun.objects.filter(pk=task_run_id, state=TaskRun.State.RUNNING).update(
        state=TaskRun.State.SUCCEEDED, progress=100, result=result,
        finished_at=timezone.now(), updated_at=timezone.now(),
    )


def task_run_fail(*, task_run_id: int, error: str) -> None:
    TaskRun.objects.filter(pk=task_run_id, state=TaskRun.State.RUNNING).update(
        state=TaskRun.State.FAILED, error=error, finished_at=timezone.now(),
        updated_at=timezone.now(),
    )


def table_stats_refresh(
    *, catalog_name: str = LOCAL_CATALOG, namespace: str | None = None,
    on_progress: Callable[[int], None] = lambda _: None,
) -> dict[str, Any]:
    """Read the current metadata of every table (or every table of one namespace) and total
    their snapshot summaries. Reads only; changes no table."""
    catalog = selectors.catalog_get(name=catalog_name)
    refs = selectors.catalog_table_refs(catalog=catalog.name, namespace=namespace)
    totals = {"data_files": 0, "delete_files": 0, "records": 0, "files_size": 0}
    broken: list[dict[str, str]] = []
    broken_count = 0
    for done, ref in enumerate(refs, start=1):
        (row,) = selectors.table_rows(refs=[ref])
        if row.error is not None:
            broken_count += 1
            if len(broken) < MAX_LISTED_ERRORS:
                broken.append({"table": row.identifier, "error": row.error})
        else:
            for key in totals:
                totals[key] += getattr(row, key) or 0
        on_progress(done * 100 // len(refs))
    return {
        "catalog": catalog.name,
        "namespace": namespace,
        "tables": len(refs),
        "broken_tables": broken_count,
        "totals": totals,
        "errors": broken,
    }
