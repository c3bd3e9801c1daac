"""Maintenance policies (:class:`MaintenancePolicy`): stored only when every field holds
(:func:`policy_create`: a 400 naming the field otherwise, nothing stored), and what each would
do now (:func:`policies_preview`): for every table it covers, whether its recorded health
(explorer.maintenance.metrics, the current state; no table is opened) calls for the action,
and why.

Which policy covers a table: among the policies of one action whose catalog (or ``*``) and
``tables`` pattern (shell-style on ``namespace.table``: ``web.*``, ``*.events``, ``*``) match
it, the nearest wins: a named catalog over ``*``, then the pattern with more literal
characters (``web.events`` over ``web.*`` over ``*``), then the name.

What calls for each action (``params``):

- ``compact``: ``small_file_ratio`` and/or ``delete_file_ratio`` (0–1: the table's share of
  small files, of delete files, above which it is compacted; one at least);
  ``target_file_size_bytes`` (optional, at least 1 MiB), ``min_input_files`` (optional, 2 or
  more: the compaction's ``min-input-files``);
- ``rewrite_manifests``: ``manifests`` (2 or more: the current snapshot's manifest count at
  which they are rewritten);
- ``expire_snapshots``: ``older_than_days`` (optional, above 0: otherwise the table's own
  ``history.expire.max-snapshot-age-ms``), ``retain_last`` (optional, 1 or more); due when
  the recorded state has snapshots past expiry, or on its schedule when ``older_than_days``
  is given;
- ``remove_orphan_files``: ``older_than_days`` (1 or more: Java refuses less without force);
  due on its schedule;
- ``compute_partition_stats``: due on its schedule.

A policy travels with its table: the table's properties ``floe.policy.<action>.<setting>``
(the setting with ``-`` for ``_``: ``floe.policy.compact.small-file-ratio = 0.3``) take the
place of the covering policy's settings for that table (the nearest wins), checked as a
policy's are (a bad one is ignored and the preview says so);
``floe.policy.<action>.enabled = false`` keeps that action off the table and
``floe.policy.paused = true`` every action. The properties refine a stored policy that covers
the table; alone they do not start one.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from explorer.access import permissions
from explorer.errors import PolicyInvalid
from explorer.models import MaintenancePolicy, PolicyTablePause, TableMetrics
from explorer.tables import selectors

__all__ = ["Decision", "check_covers", "check_name", "check_scope", "covered_rows",
           "policies_preview", "policy_create", "policy_for", "table_pause_set"]

A = MaintenancePolicy.Action
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")
_PATTERN = re.compile(r"[A-Za-z0-9_.*?\[\]-]{1,512}")
MIN_EVERY, MAX_EVERY = 60, 30 * 86400
MIB = 1024 * 1024

#: Per action: parameter → (type, lowest, highest); None: no bound.
_PARAMS: dict[str, dict[str, tuple[type, float | None, float | None]]] = {
    A.COMPACT: {"small_file_ratio": (float, 0.0, 1.0), "delete_file_ratio": (float, 0.0, 1.0),
                "target_file_size_bytes": (int, MIB, 2 ** 40),
                "min_input_files": (int, 2, 100_000)},
    A.REWRITE_MANIFESTS: {"manifests": (int, 2, 1_000_000)},
    A.EXPIRE: {"older_than_days": (float, 0.0, 36500.0), "retain_last": (int, 1, 1_000_000)},
    A.ORPHANS: {"older_than_days": (float, 1.0, 36500.0)},
    A.PARTITION_STATS: {},
}


def _setting(action: str, key: str, value: Any) -> int | float:
    """One setting of ``action``, checked (PolicyInvalid names ``params.<key>``)."""
    allowed = _PARAMS[action]
    if key not in allowed:
        raise PolicyInvalid(f"params.{key}", f"{action} has no setting {key!r}; its "
                            f"settings: {', '.join(allowed) or 'none'}")
    kind, low, high = allowed[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (kind is int and not float(value).is_integer()):
        raise PolicyInvalid(f"params.{key}", f"{key} must be a "
                            f"{'whole number' if kind is int else 'number'}, not {value!r}")
    number = kind(value)
    exclusive_low = key.endswith("_ratio") or (key == "older_than_days" and low == 0.0)
    if (low is not None and (number <= low if exclusive_low else number < low)) or \
            (high is not None and number > high):
        floor = "above" if exclusive_low else "at least"
        raise PolicyInvalid(f"params.{key}", f"{key} must be {floor} {low:g} and at most "
                            f"{high:g}, not {value!r}")
    return number


def _params(action: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise PolicyInvalid("params", "params must be an object of the action's settings")
    out: dict[str, Any] = {key: _setting(action, key, value) for key, value in raw.items()}
    if action == A.COMPACT and not ({"small_file_ratio", "delete_file_ratio"} & out.keys()):
        raise PolicyInvalid("params.small_file_ratio", "compact needs small_file_ratio or "
                            "delete_file_ratio: the threshold that calls for it")
    if action == A.REWRITE_MANIFESTS and "manifests" not in out:
        raise PolicyInvalid("params.manifests", "rewrite_manifests needs manifests: the "
                            "manifest count at which they are rewritten")
    if action == A.ORPHANS and "older_than_days" not in out:
        raise PolicyInvalid("params.older_than_days", "remove_orphan_files needs "
                            "older_than_days (1 or more): files younger may be a commit's "
                            "in progress")
    return out


def covered_rows(catalog: str, pattern: str, catalogs: list[str]) -> list[TableMetrics]:
    """The current recorded states of the tables of ``catalog`` (``*``: of ``catalogs``)
    whose ``namespace.table`` matches ``pattern``."""
    rows = TableMetrics.objects.filter(current=True, catalog__in=catalogs if catalog == "*"
                                       else [catalog])
    return [r for r in rows if fnmatch.fnmatchcase(f"{r.namespace}.{r.table}", pattern)]


def check_name(name: Any, taken: bool, what: str) -> str:
    """A policy's or alert rule's name (PolicyInvalid ``name`` otherwise)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PolicyInvalid("name", "name must be 1–64 of a-z, 0-9, '-' and '_', starting "
                            "with a letter or digit")
    if taken:
        raise PolicyInvalid("name", f"{what} named {name!r} exists")
    return name


