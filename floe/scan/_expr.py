"""Glue between scan planning and :mod:`floe.expressions` (filled in when it lands)."""

from __future__ import annotations

from typing import Any

from floe.errors import ValidationError


def bind_filter(schema: Any, row_filter: Any, case_sensitive: bool) -> tuple[Any, Any]:
    raise ValidationError("row filters need floe.expressions, which is not available yet")


def spec_filter(md: Any, schema: Any, spec_id: int, expression: Any, bound: Any,
                case_sensitive: bool) -> Any:
    raise ValidationError("row filters need floe.expressions, which is not available yet")


def arrow_filter(residual: Any, schema: Any, case_sensitive: bool) -> Any:
    raise ValidationError("row filters need floe.expressions, which is not available yet")
