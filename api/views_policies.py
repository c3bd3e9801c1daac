"""Maintenance policies under ``/api/policies/`` and alerts under ``/api/alert-rules/`` and
``/api/alerts/``. Policies: list and read (any reader), create (the
admin role on the policy's catalog; a 400 naming the field when one does not hold, nothing
stored), pause and resume (the same role), and what the policies would do now
(``/api/policies/preview/``, ``/api/policies/{id}/preview/``: per table, due or not and why,
from the recorded health; nothing runs). explorer.maintenance.policies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from explorer.access import permissions
from explorer.maintenance.alerts import alert_rule_create, fix_link
from explorer.maintenance.policies import policies_preview, policy_create, table_pause_set
from explorer.maintenance.selectors import fleet_catalogs
from explorer.models import Alert, AlertRule, MaintenancePolicy


class PolicySerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    window = serializers.SerializerMethodField()

    class Meta:
        model = MaintenancePolicy
        fields = ("id", "name", "action", "catalog", "tables", "params", "every_seconds",
                  "window", "paused", "created_at", "updated_at")

    def get_window(self, policy: MaintenancePolicy) -> str:
        return f"{policy.window_start}-{policy.window_end}" if policy.window_start else ""


class DecisionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What a policy would do to one table now (explorer.maintenance.policies.Decision)."""

    policy = serializers.CharField()
    action = serializers.CharField()
    catalog = serializers.CharField()
    namespace = serializers.CharField()
    table = serializers.CharField()
    due = serializers.BooleanField()
    reason = serializers.CharField()


class TablePauseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A table's pause as set (the fields as sent, and the state now)."""

    catalog = serializers.JSONField()
    namespace = serializers.JSONField()
    table = serializers.JSONField()
    paused = serializers.BooleanField()


class PolicyCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The fields as sent; every check is the service's (one place)."""

    name = serializers.JSONField()
    action = serializers.JSONField()
    catalog = serializers.JSONField(required=False, default="*")
    tables = serializers.JSONField(required=False, default="*")
    params = serializers.JSONField(required=False, default=dict)
    every_seconds = serializers.JSONField(required=False, default=86400)
    window = serializers.JSONField(required=False, default=None)
    paused = serializers.BooleanField(required=False, default=False)


class _CreateThroughService(viewsets.GenericViewSet):  # type: ignore[type-arg]
    """``create``: the fields as sent (``create_serializer_class``: their presence and
    defaults only) to the service that checks and stores them (``create_service``, with
    the user); 201 with the row as ``serializer_class`` shows it."""

    create_serializer_class: type[serializers.Serializer]  # type: ignore[type-arg]
    create_service: Callable[..., Any]

    def create(self, request: Request) -> Response:
        form = self.create_serializer_class(data=request.data)
        form.is_valid(raise_exception=True)
        row = self.create_service(user=request.user, **form.validated_data)
        return Response(self.get_serializer(row).data, status=status.HTTP_201_CREATED)


@extend_schema_view(create=extend_schema(request=PolicyCreateSerializer,
                                         responses={201: PolicySerializer}))
class PolicyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, _CreateThroughService):
    """Maintenance policies: an action for the tables of a catalog that match a pattern, with
    its thresholds, schedule and window."""

    serializer_class = PolicySerializer
    queryset = MaintenancePolicy.objects.all()
    create_serializer_class = PolicyCreateSerializer
    create_service = staticmethod(policy_create)

    def _set_paused(self, request: Request, paused: bool) -> Response:
        policy = self.get_object()
        permissions.require_administer(user=request.user, catalog=policy.catalog)
        policy.paused = paused
        policy.save(update_fields=["paused", "updated_at"])
        return Response(self.get_serializer(policy).data)

    @extend_schema(request=None, responses=PolicySerializer)
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: Any = None) -> Response:
        return self._set_paused(request, True)

    @extend_schema(request=None, responses=PolicySerializer)
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: Any = None) -> Response:
        return self._set_paused(request, False)

    def _table_pause(self, request: Request, paused: bool) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        table_pause_set(user=request.user, catalog=data.get("catalog"),
                        namespace=data.get("namespace"), table=data.get("table"),
                        paused=paused)
        return Response({"catalog": data.get("catalog"), "namespace": data.get("namespace"),
                         "table": data.get("table"), "paused": paused})

    @extend_schema(request=None, responses=TablePauseSerializer)
    @action(detail=False, methods=["post"], url_path="pause-table")
    def pause_table(self, request: Request) -> Response:
        """No policy touches the table (``catalog``, ``namespace``, ``table``) until resumed;
        the maintainer role on its catalog."""
        return self._table_pause(request, True)

    @extend_schema(request=None, responses=TablePauseSerializer)
    @action(detail=False, methods=["post"], url_path="resume-table")
    def resume_table(self, request: Request) -> Response:
        """Policies touch the table again."""
        return self._table_pause(request, False)

    @extend_schema(responses=DecisionSerializer(many=True), operation_id="policies_preview_all")
    @action(detail=False, methods=["get"], url_path="preview", pagination_class=None)
    def preview_all(self, request: Request) -> Response:
        """What every policy would do now, table by table."""
        return Response([asdict(d) for d in policies_preview(user=request.user)])

    @extend_schema(responses=DecisionSerializer(many=True),
                   operation_id="policies_preview_retrieve")
    @action(detail=True, methods=["get"], pagination_class=None)
    def preview(self, request: Request, pk: Any = None) -> Response:
        """What this policy would do now, table by table."""
        return Response([asdict(d) for d in policies_preview(user=request.user,
                                                              policy=self.get_object())])


class AlertRuleSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = AlertRule
        fields = ("id", "name", "metric", "op", "threshold", "catalog", "tables",
                  "webhook_url", "enabled", "created_at")


class AlertRuleCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The fields as sent; every check is the service's (one place)."""

    name = serializers.JSONField()
    metric = serializers.JSONField()
    op = serializers.JSONField(required=False, default=">")
    threshold = serializers.JSONField(required=False, default=0)
    catalog = serializers.JSONField(required=False, default="*")
    tables = serializers.JSONField(required=False, default="*")
    webhook_url = serializers.JSONField(required=False, default="")


@extend_schema_view(create=extend_schema(request=AlertRuleCreateSerializer,
                                         responses={201: AlertRuleSerializer}))
class AlertRuleViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, _CreateThroughService):
    """Alert rules: a threshold on a recorded health metric (or a failed policy run) for the
    tables of a catalog that match a pattern, posted to a webhook."""

    serializer_class = AlertRuleSerializer
    queryset = AlertRule.objects.all()
    create_serializer_class = AlertRuleCreateSerializer
    create_service = staticmethod(alert_rule_create)


class AlertSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    rule = serializers.CharField(source="rule.name")
    fix = serializers.SerializerMethodField(help_text="the page of the task that fixes it")

    class Meta:
        model = Alert
        fields = ("id", "rule", "catalog", "namespace", "table", "value", "message",
                  "task_run", "fired_at", "resolved_at", "delivered_at", "delivery_error",
                  "fix")

    def get_fix(self, alert: Alert) -> str:
        return fix_link(alert.rule.metric, alert.catalog, alert.namespace, alert.table)


class AlertViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):  # type: ignore[type-arg]
    """Alerts fired, newest first (``?open=true``: not resolved yet), on the tables of the
    catalogs the user may read."""

    serializer_class = AlertSerializer

    def get_queryset(self) -> Any:
        rows = Alert.objects.select_related("rule").filter(
            catalog__in=fleet_catalogs(user=self.request.user))
        if self.request.query_params.get("open") in ("true", "1"):
            rows = rows.filter(resolved_at__isnull=True)
        return rows
