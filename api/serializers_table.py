"""Response shapes of one table's endpoints (documented in the OpenAPI schema). The rows
are floe.inspect's / floe.diff's / floe.health's, unchanged, so the API, the pages and the
``floe`` command show the same numbers."""

from __future__ import annotations

from rest_framework import serializers

from api.serializers import TableSerializer

S = serializers.Serializer


class SchemaFieldSerializer(S):  # type: ignore[type-arg]
    depth = serializers.IntegerField()
    field_id = serializers.IntegerField()
    name = serializers.CharField()
    path = serializers.CharField(help_text="Dotted path from the root of the schema")
    type = serializers.CharField(help_text="Primitive type, or struct / list / map")
    required = serializers.BooleanField()
    doc = serializers.CharField(allow_null=True)


class RefSerializer(S):  # type: ignore[type-arg]
    name = serializers.CharField()
    type = serializers.CharField(help_text="branch or tag")
    snapshot_id = serializers.IntegerField()
    min_snapshots_to_keep = serializers.IntegerField(allow_null=True)
    max_snapshot_age_ms = serializers.IntegerField(allow_null=True)
    max_ref_age_ms = serializers.IntegerField(allow_null=True)
    timestamp_ms = serializers.IntegerField(allow_null=True)
    time = serializers.CharField(allow_null=True)
    operation = serializers.CharField(allow_null=True)


class TotalsSerializer(S):  # type: ignore[type-arg]
    total_records = serializers.IntegerField(allow_null=True)
    total_data_files = serializers.IntegerField(allow_null=True)
    total_delete_files = serializers.IntegerField(allow_null=True)
    total_files_size = serializers.IntegerField(allow_null=True)
    total_position_deletes = serializers.IntegerField(allow_null=True)
    total_equality_deletes = serializers.IntegerField(allow_null=True)
    live_records = serializers.IntegerField(
        allow_null=True, help_text="rows a read returns, exact (from the summary or counted);"
                                   " null when only live_min and live_max are known")
    live_exact = serializers.BooleanField(help_text="whether live_records is known")
    live_min = serializers.IntegerField(allow_null=True,
                                        help_text="at least this many rows are live")
    live_max = serializers.IntegerField(allow_null=True,
                                        help_text="at most this many rows are live")
    live_how = serializers.ChoiceField(
        choices=["summary", "counted", "bounds", "unknown"],
        help_text="summary: no delete files; counted: the files with deletes were read with "
                  "their deletes applied; bounds: too large to count, see live_min/live_max; "
                  "unknown: the summary has no totals")


class HealthMetricSerializer(S):  # type: ignore[type-arg]
    key = serializers.CharField()
    label = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    display = serializers.CharField()
    threshold = serializers.CharField(help_text="What the value is judged against")
    status = serializers.ChoiceField(choices=["ok", "warn", "unknown"])
    detail = serializers.CharField()


class SpecHistorySerializer(S):  # type: ignore[type-arg]
    class _Field(S):  # type: ignore[type-arg]
        field_id = serializers.IntegerField()
        text = serializers.CharField()

    spec_id = serializers.IntegerField()
    is_default = serializers.BooleanField()
    fields = _Field(many=True)
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())


class SortOrderSerializer(S):  # type: ignore[type-arg]
    order_id = serializers.IntegerField()
    is_default = serializers.BooleanField()
    fields = serializers.ListField(child=serializers.CharField())


class TableDetailSerializer(TableSerializer):
    """The table list's row plus ``floe describe`` and the health panel."""

    table_uuid = serializers.CharField(allow_null=True)
    last_updated_ms = serializers.IntegerField()
    last_sequence_number = serializers.IntegerField()
    current_schema_id = serializers.IntegerField()
    default_spec_id = serializers.IntegerField()
    default_sort_order_id = serializers.IntegerField()
    properties = serializers.DictField(child=serializers.CharField())
    schemas = serializers.ListField(child=serializers.JSONField(), help_text="Schema JSON (spec Appendix C) by id")
    schema_tree = SchemaFieldSerializer(many=True, help_text="The current schema, nested fields flattened in order")
    partition_specs = SpecHistorySerializer(many=True, source="spec_list")
    sort_orders = SortOrderSerializer(many=True, source="order_list")
    refs = RefSerializer(many=True)
    totals = TotalsSerializer()
    snapshot_count = serializers.IntegerField()
    health = HealthMetricSerializer(many=True)


class SnapshotSerializer(S):  # type: ignore[type-arg]
    snapshot_id = serializers.IntegerField()
    parent_id = serializers.IntegerField(allow_null=True)
    sequence_number = serializers.IntegerField()
    timestamp_ms = serializers.IntegerField()
    time = serializers.CharField()
    operation = serializers.CharField(allow_null=True)
    summary = serializers.DictField(child=serializers.CharField())
    manifest_list = serializers.CharField(allow_null=True)
    schema_id = serializers.IntegerField(allow_null=True)
    is_current = serializers.BooleanField()


class ParentSerializer(S):  # type: ignore[type-arg]
    snapshot_id = serializers.IntegerField()
    timestamp_ms = serializers.IntegerField()
    time = serializers.CharField()
    operation = serializers.CharField(allow_null=True)