def check_scope(*, user: Any, catalog: Any, tables: Any) -> list[str]:
    """A catalog (or ``*``) the user administers and a pattern on ``namespace.table``
    (PolicyInvalid ``catalog`` / ``tables``, Forbidden); the configured catalogs."""
    configured = [c.name for c in selectors.catalog_list()]
    if not isinstance(catalog, str) or (catalog != "*" and catalog not in configured):
        raise PolicyInvalid("catalog", f"no catalog {catalog!r}: catalogs are "
                            f"{', '.join(configured)} (or * for every one)")
    permissions.require_administer(user=user, catalog=catalog)
    if not isinstance(tables, str) or not _PATTERN.fullmatch(tables):
        raise PolicyInvalid("tables", "tables must be a pattern on namespace.table (letters, "
                            "digits, _ . - and the wildcards * ? [ ])")
    return configured


def check_covers(catalog: str, tables: str, configured: list[str]) -> None:
    """The pattern matches a table whose health is recorded (PolicyInvalid ``tables``)."""
    if not covered_rows(catalog, tables, configured):
        raise PolicyInvalid("tables", f"pattern {tables!r} matches no table of "
                            f"{'any catalog' if catalog == '*' else 'catalog ' + repr(catalog)}"
                            " (among the tables whose health Floe has recorded)")


def policy_create(*, user: Any, name: Any, action: Any, catalog: Any = "*", tables: Any = "*",
                  params: Any = None, every_seconds: Any = 86400, window: Any = None,
                  paused: bool = False) -> MaintenancePolicy:
    """Store a policy, every field checked first (PolicyInvalid names the one at fault;
    nothing is stored). Needs the admin role on its catalog (on every catalog for ``*``)."""
    check_name(name, MaintenancePolicy.objects.filter(name=name).exists(), "a policy")
    if action not in A.values:
        raise PolicyInvalid("action", f"action must be one of {', '.join(A.values)}, not "
                            f"{action!r}")
    configured = check_scope(user=user, catalog=catalog, tables=tables)
    checked = _params(action, params)
    if isinstance(every_seconds, bool) or not isinstance(every_seconds, int) or \
            not MIN_EVERY <= every_seconds <= MAX_EVERY:
        raise PolicyInvalid("every_seconds", f"every_seconds must be a whole number from "
                            f"{MIN_EVERY} to {MAX_EVERY} (30 days), not {every_seconds!r}")
    start = end = ""
    if window not in (None, ""):
        found = re.fullmatch(r"(\S+)-(\S+)", window) if isinstance(window, str) else None
        if found is None or not (_TIME.fullmatch(found[1]) and _TIME.fullmatch(found[2])):
            raise PolicyInvalid("window", "window must be HH:MM-HH:MM (UTC), e.g. 01:00-05:00,"
                                f" not {window!r}")
        start, end = found[1], found[2]
        if start == end:
            raise PolicyInvalid("window", f"window {window} is empty: its start and end are "
                                "the same time")
    check_covers(catalog, tables, configured)
    with transaction.atomic():
        return MaintenancePolicy.objects.create(
            name=name, action=action, catalog=catalog, tables=tables, params=checked,
            every_seconds=every_seconds, window_start=start, window_end=end,
            paused=bool(paused), created_by=user if user.is_authenticated else None)


def _nearness(policy: MaintenancePolicy) -> tuple[int, int, str]:
    literal = len(re.sub(r"[*?\[\]]", "", policy.tables))
    return (policy.catalog != "*", literal, policy.name)


def policy_for(policies: list[MaintenancePolicy], catalog: str, namespace: str, table: str
               ) -> MaintenancePolicy | None:
    """The nearest of ``policies`` (one action's) that covers the table, or None."""
    name = f"{namespace}.{table}"
    matching = [p for p in policies if p.catalog in ("*", catalog)
                and fnmatch.fnmatchcase(name, p.tables)]
    return max(matching, key=_nearness, default=None)


