"""Celery tasks: one that runs any TaskRun by id, and the periodic reaper.

:func:`run_task` takes a TaskRun id, claims the row with a conditional UPDATE and keeps state
and progress in it (:mod:`explorer.tasks.runtime`); a task whose row is gone, cancelled or
already claimed returns at once, so a redelivered message (``acks_late``) never runs the work
twice. Time limits are the settings' (``FLOE_TASK_SOFT_TIME_LIMIT``, ``FLOE_TASK_TIME_LIMIT``):
the soft one fails the run, the hard one kills the process (the reaper then fails the run).
Retries happen inside the run, on CommitConflict only (:class:`explorer.tasks.kinds.KindSpec`).

:func:`reap` runs every ``FLOE_REAPER_INTERVAL`` seconds from Celery beat, embedded in the
worker ``explorer.run`` starts (``-B``).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from explorer.maintenance import alerts, autopilot, metrics
from explorer.tasks import lifecycle
from explorer.tasks.runtime import execute

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="explorer.tasks.run_task", acks_late=True, ignore_result=True,
             soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
             time_limit=settings.CELERY_TASK_TIME_LIMIT)
def run_task(self: Any, task_run_id: int) -> None:
    # In a worker a heartbeat thread beats while the core works; run in-process (called
    # directly, or eagerly) the run beats from its progress reports instead.
    inline = bool(self.request.called_directly or self.request.is_eager)
    # The message's limits (hard, soft): the submitting process's settings.
    _, soft = self.request.timelimit or (None, None)
    execute(task_run_id, threaded=not inline, soft_time_limit=None if inline else soft)


#: The first kind's name, kept: a TaskRun of kind refresh_table_stats runs like any other.
refresh_table_stats = run_task


@shared_task(name="explorer.tasks.reap", ignore_result=True, acks_late=False)
def reap() -> dict[str, int]:
    done = lifecycle.task_runs_reap()
    if any(done.values()):
        logger.info("reaper: %s", done)
    return done


@shared_task(name="explorer.tasks.metrics_sweep", ignore_result=True, acks_late=False)
def metrics_sweep() -> dict[str, int]:
    """Every catalog's tables: the health of each state not recorded yet
    (explorer.maintenance.metrics)."""
    done = metrics.metrics_sweep().as_dict()
    logger.info("health sweep: %s", done)
    return done


@shared_task(name="explorer.tasks.policies_tick", ignore_result=True, acks_late=False)
def policies_tick() -> dict[str, int]:
    """Maintenance policies: each table due becomes a run (explorer.maintenance.autopilot)."""
    done = autopilot.policies_tick().as_dict()
    if done["submitted"]:
        logger.info("policies: %s", done)
    return done


@shared_task(name="explorer.tasks.alerts_check", ignore_result=True, acks_late=False)
def alerts_check() -> dict[str, int]:
    """Alert rules against the recorded health (explorer.maintenance.alerts)."""
    done = alerts.alerts_check().as_dict()
    if done["fired"] or done["resolved"]:
        logger.info("alerts: %s", done)
    return done
