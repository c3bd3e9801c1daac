"""Celery tasks. Each takes a TaskRun id, claims the row, keeps state and progress in it.

A task whose row is gone or already claimed returns at once, so a redelivered message
(``acks_late``) never runs the work twice.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from explorer import services
from explorer.models import TaskRun

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, soft_time_limit=600, time_limit=660, ignore_result=True)
def refresh_table_stats(task_run_id: int) -> None:
    run = services.task_run_claim(task_run_id=task_run_id)
    if run is None:
        logger.info("task run %s is gone or already claimed", task_run_id)
        return
    try:
        result = services.table_stats_refresh(
            catalog_name=run.params.get("catalog", "local"),
            namespace=run.params.get("namespace"),
            on_progress=lambda p: services.task_run_progress(task_run_id=task_run_id, progress=p),
        )
    except SoftTimeLimitExceeded:
        services.task_run_fail(task_run_id=task_run_id, error="stopped: time limit exceeded")
        raise
    except Exception as exc:
        logger.exception("task run %s failed", task_run_id)
        services.task_run_fail(task_run_id=task_run_id, error=f"{type(exc).__name__}: {exc}")
        return
    services.task_run_succeed(task_run_id=task_run_id, result=result)


TASKS_BY_KIND = {TaskRun.Kind.REFRESH_TABLE_STATS.value: refresh_table_stats}
