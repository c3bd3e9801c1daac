"""Policies at work: :func:`policies_tick` (Celery beat, every ``FLOE_POLICY_TICK_SECONDS``)
looks at each policy that is not paused and is inside its window (UTC); each table it finds
due (explorer.maintenance.policies, from the recorded health) becomes a normal task run
attributed to the policy, unless the policy acted on that table within the last
``every_seconds`` (once per period), the table already has a run queued or running (one run
per table at a time), or ``FLOE_POLICY_MAX_RUNS`` policy runs are queued or running (a global
limit; the table waits for a later tick). Expiry and orphan
removal run their dry run first (its plan recorded as its result); a compaction, a manifest
rewrite and a partition statistics compute record the preview of their plan on their run
first (``policy_plan``), with their reason;
:func:`policy_follow_up`
then submits the confirm step, which executes exactly that plan and refuses when the table
changed meanwhile (a user's commit is never undone: the confirm fails, and the next period
plans again). Every run's audit entry is the policy's."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from explorer.maintenance.policies import Decision, policies_preview
from explorer.models import MaintenancePolicy, TaskRun
from explorer.tables import selectors
from explorer.tasks import services
from explorer.tasks import kinds as task_kinds

__all__ = ["TickResult", "in_window", "policies_tick", "policy_follow_up"]

logger = logging.getLogger(__name__)

A = MaintenancePolicy.Action
K = TaskRun.Kind
_ACTIVE = (TaskRun.State.QUEUED, TaskRun.State.RUNNING)
#: The kind a decision is submitted as (expiry and orphan removal: their dry run first).
_FIRST_KIND = {A.EXPIRE: K.EXPIRE_DRY_RUN, A.ORPHANS: K.ORPHANS_DRY_RUN, A.COMPACT: K.COMPACT,
               A.REWRITE_MANIFESTS: K.REWRITE_MANIFESTS,
               A.PARTITION_STATS: K.COMPUTE_PARTITION_STATS}
_CONFIRM = {K.EXPIRE_DRY_RUN: K.EXPIRE, K.ORPHANS_DRY_RUN: K.ORPHANS}
_DAY_MS = 86_400_000


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def in_window(policy: MaintenancePolicy, now: dt.datetime) -> bool:
    """Inside the policy's daily window (UTC; one crossing midnight too), or it has none."""
    if not policy.window_start:
        return True
    start, end = _minutes(policy.window_start), _minutes(policy.window_end)
    utc = now.astimezone(dt.UTC)
    at = utc.hour * 60 + utc.minute
    return start <= at < end if start < end else (at >= start or at < end)


def _task_params(policy: MaintenancePolicy, d: Decision, now: dt.datetime) -> dict[str, Any]:
    p, now_ms = policy.params, int(now.timestamp() * 1000)
    params: dict[str, Any] = {"catalog": d.catalog, "namespace": d.namespace, "table": d.table}
    if policy.action in (A.EXPIRE, A.ORPHANS) and "older_than_days" in p:
        params["older_than_ms"] = now_ms - int(p["older_than_days"] * _DAY_MS)
    if policy.action == A.EXPIRE and "retain_last" in p:
        params["retain_last"] = p["retain_last"]
    if policy.action == A.COMPACT:
        options = {}
        if "target_file_size_bytes" in p:
            options["target-file-size-bytes"] = str(p["target_file_size_bytes"])
        if "min_input_files" in p:
            options["min-input-files"] = str(p["min_input_files"])
        if options:
            params["options"] = options
    return params


def _plan(policy: MaintenancePolicy, d: Decision, params: dict[str, Any]) -> dict[str, Any]:
    """What the policy records before its run: why, and the preview of its plan: for a
    compaction the file groups, input and expected output, as the Actions page previews it;
    for a manifest rewrite the manifests before and after (its dry run); for partition
    statistics the snapshot, whether it has a file already, and the manifests it would read.
    These are the previews the kinds declare (the Actions page's); an expiry's or orphan
    removal's plan is its dry run."""
    plan: dict[str, Any] = {"policy": policy.name, "reason": d.reason}
    spec = task_kinds.KINDS[_FIRST_KIND[policy.action]]
    if spec.preview is not None:
        table = selectors.table_load(catalog=d.catalog, namespace=d.namespace, name=d.table)
        validated = task_kinds.params_validate(kind=spec.kind, params=params)
        plan["preview"] = spec.preview(table=table, params=validated.params)
    return plan


@dataclass
class TickResult:
    policies: int = 0
    outside_window: int = 0
    not_yet: int = 0
    submitted: int = 0
    table_busy: int = 0
    at_limit: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def policies_tick(*, now: dt.datetime | None = None) -> TickResult:
    """One look at every policy (see the module's text)."""
    now = now or timezone.now()
    result = TickResult()
    limit = int(settings.FLOE_POLICY_MAX_RUNS)
    for policy in MaintenancePolicy.objects.filter(paused=False).order_by("name"):
        result.policies += 1
        if not in_window(policy, now):
            result.outside_window += 1
            continue
        period_start = now - dt.timedelta(seconds=policy.every_seconds)
        for d in (d for d in policies_preview(user=None, policy=policy) if d.due):
            table = {"catalog": d.catalog, "namespace": d.namespace, "table": d.table}
            if TaskRun.objects.filter(policy=policy, created_at__gt=period_start, **table
                                      ).exists():
                result.not_yet += 1  # it acted on this table in this period already
                continue
            if TaskRun.objects.filter(state__in=_ACTIVE, **table).exists():
                result.table_busy += 1
                continue
            if TaskRun.objects.filter(policy__isnull=False, state__in=_ACTIVE).count() >= limit:
                result.at_limit += 1
                continue
            try:
                params = _task_params(policy, d, now)
                run = services.task_submit_for_policy(
                    kind=_FIRST_KIND[policy.action], params=params, policy=policy,
                    plan=_plan(policy, d, params))
            except Exception as exc:  # one table's refusal: the others go on
                logger.warning("policy %s on %s:%s.%s: %s", policy.name, d.catalog,
                               d.namespace, d.table, exc)
                result.failed += 1
                continue
            logger.info("policy %s: %s on %s:%s.%s (task run %s): %s", policy.name,
                        run.kind, d.catalog, d.namespace, d.table, run.pk, d.reason)
            result.submitted += 1
    return result


def policy_follow_up(run: TaskRun) -> TaskRun | None:
    """After a policy's dry run succeeded: its confirm step, unless the plan is empty."""
    confirm = _CONFIRM.get(TaskRun.Kind(run.kind))
    if run.policy is None or confirm is None or (run.result or {}).get("nothing_to_do"):
        return None
    return services.task_submit_for_policy(kind=confirm, params={"dry_run_task_id": run.pk},
                                           policy=run.policy,
                                           plan={"policy": run.policy.name,
                                                 "reason": f"the plan of dry run {run.pk}"})
