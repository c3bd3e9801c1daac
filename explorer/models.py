"""What the explorer keeps in its own database: background task runs, the audit trail and the
per-catalog role grants.

Tables themselves are never stored here; they are read from and changed in their catalogs
through floe.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, NoReturn

from django.conf import settings
from django.db import models


class TaskRun(models.Model):
    """One background task: the row the UI polls for state, progress and result.

    Life cycle: QUEUED → RUNNING → SUCCEEDED / FAILED / CANCELLED. Every transition is a
    conditional UPDATE on the current state (see :mod:`explorer.tasks.lifecycle`), so two workers,
    the reaper and a cancel request never overwrite each other.
    """

    class Kind(models.TextChoices):
        REFRESH_TABLE_STATS = "refresh_table_stats", "Refresh table statistics"
        ROLLBACK = "rollback", "Roll back"
        SET_CURRENT = "set_current", "Set the current snapshot"
        CHERRY_PICK = "cherry_pick", "Cherry-pick a snapshot"
        BRANCH_CREATE = "branch_create", "Create a branch"
        BRANCH_REPLACE = "branch_replace", "Move a branch"
        BRANCH_RENAME = "branch_rename", "Rename a branch"
        BRANCH_REMOVE = "branch_remove", "Remove a branch"
        BRANCH_FAST_FORWARD = "branch_fast_forward", "Fast-forward a branch"
        TAG_CREATE = "tag_create", "Create a tag"
        TAG_REPLACE = "tag_replace", "Move a tag"
        TAG_REMOVE = "tag_remove", "Remove a tag"
        REF_RETENTION = "ref_retention", "Set a ref's retention"
        EVOLVE = "evolve", "Evolve the schema, partition spec or sort order"
        DELETE_ROWS = "delete_rows", "Delete rows"
        EXPORT = "export", "Export a table state"
        EXPIRE_DRY_RUN = "expire_snapshots_dry_run", "Expire snapshots (dry run)"
        EXPIRE = "expire_snapshots", "Expire snapshots"
        ORPHANS_DRY_RUN = "remove_orphan_files_dry_run", "Remove orphan files (dry run)"
        ORPHANS = "remove_orphan_files", "Remove orphan files"
        COMPACT = "compact", "Compact data files"
        REWRITE_MANIFESTS = "rewrite_manifests", "Rewrite manifests"
        COMPUTE_PARTITION_STATS = "compute_partition_stats", "Compute partition statistics"

    class State(models.TextChoices):
        QUEUED = "QUEUED"
        RUNNING = "RUNNING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"
        CANCELLED = "CANCELLED"

    FINISHED_STATES = (State.SUCCEEDED, State.FAILED, State.CANCELLED)

    kind = models.CharField(max_length=64, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    # The table (or, for catalog-wide kinds, the catalog and namespace) the run works on:
    # columns of their own so runs can be listed per table and authorised per catalog.
    catalog = models.CharField(max_length=255, blank=True, default="")
    namespace = models.CharField(max_length=255, blank=True, default="")
    table = models.CharField(max_length=255, blank=True, default="")
    # Progress from the core's callbacks: percent of the current stage, the stage, counts.
    progress = models.PositiveSmallIntegerField(default=0)
    stage = models.CharField(max_length=64, blank=True, default="")
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(null=True, blank=True)
    progress_detail = models.CharField(max_length=255, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # When its message was last sent to the broker (the reaper sends a run still QUEUED again
    # after FLOE_TASK_REQUEUE_SECONDS: a broker that lost its messages loses no run).
    sent_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="task_runs",
    )
    # How the creator authenticated ("session" or "token"), for the audit trail.
    created_via = models.CharField(max_length=16, blank=True, default="")
    # The maintenance policy that submitted the run (None: a person or a client did).
    policy = models.ForeignKey(
        "MaintenancePolicy", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="runs",
    )
    # What the policy saw before it submitted the run: why, and (a compaction) its plan.
    policy_plan = models.JSONField(null=True, blank=True)
    # A confirm run (expire, orphan removal) executes the plan of this dry run.
    source_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="confirmations",
    )
    # The table as the run found it when it started (the audit entry's "before").
    metadata_before = models.CharField(max_length=2048, blank=True, default="")
    snapshot_before = models.BigIntegerField(null=True, blank=True)
    # An export's file, relative to the exports directory; emptied when the file is removed.
    artifact = models.CharField(max_length=1024, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["state", "created_at"]),
            models.Index(fields=["catalog", "namespace", "table", "created_at"],
                         name="explorer_taskrun_table_idx"),
            models.Index(fields=["state", "heartbeat_at"], name="explorer_taskrun_beat_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__lte=100), name="taskrun_progress_at_most_100"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in self.FINISHED_STATES

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_requested_at is not None

    @property
    def identifier(self) -> str:
        """``namespace.table`` for table kinds, else the namespace (or "")."""
        return f"{self.namespace}.{self.table}" if self.table else self.namespace


#: Audit actions of changes made through the Iceberg REST catalog the site serves
#: (api/views_iceberg.py): ``actor_via`` is "rest", ``params["engine"]`` the client that sent
#: it (PyIceberg, Spark, DuckDB...). Table actions first.
REST_TABLE_ACTIONS = ("rest_commit", "rest_create_table", "rest_register_table",
                      "rest_rename_table", "rest_drop_table")
REST_ACTIONS = REST_TABLE_ACTIONS + ("rest_create_namespace", "rest_drop_namespace",
                                     "rest_update_namespace_properties")


class AuditEntryImmutable(RuntimeError):
    """Raised on any attempt to change or delete an audit entry: the trail is append-only."""


class AppendOnlyQuerySet(models.QuerySet["AuditEntry"]):
    """Reads and inserts only: bulk changes and deletes are refused."""

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AuditEntryImmutable("audit entries are append-only: they cannot be changed or "
                                  "deleted")

    update = _refuse
    delete = _refuse
    bulk_update = _refuse
    update_or_create = _refuse
    _raw_delete = _refuse


class AuditEntry(models.Model):
    """One change made through Floe to one table (or to the grants of a catalog): who, what,
    which table, the table before and after, the outcome and the timing. Append-only.

    Metadata files are immutable, so their locations identify both table states exactly.
    The actor is kept as text and id, not as a foreign key: deleting a user must not change
    (or be blocked by) the trail.
    """

    class Outcome(models.TextChoices):
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    created_at = models.DateTimeField(auto_now_add=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True, default="")
    # "session", "token" (the API with a token), "command" (manage.py), "system" (the reaper),
    # "rest" (the Iceberg REST catalog).
    actor_via = models.CharField(max_length=16, blank=True, default="")
    action = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    catalog = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255, blank=True, default="")
    table = models.CharField(max_length=255, blank=True, default="")
    metadata_before = models.CharField(max_length=2048, blank=True, default="")
    metadata_after = models.CharField(max_length=2048, blank=True, default="")
    snapshot_before = models.BigIntegerField(null=True, blank=True)
    snapshot_after = models.BigIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.BigIntegerField(null=True, blank=True)
    task_run_id = models.BigIntegerField(null=True, blank=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["catalog", "namespace", "table", "created_at"],
                         name="explorer_audit_table_idx"),
            models.Index(fields=["actor_name", "created_at"], name="explorer_audit_actor_idx"),
            models.Index(fields=["action", "created_at"], name="explorer_audit_action_idx"),
        ]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        where = f"{self.namespace}.{self.table}" if self.table else self.catalog
        return f"{self.actor_name or 'system'} {self.action} {where} ({self.outcome})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditEntryImmutable(f"audit entry {self.pk} cannot be changed: the trail is "
                                      "append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AuditEntryImmutable(f"audit entry {self.pk} cannot be deleted: the trail is "
                                  "append-only")


class CatalogGrant(models.Model):
    """A role on a catalog for a user: ``viewer`` reads, ``maintainer`` also changes tables
    (every task), ``admin`` also manages the grants of that catalog. ``catalog = "*"`` grants
    the role on every catalog. Superusers are admin everywhere without a grant."""

    class Role(models.TextChoices):
        VIEWER = "viewer"
        MAINTAINER = "maintainer"
        ADMIN = "admin"

    EVERY_CATALOG = "*"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="catalog_grants")
    catalog = models.CharField(max_length=255)
    role = models.CharField(max_length=16, choices=Role.choices)
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["catalog", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "catalog"], name="catalog_grant_once"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} on {self.catalog}"


class EngineReport(models.Model):
    """A metrics report about one table: a ``ScanReport`` or ``CommitReport`` an engine sent
    to the Iceberg REST catalog (``source`` ``client``), or one Floe's own scan planning made
    (``floe-planned``). The key metrics have columns of their own (what the table's pages
    group and show), the report as sent is kept in ``raw``. Kept per table and report type up
    to ``FLOE_ICEBERG_REPORTS_PER_TABLE`` (the oldest go first). Like the audit trail, the
    user is kept as text and id."""

    class Type(models.TextChoices):
        SCAN = "scan-report", "scan"
        COMMIT = "commit-report", "commit"

    class Source(models.TextChoices):
        CLIENT = "client"
        FLOE_PLANNED = "floe-planned"

    catalog = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255)
    table = models.CharField(max_length=255)
    report_type = models.CharField(max_length=16, choices=Type.choices)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.CLIENT)
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True, default="")
    engine = models.CharField(max_length=255, blank=True, default="")
    received_at = models.DateTimeField(auto_now_add=True)
    snapshot_id = models.BigIntegerField(null=True, blank=True)
    # a scan's
    schema_id = models.IntegerField(null=True, blank=True)
    filter_text = models.TextField(blank=True, default="")
    projected_fields = models.JSONField(default=list, blank=True)
    planning_ms = models.FloatField(null=True, blank=True)
    result_data_files = models.BigIntegerField(null=True, blank=True)
    result_delete_files = models.BigIntegerField(null=True, blank=True)
    total_data_manifests = models.BigIntegerField(null=True, blank=True)
    scanned_data_manifests = models.BigIntegerField(null=True, blank=True)
    skipped_data_manifests = models.BigIntegerField(null=True, blank=True)
    skipped_data_files = models.BigIntegerField(null=True, blank=True)
    total_file_size_bytes = models.BigIntegerField(null=True, blank=True)
    # a commit's
    sequence_number = models.BigIntegerField(null=True, blank=True)
    operation = models.CharField(max_length=64, blank=True, default="")
    attempts = models.BigIntegerField(null=True, blank=True)
    added_data_files = models.BigIntegerField(null=True, blank=True)
    removed_data_files = models.BigIntegerField(null=True, blank=True)
    added_delete_files = models.BigIntegerField(null=True, blank=True)
    removed_delete_files = models.BigIntegerField(null=True, blank=True)
    added_records = models.BigIntegerField(null=True, blank=True)
    removed_records = models.BigIntegerField(null=True, blank=True)
    commit_ms = models.FloatField(null=True, blank=True)
    raw = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            models.Index(fields=["catalog", "namespace", "table", "report_type", "id"],
                         name="explorer_report_table_idx"),
        ]

    def __str__(self) -> str:
        return (f"{self.get_report_type_display()} of {self.namespace}.{self.table} by "
                f"{self.engine or 'an unnamed engine'} ({self.actor_name or '-'})")

    @property
    def explain_query(self) -> str:
        """The explorer plan page's query string that shows this scan's plan explained (a
        scan Floe planned, ``raw["floe-explain"]``); empty for any other report."""
        params = self.raw.get("floe-explain") if isinstance(self.raw, dict) else None
        if not isinstance(params, dict):
            return ""
        return urllib.parse.urlencode({k: str(v) for k, v in params.items()
                                       if k in ("snapshot", "filter")})

    @property
    def scanned_data_files(self) -> int | None:
        """Data files the scan read (its result), beside :attr:`skipped_data_files`."""
        return self.result_data_files


class TableMetrics(models.Model):
    """A table's health at one of its states (one metadata file): files, records, deletes,
    sizes, manifests, snapshots, as :func:`floe.health.table_metrics` counts them; recorded
    after every commit Floe observes (its own tasks, REST commits, the sweep of catalogs for
    commits made elsewhere). ``external``: no Floe task or REST commit of this site made
    that state (the sweep saw it); ``engine`` names what wrote it when its snapshot summary
    says."""

    class Source(models.TextChoices):
        TASK = "task"
        REST = "rest"
        SWEEP = "sweep"

    catalog = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255)
    table = models.CharField(max_length=255)
    metadata_location = models.TextField()
    observed_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=8, choices=Source.choices)
    external = models.BooleanField(default=False)
    engine = models.CharField(max_length=255, blank=True, default="")
    snapshot_id = models.BigIntegerField(null=True, blank=True)
    last_commit_ms = models.BigIntegerField(null=True, blank=True)
    data_files = models.BigIntegerField(null=True, blank=True)
    delete_files = models.BigIntegerField(null=True, blank=True)
    records = models.BigIntegerField(null=True, blank=True)
    total_bytes = models.BigIntegerField(null=True, blank=True)
    avg_data_file_bytes = models.BigIntegerField(null=True, blank=True)
    target_file_bytes = models.BigIntegerField(null=True, blank=True)
    small_files = models.BigIntegerField(null=True, blank=True)
    small_file_ratio = models.FloatField(null=True, blank=True)
    delete_file_ratio = models.FloatField(null=True, blank=True)
    position_deletes = models.BigIntegerField(null=True, blank=True)
    equality_deletes = models.BigIntegerField(null=True, blank=True)
    deleted_row_ratio = models.FloatField(null=True, blank=True)
    manifests = models.IntegerField(null=True, blank=True)
    data_manifests = models.IntegerField(null=True, blank=True)
    snapshots = models.IntegerField(null=True, blank=True)
    snapshots_past_expiry = models.IntegerField(null=True, blank=True)
    metadata_bytes = models.BigIntegerField(null=True, blank=True)
    # the rows a read returns (floe.live_rows): ``live_records`` when known exactly (from the
    # summary without delete files, or counted when bounded), else null with the bounds the
    # summary proves in ``live_min``..``live_max`` (null when not even those are known)
    live_records = models.BigIntegerField(null=True, blank=True)
    live_exact = models.BooleanField(default=False)
    live_min = models.BigIntegerField(null=True, blank=True)
    live_max = models.BigIntegerField(null=True, blank=True)
    # from the current snapshot's partition statistics file, null without one: how many
    # partitions, and the largest one's rows over the mean rows per partition
    # (floe.health.partition_skew)
    partitions = models.IntegerField(null=True, blank=True)
    partition_skew = models.FloatField(null=True, blank=True)
    # the table's own maintenance settings (its floe.policy.* properties at this state)
    policy_properties = models.JSONField(default=dict, blank=True)
    # how it is judged (floe.health.table_health): the keys of the signs that warn, and a
    # score that ranks tables by how much they need attention (the fleet view, worst first)
    warnings = models.JSONField(default=list, blank=True)
    attention = models.FloatField(default=0.0)
    # the newest recorded state of its table (the fleet view reads only these)
    current = models.BooleanField(default=False)

    class Meta:
        ordering = ["-observed_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["catalog", "namespace", "table", "metadata_location"],
                                    name="explorer_metrics_state_unique"),
        ]
        indexes = [
            models.Index(fields=["catalog", "namespace", "table", "id"],
                         name="explorer_metrics_table_idx"),
            models.Index(fields=["current", "-attention", "catalog", "namespace", "table"],
                         name="explorer_metrics_fleet_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.catalog}:{self.namespace}.{self.table} at {self.metadata_location}"


class MaintenancePolicy(models.Model):
    """Maintenance on autopilot: an action (a task kind of Floe's) for the tables of a catalog
    (or every catalog, ``*``) whose ``namespace.table`` matches a pattern, with its
    thresholds and options (``params``), evaluated every ``every_seconds``, optionally only
    inside a daily window (UTC). Where several policies of one action match a table, the
    nearest wins (explorer.maintenance.policies)."""

    class Action(models.TextChoices):
        EXPIRE = "expire_snapshots", "expire snapshots"
        ORPHANS = "remove_orphan_files", "remove orphan files"
        COMPACT = "compact", "compact data files"
        REWRITE_MANIFESTS = "rewrite_manifests", "rewrite manifests"
        PARTITION_STATS = "compute_partition_stats", "compute partition statistics"

    name = models.CharField(max_length=64, unique=True)
    action = models.CharField(max_length=32, choices=Action.choices)
    catalog = models.CharField(max_length=255, default="*")
    tables = models.CharField(max_length=512, default="*")
    params = models.JSONField(default=dict, blank=True)
    every_seconds = models.IntegerField(default=86400)
    window_start = models.CharField(max_length=5, blank=True, default="")
    window_end = models.CharField(max_length=5, blank=True, default="")
    paused = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"policy {self.name!r}: {self.get_action_display()} on {self.catalog}:{self.tables}"


class AlertRule(models.Model):
    """An alert: when a table's recorded health (its current state) passes a threshold, or
    when a policy's run fails, for the tables of a catalog (or ``*``) matching a pattern; each
    alert is posted to ``webhook_url`` (JSON with a Slack-compatible ``text``) and shown on
    the fleet view (explorer.maintenance.alerts)."""

    name = models.CharField(max_length=64, unique=True)
    metric = models.CharField(max_length=32)
    op = models.CharField(max_length=2, default=">")
    threshold = models.FloatField(default=0.0)
    catalog = models.CharField(max_length=255, default="*")
    tables = models.CharField(max_length=512, default="*")
    webhook_url = models.CharField(max_length=2048, blank=True, default="")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"alert {self.name!r}: {self.metric} {self.op} {self.threshold:g}"


class Alert(models.Model):
    """One firing of an :class:`AlertRule` on one table (open until the condition no longer
    holds), or on one failed policy run; whether the webhook took it."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    catalog = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255)
    table = models.CharField(max_length=255)
    value = models.FloatField(null=True, blank=True)
    message = models.TextField()
    task_run = models.ForeignKey(TaskRun, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    fired_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivery_error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-fired_at", "-id"]
        indexes = [models.Index(fields=["resolved_at", "catalog", "namespace", "table"],
                                name="explorer_alert_open_idx")]

    def __str__(self) -> str:
        return self.message


class PolicyTablePause(models.Model):
    """A table no maintenance policy touches until it is resumed (a person's pause)."""

    catalog = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255)
    table = models.CharField(max_length=255)
    paused_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    paused_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["catalog", "namespace", "table"],
                                               name="explorer_policy_table_pause_unique")]

    def __str__(self) -> str:
        return f"policies paused on {self.catalog}:{self.namespace}.{self.table}"
