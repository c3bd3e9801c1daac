from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from explorer.models import AuditEntry, CatalogGrant, TaskRun


@admin.register(TaskRun)
class TaskRunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Runs are changed by their life cycle only (explorer.tasks.lifecycle): read-only here."""

    list_display = ("id", "kind", "state", "progress", "catalog", "namespace", "table",
                    "created_by", "created_at", "finished_at")
    list_filter = ("kind", "state", "catalog")
    search_fields = ("namespace", "table", "created_by__username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The audit trail is append-only: it can be looked at, never added to, changed or
    deleted from here (the model refuses too)."""

    list_display = ("created_at", "actor_name", "actor_via", "action", "catalog", "namespace",
                    "table", "outcome")
    list_filter = ("action", "outcome", "catalog")
    search_fields = ("namespace", "table", "actor_name")
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(CatalogGrant)
class CatalogGrantAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Grants are listed here; they are made and revoked through ``/api/grants/`` or
    ``manage.py floe_grant``, which record each change in the audit trail. (Deleting stays
    possible so that deleting a user, which deletes their grants, works here.)"""

    list_display = ("user", "catalog", "role", "granted_by", "granted_at")
    list_filter = ("role", "catalog")
    search_fields = ("user__username", "catalog")
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
