"""What the explorer keeps in its own database: background task runs and the audit trail.

Tables themselves are never stored here; they are read from their catalogs through floe.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class TaskRun(models.Model):
    """One background task: the row the UI polls for state and progress."""

    class Kind(models.TextChoices):
        REFRESH_TABLE_STATS = "refresh_table_stats", "Refresh table statistics"

    class State(models.TextChoices):
        QUEUED = "QUEUED"
        RUNNING = "RUNNING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"

    kind = models.CharField(max_length=64, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="task_runs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state", "created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__lte=100), name="taskrun_progress_at_most_100"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in (self.State.SUCCEEDED, self.State.FAILED)


class AuditEntry(models.Model):
    """Who changed which table when, with the metadata file before and after the change.

    Metadata files are immutable, so their locations identify both table states exactly.
    """

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="audit_entries",
    )
    # Kept as text too: the entry must still say who it was after the user is deleted.
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=64)
    catalog = models.CharField(max_length=255)
    namespace = models.CharField(max_length=255)
    table = models.CharField(max_length=255)
    metadata_before = models.CharField(max_length=2048, blank=True, default="")
    metadata_after = models.CharField(max_length=2048, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    task_run = models.ForeignKey(
        TaskRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["catalog", "namespace", "table", "created_at"])]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.actor_name or 'system'} {self.action} {self.namespace}.{self.table}"
