from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from explorer.audit.selectors import AUDIT_CSV_COLUMNS, entry_words
from explorer.models import AuditEntry, CatalogGrant, TaskRun
from explorer.tasks import outcomes


class CatalogSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField(help_text="filesystem or sql")
    warehouse = serializers.CharField(
        allow_null=True, help_text="The directory the catalog's tables must stay inside")
    exists = serializers.BooleanField(help_text="Whether the warehouse directory exists")
    problem = serializers.CharField(
        allow_null=True, help_text="Why the catalog cannot be used (its configuration entry "
        "is broken: the catalog's namespaces and tables answer 503); null when it can")


class NamespaceSerializer(serializers.Serializer):
    catalog = serializers.CharField()
    name = serializers.CharField()
    table_count = serializers.IntegerField()


class TableSerializer(serializers.Serializer):
    catalog = serializers.CharField()
    namespace = serializers.CharField()
    name = serializers.CharField()
    identifier = serializers.CharField()
    location = serializers.CharField(
        allow_null=True, help_text="From the metadata; null when the table cannot be read")
    metadata_location = serializers.CharField(allow_null=True)
    format_version = serializers.IntegerField(allow_null=True)
    current_snapshot_id = serializers.IntegerField(allow_null=True)
    data_files = serializers.IntegerField(allow_null=True)
    delete_files = serializers.IntegerField(allow_null=True)
    records = serializers.IntegerField(allow_null=True)
    files_size = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True, help_text="Why the table cannot be read, if it cannot.")


class TaskRunSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                              allow_null=True)
    cancelled_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                                allow_null=True)
    cancel_requested = serializers.BooleanField(read_only=True)
    download = serializers.SerializerMethodField(
        help_text="An export's file (for its creator), while it is kept")
    outcome = serializers.SerializerMethodField(
        help_text="What happened, in one sentence, once the run finished (null before)")
    progress_text = serializers.SerializerMethodField(
        help_text="What the task pages show beside the progress bar: the stage and its "
                  "counts while it runs, the outcome once it finished")

    class Meta:
        model = TaskRun
        fields = [
            "id", "kind", "state", "catalog", "namespace", "table", "params", "progress",
            "stage", "progress_done", "progress_total", "progress_detail", "outcome",
            "progress_text", "result", "error",
            "created_by", "created_via", "created_at", "started_at", "heartbeat_at",
            "finished_at", "updated_at", "cancel_requested", "cancel_requested_at",
            "cancelled_by", "attempts", "source_run", "metadata_before", "snapshot_before",
            "download",
        ]
        read_only_fields = fields

    def get_outcome(self, run: TaskRun) -> str | None:
        return outcomes.outcome(run)

    def get_progress_text(self, run: TaskRun) -> str:
        return outcomes.progress_text(run)

    def get_download(self, run: TaskRun) -> str | None:
        if run.kind != TaskRun.Kind.EXPORT or run.state != TaskRun.State.SUCCEEDED \
                or not run.artifact:
            return None
        return str(reverse("task-download", kwargs={"pk": run.pk}))


class TaskRunCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The shape of a submission; the parameters are checked per kind by the service
    (explorer.tasks.kinds), which answers 400 naming the parameter."""

    kind = serializers.ChoiceField(choices=TaskRun.Kind.choices)
    params = serializers.DictField(required=False, default=dict,
                                   help_text="The kind's parameters (see the README)")


class AuditEntrySerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    description = serializers.SerializerMethodField(
        help_text="What the entry records, in words (explorer.audit.selectors.entry_words)")

    def get_description(self, entry: AuditEntry) -> str:
        return entry_words(entry)

    class Meta:
        model = AuditEntry
        fields = list(AUDIT_CSV_COLUMNS)
        read_only_fields = fields


class AuditRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    timestamp_ms = serializers.IntegerField()
    source = serializers.ChoiceField(choices=["floe", "external"])
    metadata_file = serializers.CharField(allow_null=True)
    is_current = serializers.BooleanField()
    actor = serializers.CharField(allow_null=True)
    actor_via = serializers.CharField(allow_null=True)
    action = serializers.CharField(allow_null=True)
    outcome = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    entry_id = serializers.IntegerField(allow_null=True)
    task_run_id = serializers.IntegerField(allow_null=True)
    snapshot_id = serializers.IntegerField(allow_null=True)
    operation = serializers.CharField(allow_null=True)
    engine = serializers.CharField(allow_null=True)
    current_snapshot_id = serializers.IntegerField(allow_null=True)
    summary = serializers.DictField(child=serializers.CharField())
    description = serializers.CharField(
        help_text="What the version (or the Floe change that made none) did, in words")
    previous_file = serializers.CharField(
        allow_null=True, help_text="The version before this one in the metadata log")


class GrantSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)
    granted_by = serializers.SlugRelatedField(slug_field="username", read_only=True,
                                              allow_null=True)

    class Meta:
        model = CatalogGrant
        fields = ["id", "user", "catalog", "role", "granted_by", "granted_at"]
        read_only_fields = fields


class GrantCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    user = serializers.CharField(help_text="user name")
    catalog = serializers.CharField(help_text="catalog name, or * for every catalog")
    role = serializers.ChoiceField(choices=CatalogGrant.Role.choices)
