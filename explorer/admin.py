from django.contrib import admin

from explorer.models import AuditEntry, TaskRun


@admin.register(TaskRun)
class TaskRunAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "state", "progress", "created_by", "created_at", "finished_at")
    list_filter = ("kind", "state")
    readonly_fields = ("created_at", "started_at", "finished_at", "updated_at")


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor_name", "action", "catalog", "namespace", "table")
    list_filter = ("action", "catalog")
    search_fields = ("namespace", "table", "actor_name")

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False  # the audit trail is append-only