@dataclass(frozen=True)
class Decision:
    """What a policy would do to one table now, and why (or why not)."""

    policy: str
    action: str
    catalog: str
    namespace: str
    table: str
    due: bool
    reason: str


def _table_settings(action: str, row: TableMetrics) -> tuple[dict[str, Any], str | None]:
    """The table's own settings for ``action`` from its floe.policy.* properties (parsed as
    numbers and checked), and why it opts out (or a bad property), if it does."""
    props = row.policy_properties or {}
    if str(props.get("floe.policy.paused", "")).lower() == "true":
        return {}, "the table's floe.policy.paused is true"
    prefix = f"floe.policy.{action}."
    if str(props.get(prefix + "enabled", "")).lower() == "false":
        return {}, f"the table's {prefix}enabled is false"
    own: dict[str, Any] = {}
    for key, value in props.items():
        if not key.startswith(prefix) or key == prefix + "enabled":
            continue
        setting = key[len(prefix):].replace("-", "_")
        try:
            number = float(value)
            own[setting] = _setting(action, setting, int(number) if number.is_integer()
                                    and _PARAMS[action].get(setting, (float,))[0] is int
                                    else number)
        except (ValueError, PolicyInvalid) as exc:
            return {}, f"the table's {key} is not used: {exc}"
    return own, None


def _judge(policy: MaintenancePolicy, row: TableMetrics) -> tuple[bool, str]:
    own, refusal = _table_settings(policy.action, row)
    if refusal is not None:
        return False, refusal
    p = {**policy.params, **own}
    if policy.action == A.COMPACT:
        reasons = []
        for key, label in (("small_file_ratio", "small files"), ("delete_file_ratio",
                                                                  "delete files")):
            if key in p:
                value = getattr(row, key)
                if value is None:
                    reasons.append(f"{label}: unknown (too many files to read their sizes)")
                elif value > p[key]:
                    return True, f"{label} {value:.0%} > {p[key]:.0%}"
                else:
                    reasons.append(f"{label} {value:.0%} ≤ {p[key]:.0%}")
        return False, "; ".join(reasons)
    if policy.action == A.REWRITE_MANIFESTS:
        if row.manifests is None:
            return False, "manifest count unknown (recorded from a REST commit's metadata)"
        due = row.manifests >= p["manifests"]
        return due, f"{row.manifests} manifests {'≥' if due else '<'} {p['manifests']}"
    if policy.action == A.EXPIRE and "older_than_days" not in p:
        due = bool(row.snapshots_past_expiry)
        return due, (f"{row.snapshots_past_expiry} snapshot(s) past the table's max age"
                     if due else "no snapshot past the table's max age")
    return True, f"on its schedule (every {policy.every_seconds:,} s)"


def policies_preview(*, user: Any, policy: MaintenancePolicy | None = None) -> list[Decision]:
    """What the policies (or one) would do now, table by table, from the recorded health of
    the tables the user may read (``user`` None: the policies' own evaluation, every
    catalog): each table under the nearest policy of each action."""
    names = [c.name for c in selectors.catalog_list()]
    readable = names if user is None else permissions.readable_catalogs(user=user, names=names)
    by_action: dict[str, list[MaintenancePolicy]] = {}
    for p in MaintenancePolicy.objects.all():
        by_action.setdefault(p.action, []).append(p)
    decisions = []
    paused_tables = set(PolicyTablePause.objects.values_list("catalog", "namespace", "table"))
    for row in TableMetrics.objects.filter(current=True, catalog__in=readable).order_by(
            "catalog", "namespace", "table"):
        for action, policies in by_action.items():
            nearest = policy_for(policies, row.catalog, row.namespace, row.table)
            if nearest is None or (policy is not None and nearest.pk != policy.pk):
                continue
            due, reason = _judge(nearest, row)
            if nearest.paused:
                due, reason = False, f"paused ({reason})"
            elif (row.catalog, row.namespace, row.table) in paused_tables:
                due, reason = False, f"policies paused on this table ({reason})"
            decisions.append(Decision(nearest.name, action, row.catalog, row.namespace,
                                      row.table, due, reason))
    return decisions


def table_pause_set(*, user: Any, catalog: Any, namespace: Any, table: Any,
                    paused: bool) -> bool:
    """Pause (or resume) every policy on one table; the maintainer role on its catalog. The
    table must be one whose health is recorded (PolicyInvalid names the field otherwise).
    Whether it is paused now."""
    for field, value in (("catalog", catalog), ("namespace", namespace), ("table", table)):
        if not isinstance(value, str) or not value:
            raise PolicyInvalid(field, f"{field} must be given as text")
    permissions.require_change(user=user, catalog=catalog)
    key = {"catalog": catalog, "namespace": namespace, "table": table}
    if not TableMetrics.objects.filter(current=True, **key).exists():
        raise PolicyInvalid("table", f"no table {catalog}:{namespace}.{table} whose health "
                            "Floe has recorded")
    if paused:
        PolicyTablePause.objects.get_or_create(
            **key, defaults={"paused_by": user if user.is_authenticated else None})
    else:
        PolicyTablePause.objects.filter(**key).delete()
    return paused
