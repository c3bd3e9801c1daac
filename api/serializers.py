from __future__ import annotations

from typing import Any

from rest_framework import serializers

from explorer.models import TaskRun


class CatalogSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField(help_text="filesystem or sql")
    warehouse = serializers.CharField(
        allow_null=True, help_text="The directory the catalog's tables must stay inside")
    exists = serializers.BooleanField(help_text="Whether the warehouse directory exists")


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


class TaskRunSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = TaskRun
        fields = [
            "id", "kind", "state", "progress", "params", "result", "error", "created_by",
            "created_at", "started_at", "finished_at", "updated_at",
        ]
        read_only_fields = fields


class RefreshTableStatsParams(serializers.Serializer):
    catalog = serializers.CharField(required=False, default="local")
    namespace = serializers.CharField(required=False)


class TaskRunCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=TaskRun.Kind.choices)
    params = serializers.DictField(required=False, default=dict)

    _params_by_kind = {TaskRun.Kind.REFRESH_TABLE_STATS.value: RefreshTableStatsParams}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        params = self._params_by_kind[attrs["kind"]](data=attrs["params"])
        if not params.is_valid():
            raise serializers.ValidationError({"params": params.errors})
        return {**attrs, "params": dict(params.validated_data)}
