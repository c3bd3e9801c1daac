"""The OpenAPI schema's answers beyond success: every error the API gives has the one shape
of :mod:`api.exceptions` (``error``, ``detail``, and ``param`` or a field's messages when there
are), documented on every operation for the statuses that mapping can give
(:data:`explorer.errors._STATUS_BY_ERROR` and DRF's own refusals)."""

from __future__ import annotations

from typing import Any

__all__ = ["ERROR_STATUSES", "error_responses"]

#: Status → what it means, for every operation (an operation's own answer for a status wins).
ERROR_STATUSES: dict[str, str] = {
    "400": "a parameter or field is wrong (``param`` or the field names it)",
    "401": "not signed in (no or a bad token) where reading needs it, or for any change",
    "403": "your role on this catalog does not allow this",
    "404": "no such catalog, namespace, table, snapshot or object",
    "406": "none of the media types in Accept can be given",
    "409": "the table changed since the dry run, or a commit conflicted",
    "413": "the request body is larger than the API accepts (``limit``, in bytes)",
    "415": "the request body's media type is not accepted",
    "422": "a metadata file cannot be read, or floe cannot do this to this table",
    "429": "too many requests (Retry-After says when to try again)",
    "503": "the catalog is unreachable, or a commit's outcome is unknown",
}

_ERROR = {
    "type": "object",
    "description": "Every error: ``error`` names it, ``detail`` says it in a sentence; a "
                   "serializer's field errors stay under their fields.",
    "properties": {
        "error": {"type": "string", "example": "NotFound"},
        "detail": {"type": "string"},
        "param": {"type": "string", "description": "the query parameter or field at fault"},
    },
    "required": ["error", "detail"],
    "additionalProperties": True,
}


def error_responses(result: dict[str, Any], generator: Any, request: Any,
                    public: bool) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = _ERROR
    answer = {"content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Error"}}}}
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in {"get", "put", "post", "delete", "patch", "head", "options"}:
                continue
            responses = operation.setdefault("responses", {})
            for status, description in ERROR_STATUSES.items():
                responses.setdefault(status, {"description": description, **answer})
    return result