class SnapshotDetailSerializer(SnapshotSerializer):
    parents = ParentSerializer(many=True, help_text="Ancestors, nearest first (limited)")
    parents_truncated = serializers.BooleanField()


class PartitionSummarySerializer(S):  # type: ignore[type-arg]
    field = serializers.CharField()
    contains_null = serializers.BooleanField()
    contains_nan = serializers.BooleanField(allow_null=True)
    lower_bound = serializers.JSONField(allow_null=True, help_text="JSON single-value serialisation")
    upper_bound = serializers.JSONField(allow_null=True)
    lower_bound_text = serializers.CharField(
        allow_null=True, help_text="the bound as Iceberg prints it (true, 0.1, -Infinity, ISO "
                                   "dates)")
    upper_bound_text = serializers.CharField(allow_null=True)


class ManifestSerializer(S):  # type: ignore[type-arg]
    path = serializers.CharField()
    length = serializers.IntegerField()
    partition_spec_id = serializers.IntegerField()
    content = serializers.CharField()
    sequence_number = serializers.IntegerField()
    min_sequence_number = serializers.IntegerField()
    added_snapshot_id = serializers.IntegerField(allow_null=True)
    added_files_count = serializers.IntegerField(allow_null=True)
    existing_files_count = serializers.IntegerField(allow_null=True)
    deleted_files_count = serializers.IntegerField(allow_null=True)
    added_rows_count = serializers.IntegerField(allow_null=True)
    existing_rows_count = serializers.IntegerField(allow_null=True)
    deleted_rows_count = serializers.IntegerField(allow_null=True)
    partitions = PartitionSummarySerializer(many=True)


class FileSerializer(S):  # type: ignore[type-arg]
    content = serializers.CharField(help_text="data, position_deletes or equality_deletes")
    file_path = serializers.CharField()
    file_format = serializers.CharField()
    spec_id = serializers.IntegerField()
    partition = serializers.DictField(child=serializers.JSONField(allow_null=True))
    record_count = serializers.IntegerField()
    file_size_in_bytes = serializers.IntegerField()
    status = serializers.IntegerField(help_text="0 existing, 1 added, 2 deleted")
    snapshot_id = serializers.IntegerField(allow_null=True)
    sequence_number = serializers.IntegerField(allow_null=True)
    file_sequence_number = serializers.IntegerField(allow_null=True)
    manifest_path = serializers.CharField()
    equality_ids = serializers.ListField(child=serializers.IntegerField(), required=False)


class SnapshotLogSerializer(S):  # type: ignore[type-arg]
    snapshot_id = serializers.IntegerField()
    timestamp_ms = serializers.IntegerField()
    time = serializers.CharField()
    operation = serializers.CharField(allow_null=True)
    expired = serializers.BooleanField()


class MetadataLogSerializer(S):  # type: ignore[type-arg]
    metadata_file = serializers.CharField()
    timestamp_ms = serializers.IntegerField()
    time = serializers.CharField()
    is_current = serializers.BooleanField()


class SchemaChangeSerializer(S):  # type: ignore[type-arg]
    change = serializers.ChoiceField(choices=[
        "added", "dropped", "renamed", "promoted", "made-required", "made-optional", "doc-changed"])
    field_id = serializers.IntegerField()
    name = serializers.CharField(allow_null=True)
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


class SchemaHistorySerializer(S):  # type: ignore[type-arg]
    schema_id = serializers.IntegerField()
    is_current = serializers.BooleanField()
    field_count = serializers.IntegerField()
    changes = SchemaChangeSerializer(many=True)


class HistorySerializer(S):  # type: ignore[type-arg]
    snapshot_log_count = serializers.IntegerField(help_text="entries in the whole snapshot log")
    next = serializers.URLField(allow_null=True, help_text="the next page of the snapshot log")
    previous = serializers.URLField(allow_null=True,
                                    help_text="the previous page of the snapshot log")
    snapshot_log = SnapshotLogSerializer(
        many=True, help_text="this page of the snapshot log (``page``, ``page_size``), newest first")
    metadata_log = MetadataLogSerializer(many=True)
    schemas = SchemaHistorySerializer(many=True)
    specs = SpecHistorySerializer(many=True)


class DiffSerializer(S):  # type: ignore[type-arg]
    from_snapshot_id = serializers.IntegerField(allow_null=True)
    to_snapshot_id = serializers.IntegerField(allow_null=True)
    manifests_shared = serializers.IntegerField()
    manifests_read = serializers.IntegerField()
    added_files = FileSerializer(many=True)
    removed_files = FileSerializer(many=True)
    added_data_files = serializers.IntegerField()
    removed_data_files = serializers.IntegerField()
    added_delete_files = serializers.IntegerField()
    removed_delete_files = serializers.IntegerField()
    added_rows = serializers.IntegerField()
    removed_rows = serializers.IntegerField()
    added_bytes = serializers.IntegerField()
    removed_bytes = serializers.IntegerField()
    from_schema_id = serializers.IntegerField(allow_null=True)
    to_schema_id = serializers.IntegerField()
    schema_changes = SchemaChangeSerializer(many=True)
    from_spec_ids = serializers.ListField(child=serializers.IntegerField())
    to_spec_ids = serializers.ListField(child=serializers.IntegerField())
