"""The API reference page: every operation of the OpenAPI schema drf-spectacular generates,
with its parameters and response, and a form per GET operation that calls it from the page
and shows the JSON. Served by the site itself (no CDN), beside the raw schema at
``/api/schema/``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from drf_spectacular.generators import SchemaGenerator

from explorer.auth import read_access_required

_METHODS = ("get", "post", "put", "patch", "delete")


def _ref_name(schema: dict[str, Any] | None) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list of {_ref_name(schema.get('items'))}"
    return str(schema.get("type", ""))


def _operations(schema: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for path, item in schema.get("paths", {}).items():
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            responses = []
            for status, r in sorted(op.get("responses", {}).items()):
                content = r.get("content", {})
                body = next(iter(content.values()), {}).get("schema") if content else None
                responses.append({"status": status, "schema": _ref_name(body),
                                  "description": r.get("description", "")})
            out.append({
                "path": path, "method": method.upper(), "id": op.get("operationId", ""),
                "tag": (op.get("tags") or [""])[0],
                "description": op.get("description") or op.get("summary") or "",
                "parameters": [{"name": p["name"], "in": p["in"],
                                "required": bool(p.get("required")),
                                "type": _ref_name(p.get("schema")),
                                "description": p.get("description", "")}
                               for p in op.get("parameters", [])],
                "responses": responses,
            })
    return out


@require_GET
@read_access_required
def api_reference(request: HttpRequest) -> HttpResponse:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    ops = _operations(schema)
    tags: dict[str, list[dict[str, Any]]] = {}
    for op in ops:
        tags.setdefault(op["tag"], []).append(op)
    return render(request, "explorer/api_reference.html", {
        "info": schema.get("info", {}), "tags": sorted(tags.items()), "count": len(ops)})
