# The explorer acts (issue 10): task runs with progress, heartbeat, cancel and the table they
# work on; an append-only audit trail (recreated: the first version was never written to, and
# its foreign keys would let a user or task-run deletion change entries); per-catalog grants.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("explorer", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.DeleteModel(name="AuditEntry"),
        migrations.AlterField(
            model_name="taskrun",
            name="kind",
            field=models.CharField(choices=[
                ("refresh_table_stats", "Refresh table statistics"),
                ("rollback", "Roll back"),
                ("set_current", "Set the current snapshot"),
                ("cherry_pick", "Cherry-pick a snapshot"),
                ("branch_create", "Create a branch"),
                ("branch_replace", "Move a branch"),
                ("branch_rename", "Rename a branch"),
                ("branch_remove", "Remove a branch"),
                ("branch_fast_forward", "Fast-forward a branch"),
                ("tag_create", "Create a tag"),
                ("tag_replace", "Move a tag"),
                ("tag_remove", "Remove a tag"),
                ("ref_retention", "Set a ref's retention"),
                ("evolve", "Evolve the schema, partition spec or sort order"),
                ("delete_rows", "Delete rows"),
                ("export", "Export a table state"),
                ("expire_snapshots_dry_run", "Expire snapshots (dry run)"),
                ("expire_snapshots", "Expire snapshots"),
                ("remove_orphan_files_dry_run", "Remove orphan files (dry run)"),
                ("remove_orphan_files", "Remove orphan files"),
                ("compact", "Compact data files"),
                ("rewrite_manifests", "Rewrite manifests"),
            ], max_length=64),
        ),
        migrations.AlterField(
            model_name="taskrun",
            name="state",
            field=models.CharField(choices=[
                ("QUEUED", "Queued"), ("RUNNING", "Running"), ("SUCCEEDED", "Succeeded"),
                ("FAILED", "Failed"), ("CANCELLED", "Cancelled"),
            ], default="QUEUED", max_length=16),
        ),
        migrations.AddField(model_name="taskrun", name="catalog",
                            field=models.CharField(blank=True, default="", max_length=255)),
        migrations.AddField(model_name="taskrun", name="namespace",
                            field=models.CharField(blank=True, default="", max_length=255)),
        migrations.AddField(model_name="taskrun", name="table",
                            field=models.CharField(blank=True, default="", max_length=255)),
        migrations.AddField(model_name="taskrun", name="stage",
                            field=models.CharField(blank=True, default="", max_length=64)),
        migrations.AddField(model_name="taskrun", name="progress_done",
                            field=models.BigIntegerField(default=0)),
        migrations.AddField(model_name="taskrun", name="progress_total",
                            field=models.BigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="taskrun", name="progress_detail",
                            field=models.CharField(blank=True, default="", max_length=255)),
        migrations.AddField(model_name="taskrun", name="heartbeat_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="taskrun", name="cancel_requested_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(
            model_name="taskrun", name="cancelled_by",
            field=models.ForeignKey(blank=True, null=True,
                                    on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="+", to=settings.AUTH_USER_MODEL)),
        migrations.AddField(model_name="taskrun", name="attempts",
                            field=models.PositiveSmallIntegerField(default=0)),
        migrations.AddField(model_name="taskrun", name="created_via",
                            field=models.CharField(blank=True, default="", max_length=16)),
        migrations.AddField(
            model_name="taskrun", name="source_run",
            field=models.ForeignKey(blank=True, null=True,
                                    on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="confirmations", to="explorer.taskrun")),
        migrations.AddField(model_name="taskrun", name="metadata_before",
                            field=models.CharField(blank=True, default="", max_length=2048)),
        migrations.AddField(model_name="taskrun", name="snapshot_before",
                            field=models.BigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="taskrun", name="artifact",
                            field=models.CharField(blank=True, default="", max_length=1024)),
        migrations.AddIndex(
            model_name="taskrun",
            index=models.Index(fields=["catalog", "namespace", "table", "created_at"],
                               name="explorer_taskrun_table_idx"),
        ),
        migrations.AddIndex(
            model_name="taskrun",
            index=models.Index(fields=["state", "heartbeat_at"], name="explorer_taskrun_beat_idx"),
        ),
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("actor_id", models.BigIntegerField(blank=True, null=True)),
                ("actor_name", models.CharField(blank=True, default="", max_length=150)),
                ("actor_via", models.CharField(blank=True, default="", max_length=16)),
                ("action", models.CharField(max_length=64)),
                ("params", models.JSONField(blank=True, default=dict)),
                ("catalog", models.CharField(max_length=255)),
                ("namespace", models.CharField(blank=True, default="", max_length=255)),
                ("table", models.CharField(blank=True, default="", max_length=255)),
                ("metadata_before", models.CharField(blank=True, default="", max_length=2048)),
                ("metadata_after", models.CharField(blank=True, default="", max_length=2048)),
                ("snapshot_before", models.BigIntegerField(blank=True, null=True)),
                ("snapshot_after", models.BigIntegerField(blank=True, null=True)),
                ("outcome", models.CharField(choices=[
                    ("succeeded", "Succeeded"), ("failed", "Failed"), ("cancelled", "Cancelled"),
                ], max_length=16)),
                ("result", models.JSONField(blank=True, null=True)),
                ("error", models.TextField(blank=True, default="")),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("duration_ms", models.BigIntegerField(blank=True, null=True)),
                ("task_run_id", models.BigIntegerField(blank=True, null=True)),
            ],
            options={
                "verbose_name_plural": "audit entries",
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(fields=["catalog", "namespace", "table", "created_at"],
                                 name="explorer_audit_table_idx"),
                    models.Index(fields=["actor_name", "created_at"],
                                 name="explorer_audit_actor_idx"),
                    models.Index(fields=["action", "created_at"],
                                 name="explorer_audit_action_idx"),
                ],
            },
        ),
        migrations.CreateModel(
            name="CatalogGrant",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("catalog", models.CharField(max_length=255)),
                ("role", models.CharField(choices=[
                    ("viewer", "Viewer"), ("maintainer", "Maintainer"), ("admin", "Admin"),
                ], max_length=16)),
                ("granted_at", models.DateTimeField(auto_now_add=True)),
                ("granted_by", models.ForeignKey(blank=True, null=True,
                                                 on_delete=django.db.models.deletion.SET_NULL,
                                                 related_name="+", to=settings.AUTH_USER_MODEL)),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                           related_name="catalog_grants",
                                           to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "ordering": ["catalog", "user_id"],
                "constraints": [models.UniqueConstraint(fields=("user", "catalog"),
                                                        name="catalog_grant_once")],
            },
        ),
    ]
